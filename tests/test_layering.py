"""The dependency direction srez_core <- srez_env <- srez_daemon <- srez_client (docs/design.md §3), checked on
the imports of every module: what each package may import, and that the recorder stays free of
the server; and the benchmark's ban on wall clocks and global randomness. Circles of imports, at
every level of every package, are ``tests/test_architecture.py``'s."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "srez_core": {
        "aiohttp",
        "docker",
        "urwid",
        "srez_env",
        "srez_daemon",
        "srez_client",
        "litellm",
        "watchfiles",
    },
    "srez_env": {
        "aiohttp",
        "docker",
        "urwid",
        "srez_daemon",
        "srez_client",
        "litellm",
        "watchfiles",
    },
    "srez_daemon": {"docker", "urwid", "srez_client", "litellm"},
}
"""The daemon, and the agent process within it, never import litellm (docs/design.md §13.1, thin
agents): the LLM agent speaks OpenAI-compatible HTTP to the host's model relay, which holds it."""
PACKAGES = {
    "srez_core": ROOT / "core" / "srez_core",
    "srez_env": ROOT / "env" / "srez_env",
    "srez_daemon": ROOT / "daemon" / "srez_daemon",
    "srez_client": ROOT / "client" / "srez_client",
}
CLIENT_MAY_USE_OF_THE_DAEMON = frozenset({"protocol", "record"})
"""The wire contract and the recorder: the client never imports the daemon's server."""
ONLY_UNDER = {
    "urwid": "tui",
    "docker": "backends/docker",
    "inspect_ai": "integrations/inspect",
}
"""Libraries the client imports in one folder alone (its other commands must not need them)."""


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


def test_the_wire_contract_imports_only_the_bottom_layer_of_the_project() -> None:
    # The protocol is shared by the daemon and the client: it may import itself and srez_core,
    # never the daemon it ships in.
    protocol = PACKAGES["srez_daemon"] / "protocol"
    offenders = {
        str(path.relative_to(ROOT)): sorted(found)
        for path in protocol.rglob("*.py")
        if (found := _daemon_modules_imported(path) - {"protocol"})
        or (found := _imports(path) & {"srez_env", "srez_client"})
    }
    assert offenders == {}


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


# ---------------------------------------------------------------------- the client's imports


def test_the_client_imports_only_the_protocol_and_the_recorder_of_the_daemon() -> None:
    # The daemon's server (routes, the run controller, the stream hub) stays in the daemon: the
    # client shares the wire contract and the recorder with it, nothing else.
    client = PACKAGES["srez_client"]
    offenders = {
        str(path.relative_to(ROOT)): sorted(found)
        for path in client.rglob("*.py")
        if (found := _daemon_modules_imported(path) - CLIENT_MAY_USE_OF_THE_DAEMON)
    }
    assert offenders == {}


@pytest.mark.parametrize("library", sorted(ONLY_UNDER))
def test_the_client_imports_a_heavy_library_in_its_own_folder_only(library: str) -> None:
    client = PACKAGES["srez_client"]
    home = client / ONLY_UNDER[library]
    offenders = sorted(
        str(path.relative_to(ROOT))
        for path in client.rglob("*.py")
        if library in _imports(path) and home not in path.parents
    )
    assert offenders == []


# ---------------------------------------------------------------------- the module graph


def _module_name(package: str, path: Path) -> str:
    parts = list(path.relative_to(PACKAGES[package].parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every name a module imports, at any depth (function-level imports count), but not in an
    ``if TYPE_CHECKING:`` block: ``from a.b import c`` gives ``a.b.c`` (module ``a.b.c`` if there
    is one, else whatever ``a.b`` defines)."""
    names: set[str] = set()
    here = module.split(".") if is_package else module.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            names.update(f"{source}.{alias.name}" for alias in node.names)
        visit(node)

    visit(tree)
    return names


def _module_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (the longest module a name names)."""
    paths = {_module_name(package, p): p for p in PACKAGES[package].rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = set()
        for name in _imported_names(tree, module, path.name == "__init__.py"):
            parts = name.split(".")
            while parts and ".".join(parts) not in paths:
                parts.pop()
            if parts and ".".join(parts) != module:
                targets.add(".".join(parts))
        graph[module] = targets
    return graph


def test_the_recorder_never_reaches_the_server() -> None:
    # The inline backend and the client's background tasks host the recorder: importing it must
    # not pull in aiohttp, directly or through another daemon module it imports.
    graph = _module_graph("srez_daemon")
    reached: set[str] = set()
    todo = [m for m in graph if m == "srez_daemon.record" or m.startswith("srez_daemon.record.")]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(graph[module])
    root = PACKAGES["srez_daemon"].parent
    offenders = sorted(
        module for module in reached if "aiohttp" in _imports(_module_path(root, module))
    )
    assert offenders == []
    assert "srez_daemon.record.episode" in reached


def _module_path(root: Path, module: str) -> Path:
    base = root.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
