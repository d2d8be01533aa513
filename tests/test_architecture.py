"""The layers of ``architecture.toml`` hold over the code of every package it names.

For each package that exists:

* every module belongs to exactly one layer: the layer of the longest listed path that holds it;
* every import from one layer into another is one the file allows (``may_import``, transitively);
* no two folders import each other, directly or round a circle.

What counts as an import: every ``import`` and ``from ... import`` at any depth of a module,
inside functions (a lazy import is still a dependency) and under ``if TYPE_CHECKING:`` (so is an
import for annotations only). ``from a.b import c`` imports module ``a.b.c`` if there is one, else
``a.b`` (whatever its ``__init__`` defines); imports of libraries outside the project are the
business of ``tests/test_layering.py``.

What counts as a folder, and so what may not form a circle, is decided level by level. A package
(the top one, or any subpackage within it) has as folders its subpackages, its modules and its own
``__init__``; an import from a module inside the package to another module inside it is an edge
between the two folders holding them, and is ignored when both are in one folder (that folder's
own level judges it). So ``srez_client/backends/docker`` importing ``srez_client/backends/base.py``
is an edge ``docker -> base.py`` within ``backends``, and nothing at the top of ``srez_client``;
``srez_client/backends`` importing ``srez_client/mirror`` is an edge at the top. No level may
have a circle, which also means no circle of modules.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC_FILE = ROOT / "architecture.toml"


@dataclass(frozen=True, slots=True)
class Layer:
    """One ``[[layer]]`` of the file."""

    name: str
    about: str
    folders: tuple[str, ...]
    may_import: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Import:
    """One import of a project module by another, where it is written."""

    source: str
    target: str
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} imports {self.target}"


@cache
def spec() -> tuple[tuple[str, ...], tuple[Layer, ...]]:
    data = tomllib.loads(SPEC_FILE.read_text(encoding="utf-8"))
    layers = tuple(
        Layer(
            name=entry["name"],
            about=entry["about"],
            folders=tuple(entry["folders"]),
            may_import=tuple(entry["may_import"]),
        )
        for entry in data["layer"]
    )
    return tuple(data["packages"]), layers


def existing_packages() -> list[str]:
    packages, _ = spec()
    return [p for p in packages if (ROOT / p / "__init__.py").is_file()]


@cache
def modules() -> dict[str, Path]:
    """Every module of every existing package, by dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for package in existing_packages():
        base = (ROOT / package).parent
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _names(path: Path, module: str) -> Iterator[tuple[str, int]]:
    """Each name a module imports, with its line, at any depth (functions, TYPE_CHECKING)."""
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield f"{source}.{alias.name}", node.lineno


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a project module by another (the longest module a name names)."""
    known = modules()
    found = []
    for module, path in known.items():
        for name, line in _names(path, module):
            parts = name.split(".")
            while parts and ".".join(parts) not in known:
                parts.pop()
            target = ".".join(parts)
            if parts and target != module:
                found.append(Import(module, target, path, line))
    return tuple(dict.fromkeys(found))  # ``from a import b, c`` of one module is one import


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def layers_of(path: Path) -> list[str]:
    """The layers listing the longest path that holds ``path`` (one, if the file is right)."""
    rel = _rel(path)
    _, layers = spec()
    best = max(
        (
            len(folder)
            for layer in layers
            for folder in layer.folders
            if rel == folder or rel.startswith(folder + "/")
        ),
        default=0,
    )
    return [
        layer.name
        for layer in layers
        for folder in layer.folders
        if len(folder) == best and (rel == folder or rel.startswith(folder + "/"))
    ]


def reach() -> dict[str, frozenset[str]]:
    """Per layer, the layers it may import: itself, those it names, and theirs (transitively)."""
    _, layers = spec()
    names = {layer.name: layer.may_import for layer in layers}
    out: dict[str, frozenset[str]] = {}
    for name in names:
        seen = {name}
        todo = list(names[name])
        while todo:
            other = todo.pop()
            if other not in seen:
                seen.add(other)
                todo.extend(names.get(other, ()))
        out[name] = frozenset(seen)
    return out


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _name(package: str) -> str:
    """A package's import name, from its path (``env/srez_env`` -> ``srez_env``)."""
    return Path(package).name


def _folder(module: str, level: str) -> str:
    """The folder of package ``level`` holding ``module``: a subpackage, a module or its own
    ``__init__.py``."""
    if module == level:
        return "__init__.py"
    child = module.split(".")[level.count(".") + 1]
    is_package = modules().get(f"{level}.{child}", Path()).name == "__init__.py"
    return child if is_package else f"{child}.py"


def folder_graphs(package: str) -> dict[str, dict[str, dict[str, list[Import]]]]:
    """Per package level (the package and each subpackage), its folders' import graph: folder ->
    folder -> the imports behind the edge (see the module docstring for the rule)."""
    top = _name(package)
    levels = sorted(
        m for m, p in modules().items() if _in_package(m, top) and p.name == "__init__.py"
    )
    graphs: dict[str, dict[str, dict[str, list[Import]]]] = {}
    for level in levels:
        graph: dict[str, dict[str, list[Import]]] = {}
        for imp in imports():
            if _in_package(imp.source, level) and _in_package(imp.target, level):
                a, b = _folder(imp.source, level), _folder(imp.target, level)
                if a != b:
                    graph.setdefault(a, {}).setdefault(b, []).append(imp)
        graphs[level] = graph
    return graphs


def cycles(graph: dict[str, dict[str, list[Import]]]) -> list[list[str]]:
    """The strongly connected components of more than one folder (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, {})):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def _case(package: str) -> object:
    return pytest.param(package, id=_name(package))


# ---------------------------------------------------------------------------- the file itself


def test_the_file_names_layers_once_and_imports_only_layers_below() -> None:
    packages, layers = spec()
    names = [layer.name for layer in layers]
    assert len(set(names)) == len(names), "a layer name is used twice"
    assert all(layer.about for layer in layers)
    unknown = {
        layer.name: sorted(set(layer.may_import) - set(names))
        for layer in layers
        if set(layer.may_import) - set(names)
    }
    assert unknown == {}, "may_import names a layer the file does not define"
    # listed bottom up: a layer imports only layers listed before it, so the layers form no circle
    upward = {
        layer.name: [n for n in layer.may_import if names.index(n) >= i]
        for i, layer in enumerate(layers)
        if any(names.index(n) >= i for n in layer.may_import)
    }
    assert upward == {}, "a layer may import a layer listed after it (or itself)"
    folders = [folder for layer in layers for folder in layer.folders]
    twice = sorted({f for f in folders if folders.count(f) > 1})
    assert twice == [], "a path is listed twice"
    outside = [f for f in folders if not any(f == p or f.startswith(p + "/") for p in packages)]
    assert outside == [], "a path is outside every package the file names"


def test_the_backends_stay_below_what_is_done_with_their_runs() -> None:
    # a backend executes runs; mirroring them, filing their results, relaying their models and
    # keeping the registry of runs (the lifecycle) are done above it, so no relaxing of the file may let it reach
    # those layers
    assert reach()["client.backends"].isdisjoint(
        {"client.mirror", "client.results", "client.relay", "client.lifecycle"}
    )
    assert "env.grade" not in reach()["env.simulation"]


def test_the_project_packages_exist() -> None:
    assert {"env/srez_env", "daemon/srez_daemon", "client/srez_client"} <= set(existing_packages())


# ---------------------------------------------------------------------------- each package


@pytest.mark.parametrize("package", existing_packages(), ids=_name)
def test_every_module_belongs_to_exactly_one_layer(package: str) -> None:
    offenders = {
        _rel(path): found
        for module, path in modules().items()
        if _in_package(module, _name(package)) and len(found := layers_of(path)) != 1
    }
    assert offenders == {}, "modules in no layer ([]) or in several:\n" + "\n".join(
        f"  {path}: {found}" for path, found in sorted(offenders.items())
    )


@pytest.mark.parametrize("package", [_case(p) for p in existing_packages()])
def test_every_import_between_layers_is_one_the_file_allows(package: str) -> None:
    allowed = reach()
    paths = modules()
    offenders: dict[tuple[str, str], list[str]] = {}
    for imp in imports():
        if not _in_package(imp.source, _name(package)):
            continue
        # a module in no layer, or in several, is the business of the test above
        source = (layers_of(paths[imp.source]) or ["?"])[0]
        target = (layers_of(paths[imp.target]) or ["?"])[0]
        if target not in allowed.get(source, frozenset({source})):
            offenders.setdefault((source, target), []).append(imp.where())
    assert offenders == {}, "imports the layers do not allow:\n" + "\n".join(
        f"  {source} -> {target}:\n" + "\n".join(f"    {w}" for w in sorted(where))
        for (source, target), where in sorted(offenders.items())
    )


def circles_report(graphs: dict[str, dict[str, dict[str, list[Import]]]]) -> list[str]:
    """Each circle of folders of each level, with up to three imports behind each of its edges."""
    report = []
    for level, graph in graphs.items():
        for circle in cycles(graph):
            report.append(f"  in {level}: {' <-> '.join(circle)}")
            for a in circle:
                for b in circle:
                    for imp in sorted(graph.get(a, {}).get(b, []), key=Import.where)[:3]:
                        report.append(f"    {a} -> {b}: {imp.where()}")
    return report


@pytest.mark.parametrize("package", [_case(p) for p in existing_packages()])
def test_no_folder_imports_itself_round_a_circle(package: str) -> None:
    report = circles_report(folder_graphs(package))
    assert report == [], "folders in an import circle:\n" + "\n".join(report)


# ---------------------------------------------------------------------------- the checks


def test_the_checks_see_an_import_a_layer_may_not_make() -> None:
    # the simulation importing the grade would be an upward import and a circle of folders
    sim, grade = modules()["srez_env.sim.engine"], modules()["srez_env.grade.reward"]
    upward = Import("srez_env.sim.engine", "srez_env.grade.reward", sim, 1)
    (source,), (target,) = layers_of(sim), layers_of(grade)
    assert (source, target) == ("env.simulation", "env.grade")
    assert target not in reach()[source]
    assert "env.simulation" in reach()["env.grade"]
    graph = {"sim": {"grade": [upward]}, "grade": {"sim": [upward]}}
    assert cycles(graph) == [["grade", "sim"]]


def test_the_checks_see_a_function_level_and_a_type_checking_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from srez_env.grade import Grade\n"
        "def f() -> None:\n    from . import sibling\n",
        encoding="utf-8",
    )
    assert sorted(_names(module, "srez_env.sim.m")) == [
        ("srez_env.grade.Grade", 3),
        ("srez_env.sim.sibling", 5),
        ("typing.TYPE_CHECKING", 1),
    ]


@pytest.mark.parametrize("backend", ["docker", "local"])
def test_a_backend_module_imports_at_most_twelve_modules_of_the_project(backend: str) -> None:
    # a backend runs runs: what it needs of the project is its interface, its transfer and a
    # few helpers; more is the sign of a backend doing the host's work again
    path = ROOT / "client" / "srez_client" / "backends" / backend / "backend.py"
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    project = sorted(m for m in imported if m.split(".")[0].startswith("srez_"))
    assert len(project) <= 12, project
