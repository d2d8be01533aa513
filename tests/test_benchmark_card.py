"""The benchmark card stays honest: every figure it quotes is what a fresh evaluation gives
(``make card`` rewrites them), every test it cites exists, every command it cites runs, and the
ABC self-audit leaves no item unaddressed."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from bench import card, card_scale

ROOT = Path(__file__).resolve().parent.parent
TEXT = card.CARD.read_text()
CITED = re.compile(r"`((?:pytest|srez|make) [^`]+)`")
STATUSES = {"met", "not met", "n.a."}
ROW = re.compile(
    r"^\| (?P<item>[TOR]\.[0-9a-z.]+) [^|]+\| (?P<status>[^|]+) \| (?P<why>[^|]+) \| (?P<evidence>[^|]+) \|$"
)


def audit_rows() -> list[re.Match[str]]:
    audit = TEXT[TEXT.index("## ABC self-audit") :]
    return [m for line in audit.splitlines() if (m := ROW.match(line))]


def cited(prefix: str) -> list[str]:
    """The tests and commands the audit cites as evidence (prose may name a command without
    citing it)."""
    evidence = " ".join(r["evidence"] for r in audit_rows())
    return sorted({c for c in CITED.findall(evidence) if c.startswith(prefix + " ")})


def test_the_figures_are_what_a_fresh_evaluation_gives() -> None:
    values = card.figures(at_scale=False)
    rewritten, changed, unknown = card.rewrite(TEXT, values)
    assert unknown == list(card.SLOW_FIGURES), f"markers of no figure: {unknown}"
    cited = card.cited_figures(TEXT)
    assert {*values, *card.SLOW_FIGURES} == cited, "a figure make card computes is not in the card"
    assert changed == [], f"stale figures (run make card): {changed}"
    assert rewritten == TEXT
    # the floors the card quotes are floors: no trivial agent passes a fault task
    for name in ("floors-canonical", "floors-generated"):
        assert values[name].count("passes 0 of") == len(card.FLOORS), values[name]


@pytest.mark.slow
def test_the_learners_at_scale_are_what_a_fresh_evaluation_gives() -> None:
    """The learners fit on ten generated sets (bench.card_scale, about a minute and a half)."""
    values = {"learners-at-scale": card_scale.figure()}
    _, changed, _ = card.rewrite(TEXT, values)
    assert changed == [], "stale figure learners-at-scale (run make card)"
    assert "diagnostician" in values["learners-at-scale"]


def test_rewrite_replaces_a_stale_figure_and_names_it() -> None:
    text = "a\n<!-- figure x -->\nold\n<!-- /figure -->\nb <!-- figure y -->\n1\n<!-- /figure -->"
    new, changed, unknown = card.rewrite(text, {"x": "new"})
    assert changed == ["x"] and unknown == ["y"]
    assert new.startswith("a\n<!-- figure x -->\nnew\n<!-- /figure -->\nb")


def test_the_audit_leaves_no_item_unaddressed() -> None:
    rows = audit_rows()
    items = [r["item"] for r in rows]
    assert len(items) == len(set(items)), "an item is listed twice"
    for n in range(1, 11):
        assert f"T.{n}" in items
    for n in range(1, 14):
        assert f"R.{n}" in items
    assert {i.split(".")[1][0] for i in items if i.startswith("O.")} >= set("abcdefgh")
    for row in rows:
        assert row["status"].strip() in STATUSES, row.group(0)
        assert len(row["why"].strip()) > 20, f"{row['item']} gives no reason"
        assert CITED.search(row["evidence"]), f"{row['item']} cites no test or command"
    statuses = {r["status"].strip() for r in rows}
    assert statuses == STATUSES  # an audit that meets everything would be suspicious here


def test_every_cited_test_exists() -> None:
    ids = [c.removeprefix("pytest ") for c in cited("pytest")]
    assert len(ids) > 30
    found = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *ids],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    collected = {line.split("[", 1)[0] for line in found.stdout.split()}  # a parametrized test
    missing = [i for i in ids if i not in collected]
    assert missing == [], f"cited tests that do not exist: {missing}\n{found.stderr[-2000:]}"


@pytest.mark.parametrize("command", cited("srez") + cited("make"))
def test_every_cited_command_runs(command: str, tmp_path: Path) -> None:
    argv = shlex.split(command.replace("GENERATED_DIR", str(tmp_path / "generated")))
    if argv[0] == "make":  # the whole target is a long run of its own: it must exist and parse
        argv = ["make", "-n", *argv[1:]]
    else:
        argv[0] = str(Path(sys.executable).parent / "srez")
        if argv[1] == "eval":
            argv += ["--results", str(tmp_path / "results")]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
    assert done.stdout.strip()
