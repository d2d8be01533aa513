"""docs/cli.md is what the parser says: the committed page equals a fresh generation."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11),
    reason="argparse's help layout changes between Python versions; the page is made on 3.11",
)
def test_the_committed_cli_reference_equals_a_regeneration() -> None:
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == _generator().render(), "docs/cli.md is stale: run make cli-docs"


def test_the_reference_has_a_section_per_command() -> None:
    from srez_client.cli.main import build_parser

    gen = _generator()
    text = gen.render()
    commands = [" ".join(path) for path, _ in gen._walk(build_parser(), ("srez",))]
    assert len(commands) > 30
    for command in commands:
        assert f"`{command}`\n\n```text\nusage: {command} " in text, command
    for command in ("srez eval", "srez runs stop", "srez managed create", "srez mcp"):
        assert command in commands


def test_the_check_mode_reports_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen = _generator()
    page = tmp_path / "cli.md"
    monkeypatch.setattr(gen, "PAGE", page)
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    page.write_text(page.read_text() + "edited by hand\n")
    assert gen.main(["--check"]) == 1
