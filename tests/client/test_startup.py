"""``srez`` answers at once: the commands that only print import none of the machinery, the
parser names its commands by import path (each one resolves), and what the parser spells out to
stay light agrees with the modules it stands for."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from srez_client.backends.registry import ENTRIES
from srez_client.cli.main import build_parser
from srez_client.cli.parser import BASELINE_NAMES, STATUS_FILTERS, LazyCommand

HEAVY = ("aiohttp", "docker", "litellm", "numpy", "matplotlib", "urwid", "ray", "pydantic")
"""Top-level packages none of the printing commands may import (pydantic included: the packaged
tasks are listed without their models)."""

FAST_COMMANDS = (["--version"], ["--help"], ["tasks", "list"], ["tasks", "show", "sre-007"])


def _modules_after(argv: list[str]) -> list[str]:
    """The modules a fresh interpreter holds after ``srez ARGV`` (stdout discarded)."""
    code = (
        "import contextlib, io, json, sys\n"
        "from srez_client.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        status = main({argv!r})\n"
        "    except SystemExit as e:\n"
        "        status = e.code\n"
        "print(json.dumps({'status': status, 'modules': sorted(sys.modules)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    answer = json.loads(done.stdout)
    assert answer["status"] in (0, None), done.stderr
    modules: list[str] = answer["modules"]
    return modules


@pytest.mark.parametrize("argv", FAST_COMMANDS, ids=" ".join)
def test_printing_commands_import_none_of_the_machinery(argv: list[str]) -> None:
    modules = _modules_after(argv)
    assert "srez_client.cli.main" in modules
    heavy = sorted({m.split(".")[0] for m in modules} & set(HEAVY))
    assert heavy == []
    # no backend, no recorder, no wire model
    assert [m for m in modules if m.startswith("srez_client.backends.")] == [
        "srez_client.backends.registry"
    ]
    assert not [m for m in modules if m.startswith("srez_daemon.record") or m == "srez_env.task"]


def _commands(parser: argparse.ArgumentParser, path: str = "srez") -> Iterator[tuple[str, object]]:
    func = parser.get_default("func")
    if func is not None:
        yield path, func
    for action in parser._actions:  # argparse has no public walk over its subparsers
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, f"{path} {name}")


def test_every_command_is_named_by_import_path_and_resolves() -> None:
    found = dict(_commands(build_parser()))
    assert len(found) >= 35
    for path, func in found.items():
        assert isinstance(func, LazyCommand), path
        module, _, name = func.location.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), path


def test_what_the_parser_spells_out_agrees_with_its_sources() -> None:
    from srez_client.managed.models import BASELINES
    from srez_client.results.finder import STATUS_FILTERS as FINDER_FILTERS

    assert STATUS_FILTERS == FINDER_FILTERS
    assert set(BASELINE_NAMES) == set(BASELINES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_registry_options_and_traits_are_those_of_the_config_and_class(entry: object) -> None:
    from srez_client.backends.registry import BackendEntry

    assert isinstance(entry, BackendEntry)
    config = entry.config
    assert config.model_fields["kind"].default == entry.name
    declared = {(flag, setting, config.ENV[setting]) for setting, flag in config.OPTIONS.items()}
    assert {(o.flag, o.setting, o.variable) for o in entry.options} == declared
    assert entry.writes_results == entry.load().writes_results
