"""The documentation site builds with ``mkdocs build --strict``, offline, into a folder of its own.

Strict mode turns every warning into a failure: a page missing from the nav, a link to a page or
anchor that does not exist. The build must not need the network (the theme's web fonts are off
and only offline plugins are on), and the process diagram must come out as a Mermaid block.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_mkdocs_build_strict_passes_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = _build(site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "index.html").is_file()
    design = (site / "design" / "index.html").read_text(encoding="utf-8")
    assert '<pre class="mermaid">' in design
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in text, page


def test_every_page_is_in_the_nav() -> None:
    """A newcomer reaches every page from the nav (strict mode reports an omitted one too, but
    this names it without a build)."""
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)

    def pages(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [p for item in node for p in pages(item)]
        if isinstance(node, dict):
            return [p for value in node.values() for p in pages(value)]
        return []

    listed = set(pages(config["nav"]))
    present = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert present == listed, (present - listed, listed - present)
    assert config["theme"]["font"] == "false"
