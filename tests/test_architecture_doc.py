"""docs/architecture.md stays true: every file, folder and test it names exists."""

from __future__ import annotations

import re
from pathlib import Path

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
