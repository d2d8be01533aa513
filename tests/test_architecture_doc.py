"""docs/architecture.md stays true: every file, folder and test it names exists, and its layers
section is the drawing of architecture.toml."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
TOP = ("env/", "daemon/", "client/", "tests/", "bench/", "images/", "docs/")


def _cited() -> list[str]:
    spans = re.findall(r"`([^`\s]+)`", DOC.read_text(encoding="utf-8"))
    return [s for s in spans if s.startswith(TOP)]


def test_the_doc_cites_paths() -> None:
    assert len(_cited()) >= 15


def test_every_cited_path_and_test_exists() -> None:
    missing = []
    for cited in _cited():
        path, _, test = cited.partition("::")
        path = (
            path.replace("<name>", "inline").replace("<group>", "runs").replace("<area>", "daemon")
        )
        target = ROOT / path
        if (
            not target.exists()
            or test
            and not re.search(rf"\bdef {re.escape(test)}\(", target.read_text())
        ):
            missing.append(cited)
    assert missing == []


def _generator() -> ModuleType:
    path = ROOT / "docs" / "gen_architecture.py"
    spec = importlib.util.spec_from_file_location("gen_architecture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layers_section_is_the_drawing_of_architecture_toml() -> None:
    committed = DOC.read_text(encoding="utf-8")
    assert committed == _generator().render(), (
        "docs/architecture.md is stale: make architecture-docs"
    )


def test_the_drawing_has_every_layer_and_every_allowed_import() -> None:
    spec = tomllib.loads((ROOT / "architecture.toml").read_text(encoding="utf-8"))
    block = _generator().render_block(spec)
    for layer in spec["layer"]:
        node = layer["name"].replace(".", "_")
        assert f"| `{layer['name']}` |" in block
        for target in layer["may_import"]:
            assert f"    {node} --> {target.replace('.', '_')}\n" in block


def test_the_check_mode_reports_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen = _generator()
    page = tmp_path / "architecture.md"
    page.write_text(f"# A page\n\n{gen.BEGIN}\n{gen.END}\n\nThe rest.\n", encoding="utf-8")
    monkeypatch.setattr(gen, "PAGE", page)
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    assert page.read_text(encoding="utf-8").endswith(f"{gen.END}\n\nThe rest.\n")
    page.write_text(page.read_text(encoding="utf-8").replace("env.base", "env.bottom", 1))
    assert gen.main(["--check"]) == 1
