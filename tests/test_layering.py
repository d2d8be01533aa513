"""The dependency direction srez_env <- srez_daemon <- srez_client (DESIGN §3), checked on the
imports of every module, and the benchmark's ban on wall clocks and global randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "srez_env": {
        "aiohttp",
        "docker",
        "urwid",
        "srez_daemon",
        "srez_client",
        "litellm",
        "watchfiles",
    },
    "srez_daemon": {"docker", "urwid", "srez_client"},
}
PACKAGES = {"srez_env": ROOT / "env" / "srez_env", "srez_daemon": ROOT / "daemon" / "srez_daemon"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_what_its_layer_allows(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & FORBIDDEN[package])
        for path in PACKAGES[package].rglob("*.py")
        if _imports(path) & FORBIDDEN[package]
    }
    assert offenders == {}


BANNED_CALLS = {
    ("time", "time"),
    ("time", "monotonic"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
}


def _banned_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "hash":
            found.append("hash()")  # randomised per process
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and ((func.value.id, func.attr) in BANNED_CALLS or func.value.id == "random")
        ):
            found.append(f"{func.value.id}.{func.attr}()")
    return found


def test_simulation_never_reads_the_wall_clock_or_global_random() -> None:
    offenders = {}
    for folder in ("sim", "telemetry", "world"):
        for path in (PACKAGES["srez_env"] / folder).rglob("*.py"):
            if calls := _banned_calls(path):
                offenders[path.name] = calls
    assert offenders == {}


def _daemon_modules_imported(path: Path) -> set[str]:
    """The ``srez_daemon`` submodules a file imports (``srez_daemon.protocol.api`` -> protocol)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "srez_daemon" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_the_agent_process_imports_only_the_protocol_from_the_daemon() -> None:
    # The agent runs in its sandbox with the daemon's code visible: what it imports of the daemon
    # is the wire contract alone, never the episode, the recorder or the run's controller.
    agent = ROOT / "daemon" / "srez_daemon" / "agent"
    offenders = {
        str(path.relative_to(ROOT)): sorted(_daemon_modules_imported(path) - {"protocol", "agent"})
        for path in agent.rglob("*.py")
        if _daemon_modules_imported(path) - {"protocol", "agent"}
    }
    assert offenders == {}
