"""The backend registry: one entry per backend folder, lazy imports, configs that refuse bad input
in one clear line, and command-line code that never asks which backend it holds."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from backend_contract import CASES

from srez_client.backends.base import Backend
from srez_client.backends.config import BackendSettings
from srez_client.backends.docker.config import DockerConfig
from srez_client.backends.registry import (
    BACKEND_NAMES,
    DEFAULT_BACKEND,
    ENTRIES,
    BackendEntry,
    backend_class,
    config_for,
    make_backend,
    parse_config,
)
from srez_client.errors import UsageError

CLIENT = Path(__file__).resolve().parents[2] / "client" / "srez_client"
BACKENDS = CLIENT / "backends"
COMMAND_SOURCES = [
    *sorted((CLIENT / "cli").glob("*.py")),
    CLIENT / "evaluation.py",
    *sorted((CLIENT / "lifecycle").glob("*.py")),
]
"""The command line, the flows it drives and the host lifecycle that composes a backend with the
rest: no branch on a backend's name in them."""
CONCRETE_CLASSES = {entry.location.partition(":")[2] for entry in ENTRIES}


# ---------------------------------------------------------------------- the entries


def test_registry_lists_exactly_the_backends_with_folders() -> None:
    folders = {p.name for p in BACKENDS.iterdir() if (p / "__init__.py").is_file()}
    assert set(BACKEND_NAMES) == folders
    assert len(BACKEND_NAMES) == len(ENTRIES)
    assert DEFAULT_BACKEND in BACKEND_NAMES


def test_every_backend_has_a_case_of_the_conformance_suite() -> None:
    assert [case.name for case in CASES] == list(BACKEND_NAMES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_entry_names_its_config_and_class_in_its_own_folder(
    entry: BackendEntry, tmp_path: Path
) -> None:
    module = entry.location.partition(":")[0]
    assert module.startswith(f"srez_client.backends.{entry.name}.")
    assert entry.config.__module__ == f"srez_client.backends.{entry.name}.config"
    cls = entry.load()
    assert cls.name == entry.name
    backend = make_backend(config_for(entry.name, BackendSettings(tmp_path)))
    try:
        assert type(backend) is cls
    finally:
        backend.close()


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_capability_flags_agree_with_the_methods_a_backend_overrides(name: str) -> None:
    cls = backend_class(name)
    overrides = {
        method
        for method in (
            "stops",
            "copy_out_read_only",
            "host_address",
            "relayed_dialog",
            "from_config",
        )
        if getattr(cls, method) is not getattr(Backend, method)
    }
    assert "from_config" in overrides
    assert cls.follows_stops == ("stops" in overrides)
    assert cls.copies_unowned == ("copy_out_read_only" in overrides)
    assert cls.reaches_host == ("host_address" in overrides)
    assert cls.relays_dialog == ("relayed_dialog" in overrides)


def test_the_backend_interface_is_the_lifecycle_alone() -> None:
    # the mirror, recovery of stranded runs, regrade and the model relay are the host's
    # (srez_client.lifecycle): the interface carries no hook of theirs
    names = {n for n in vars(Backend) if not n.startswith("_")}
    assert not {n for n in names if "mirror" in n or "recover" in n or "watch" in n}
    assert "relay" not in names and "models" not in names


def test_importing_the_registry_loads_no_backend_module() -> None:
    code = (
        "import sys, srez_client.backends.registry as r\n"
        "heavy = [m for m in sys.modules if m in ('docker', 'ray') or m.startswith(('docker.', 'ray.'))\n"
        "         or m.startswith('srez_client.relay')\n"
        "         or (m.startswith('srez_client.backends.') and m.rsplit('.', 1)[-1]\n"
        "             not in ('config', 'base', 'registry', 'state', 'docker', 'local', 'inline', 'ray')\n"
        "             and not m.startswith('srez_client.backends.inline'))]\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""


def test_a_backend_is_made_from_its_own_config_only(tmp_path: Path) -> None:
    local = backend_class("local")
    with pytest.raises(TypeError, match="DockerConfig is not a LocalConfig"):
        local.from_config(config_for("docker", BackendSettings(tmp_path)))


# ---------------------------------------------------------------------- the configs


def test_configs_read_their_own_variables(tmp_path: Path) -> None:
    variables = {
        "SREZ_SANDBOX": "none",
        "SREZ_DOCKER_IMAGE": "registry.example/srez-run:1.2",
        "SREZ_DOCKER_LABELS": "team=sre, ci = yes,junk,",
    }
    settings = BackendSettings(tmp_path, any_owner=True, variables=variables)
    local = config_for("local", settings)
    docker = config_for("docker", settings)
    assert local.model_dump(include={"kind", "sandbox", "any_owner"}) == {
        "kind": "local",
        "sandbox": "none",
        "any_owner": True,
    }
    assert docker.model_dump(include={"image", "extra_labels"}) == {
        "image": "registry.example/srez-run:1.2",
        "extra_labels": {"team": "sre", "ci": "yes"},
    }
    assert config_for("inline", settings).state_dir == tmp_path
    blank = config_for("local", BackendSettings(tmp_path, variables={"SREZ_SANDBOX": "  "}))
    assert blank.model_dump(include={"sandbox"}) == {"sandbox": "auto"}


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_config_refuses_an_unknown_setting_naming_the_known_ones(name: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as refused:
        parse_config({"kind": name, "state_dir": tmp_path, "colour": "blue"})
    message = str(refused.value)
    assert "\n" not in message
    assert f"the {name} backend has no setting 'colour'" in message
    assert "state_dir" in message and "any_owner" in message


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_config_needs_a_state_folder(name: str) -> None:
    with pytest.raises(UsageError, match=f"^{name} backend setting state_dir is required$"):
        parse_config({"kind": name})


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        (
            {"SREZ_SANDBOX": "yes"},
            "SREZ_SANDBOX='yes' must be one of 'auto', 'bubblewrap' or 'none'",
        ),
        (
            {"SREZ_DOCKER_IMAGE": "srez run"},
            "SREZ_DOCKER_IMAGE: 'srez run' is not an image reference (name[:tag][@digest]",
        ),
    ],
)
def test_a_bad_variable_is_one_line_naming_it_and_what_is_allowed(
    variables: dict[str, str], expected: str, tmp_path: Path
) -> None:
    name = "local" if "SREZ_SANDBOX" in variables else "docker"
    with pytest.raises(UsageError) as refused:
        config_for(name, BackendSettings(tmp_path, variables=variables))
    assert str(refused.value).startswith(expected)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"kind": "local", "sandbox": "bwrap"},
            "local backend setting sandbox='bwrap' must be one",
        ),
        (
            {"kind": "local", "ready_timeout_s": 0},
            "ready_timeout_s=0: input should be greater than 0",
        ),
        ({"kind": "local", "daemon_argv": []}, "daemon_argv=[]: tuple should have at least 1 item"),
        ({"kind": "docker", "pids_limit": -1}, "pids_limit=-1: input should be greater than 0"),
        ({"kind": "docker", "mem_limit": "lots"}, "mem_limit: 'lots' is not a memory size"),
        ({"kind": "docker", "stop_grace_s": -1}, "stop_grace_s=-1: input should be greater than"),
        ({"kind": "inline", "any_owner": "maybe"}, "any_owner='maybe': input should be a valid"),
        ({"kind": "docker", "image": "x", "nope": 1}, "the docker backend has no setting 'nope'"),
        ({"kind": "ray", "ray_address": "a b"}, "ray_address: 'a b' is not a Ray address"),
        ({"kind": "ray", "max_retries": -1}, "max_retries=-1: input should be greater than"),
    ],
)
def test_a_bad_value_is_refused_saying_what_is_allowed(
    values: dict[str, object], expected: str, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="backend") as refused:
        parse_config({"state_dir": tmp_path, **values})
    assert expected in str(refused.value)


def test_a_config_without_a_known_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs a kind, one of inline, local, docker, ray"):
        parse_config({"state_dir": tmp_path})
    with pytest.raises(UsageError, match="backend 'kubernetes' is not available"):
        parse_config({"kind": "kubernetes", "state_dir": tmp_path})
    with pytest.raises(UsageError, match="kind='local' must be one of 'docker'"):
        DockerConfig.parse({"kind": "local", "state_dir": tmp_path})


# ---------------------------------------------------------------------- the command line


def backend_specific(source: str, filename: str = "<source>") -> list[str]:
    """Where ``source`` compares with a backend's name or imports a concrete backend."""
    names = set(BACKEND_NAMES)
    found = []

    def named(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(named(item) for item in node.elts)
        return False

    for node in ast.walk(ast.parse(source, filename=filename)):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare) and any(map(named, [node.left, *node.comparators])):
            found.append(f"{where}: compares with a backend name")
        elif isinstance(node, ast.MatchValue) and named(node.value):
            found.append(f"{where}: matches a backend name")
        elif isinstance(node, ast.ImportFrom | ast.Import):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [alias.name for alias in node.names]
            for module in modules:
                if any(module.startswith(f"srez_client.backends.{n}") for n in names):
                    found.append(f"{where}: imports {module}")
            if any(alias.name in CONCRETE_CLASSES for alias in node.names):
                found.append(f"{where}: imports a concrete backend class")
        elif isinstance(node, ast.Name) and node.id in CONCRETE_CLASSES:
            found.append(f"{where}: names {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in CONCRETE_CLASSES:
            found.append(f"{where}: names {node.attr}")
    return found


def test_the_check_finds_the_branches_it_forbids() -> None:
    samples = [
        'if backend.name == "docker":\n    pass',
        'if args.backend != "inline":\n    pass',
        'ok = name in ("local", "docker")',
        'match name:\n    case "local":\n        pass',
        "from srez_client.backends.docker.engine import bridge_network",
        "from srez_client.backends.local.backend import LocalBackend",
        "assert isinstance(backend, DockerBackend)",
    ]
    for sample in samples:
        assert backend_specific(sample), sample
    assert backend_specific('if backend.writes_results:\n    x = "local runs"') == []


@pytest.mark.parametrize("path", COMMAND_SOURCES, ids=lambda p: p.name)
def test_the_command_line_has_no_backend_specific_branch(path: Path) -> None:
    assert backend_specific(path.read_text(), str(path.relative_to(CLIENT))) == []


# ---------------------------------------------------------------------- what a backend imports

HOST_SIDE = ("mirror", "results", "relay", "lifecycle", "agent_command")
"""What composes a backend with the rest of the host: a backend imports none of it."""


def _client_imports(path: Path) -> set[str]:
    """The ``srez_client`` modules a file imports, at any depth (function-level imports count)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name.startswith("srez_client.")}


def test_a_backend_imports_nothing_of_the_host_that_composes_it() -> None:
    offenders = {
        str(path.relative_to(CLIENT)): sorted(found)
        for path in BACKENDS.rglob("*.py")
        if (found := {m for m in _client_imports(path) if m.split(".")[1] in HOST_SIDE})
    }
    assert offenders == {}
