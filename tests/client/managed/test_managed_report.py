"""What a managed run shows its user: ``summary.png`` (title, values, zero bars, kind colours),
the line of a runner with nothing to run, and the table ``managed run`` ends with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from managed_kit import baseline_queue

from srez_client.cli import main
from srez_client.managed.render import KIND_COLOURS, chart, draw_png
from srez_client.managed.summary import CombinedSummary, DifficultyScore, TargetSummary
from srez_env.generator.worlds import GENERATOR
from srez_env.grade import GRADE_SCHEMA_VERSION
from srez_env.provenance import packaged_set_digest


def _target(
    name: str,
    *,
    baseline: bool,
    reward: float | None,
    easy: float | None,
    spread: float | None = None,
) -> TargetSummary:
    done = 0 if reward is None else 2
    reward_ci = None if reward is None or spread is None else (reward - spread, reward + spread)
    easy_ci = None if easy is None or spread is None else (max(0.0, easy - spread), easy)
    return TargetSummary(
        target=name,
        agent=name if baseline else "llm",
        model="none" if baseline else "openai/gpt-5-mini",
        baseline=baseline,
        state="done" if done else "pending",
        tasks_total=2,
        completed=done,
        remaining=2 - done,
        interrupted=0,
        provider_errors=0,
        provider_error_attempts=0,
        agent_errors=0,
        harness_errors=0,
        attempts=done,
        mean_reward=reward,
        reward_stderr=0.1 if done else None,
        resolved_rate=easy,
        passed_rate=easy,
        reward_ci=reward_ci,
        resolved_ci=easy_ci,
        passed_ci=easy_ci,
        resolved_by_difficulty={}
        if easy is None
        else {
            "easy": DifficultyScore(completed=2, resolved=round(2 * easy), rate=easy, ci=easy_ci)
        },
        cost_usd=0.0,
    )


SUMMARY = CombinedSummary(
    name="nightly-7",
    backend="local",
    tasks=2,
    targets=[
        _target("scripted", baseline=True, reward=1.0, easy=1.0, spread=0.0),
        _target("random", baseline=True, reward=0.0, easy=0.0, spread=0.0),
        _target("llm-openai__gpt-5-mini", baseline=False, reward=0.55, easy=0.5, spread=0.25),
        _target("llm-x__y", baseline=False, reward=None, easy=None),
    ],
    difficulties=["easy"],
)


def _hex(rgba: tuple[float, ...]) -> str:
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgba[:3])


def test_summary_png_has_title_values_visible_zero_bars_and_kind_colours() -> None:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig = chart(SUMMARY)
    try:
        assert "nightly-7" in fig._suptitle.get_text()
        left, right = fig.axes
        for ax in (left, right):
            bars = [p for p in ax.patches if isinstance(p, Rectangle)][: len(SUMMARY.targets)]
            colours = [_hex(b.get_facecolor()) for b in bars]
            assert colours == [KIND_COLOURS["baseline"]] * 2 + [KIND_COLOURS["model"]] * 2
            assert bars[1].get_height() > 0, "random's zero bar must be visible"
            assert bars[3].get_height() == 0, "a target with nothing completed has no bar"
            labels = [t.get_text() for t in ax.texts]
            assert labels == ["1.00", "0.00", "0.55" if ax is left else "0.50", "n/a"]
        legend = [t.get_text() for t in left.get_legend().get_texts()]
        assert legend == ["baseline", "model"]
    finally:
        plt.close(fig)
    assert draw_png(SUMMARY)[:8] == b"\x89PNG\r\n\x1a\n"


def _error_spans(ax: object) -> list[tuple[float, float, float]]:
    """(x, low, high) of each error bar on ``ax``."""
    from matplotlib.container import ErrorbarContainer

    (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]  # type: ignore[attr-defined]
    (lines,) = bars.lines[2]
    return [(float(seg[0][0]), float(seg[0][1]), float(seg[1][1])) for seg in lines.get_segments()]


def test_summary_png_draws_each_interval_as_an_error_bar() -> None:
    import matplotlib.pyplot as plt

    fig = chart(SUMMARY)
    try:
        left, right = fig.axes
        # The three targets that completed tasks; none for the one that completed nothing.
        assert [(x, round(lo, 6), round(hi, 6)) for x, lo, hi in _error_spans(left)] == [
            (0.0, 1.0, 1.0),
            (1.0, 0.0, 0.0),
            (2.0, 0.3, 0.8),
        ]
        assert [(round(lo, 6), round(hi, 6)) for _, lo, hi in _error_spans(right)] == [
            (1.0, 1.0),
            (0.0, 0.0),
            (0.25, 0.5),
        ]
        label = next(t for t in left.texts if t.get_text() == "0.55")
        assert label.get_position()[1] > 0.8, "the value sits above its interval"
        assert left.get_ylabel() == "mean reward (95% CI)"
    finally:
        plt.close(fig)
    bare = SUMMARY.model_copy(
        update={
            "targets": [
                t.model_copy(
                    update={
                        "reward_ci": None,
                        "resolved_by_difficulty": {
                            d: v.model_copy(update={"ci": None})
                            for d, v in t.resolved_by_difficulty.items()
                        },
                    }
                )
                for t in SUMMARY.targets
            ]
        }
    )
    from matplotlib.container import BarContainer, ErrorbarContainer

    fig = chart(bare)
    try:
        kinds = {type(c) for ax in fig.axes for c in ax.containers}
        assert kinds == {BarContainer}, "no interval, no error bar (ErrorbarContainer)"
        assert ErrorbarContainer not in kinds
    finally:
        plt.close(fig)
    assert draw_png(bare) != draw_png(SUMMARY)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    monkeypatch.delenv("SREZ_TODAY", raising=False)
    return tmp_path / "results"


def test_managed_run_ends_with_a_table_and_says_when_nothing_is_left(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def srez(*args: str) -> int:
        return main(["managed", *args, "--results", str(root)])

    assert srez(*baseline_queue("q", "sre-001,sre-002", "inline", "scripted,random")) == 0
    capsys.readouterr()
    assert srez("run", "q") == 0
    out, err = capsys.readouterr()
    assert "nothing to run" not in err
    lines = out.splitlines()
    assert lines[0].split() == ["target", "kind", "runs", "resolved", "mean", "reward", "errors"]
    assert lines[2].split() == ["scripted", "baseline", "2/2", "2", "1.000", "[1.00,", "1.00]", "0"]
    random = lines[3].split()
    assert random[:5] == ["random", "baseline", "2/2", "0", "0.000"]
    assert random[5:7] == ["[0.00,", "0.00]"]
    assert srez("run", "q") == 0
    out, err = capsys.readouterr()
    assert err == (
        "srez: managed run q: nothing to run, all 2 tasks of every target are done;"
        " 'srez managed add-target q TARGET' queues another target\n"
    )
    assert "scripted  baseline   2/2" in out
    assert srez("run", "q", "--target", "random") == 0
    out, err = capsys.readouterr()
    assert "all 2 tasks of target random are done" in err
    assert "scripted" not in out and "random" in out


def test_managed_summaries_name_their_provenance_and_flag_scores_that_do_not_compare(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def srez(*args: str) -> int:
        return main(["managed", *args, "--results", str(root)])

    assert srez(*baseline_queue("p", "sre-001,sre-002", "inline", "scripted,random")) == 0
    assert srez("run", "p") == 0
    capsys.readouterr()
    folder = root / "managed" / "p"
    combined = json.loads((folder / "summary.json").read_text())
    assert combined["provenance"]["task_sets"] == [
        {
            "task_set": "canonical",
            "generator": GENERATOR,
            "seed": 20250314,
            "tasks": 2,
            "set_digest": packaged_set_digest(),  # the 40 packaged tasks, though 2 ran
        }
    ]
    assert combined["provenance"]["grade_version"] == GRADE_SCHEMA_VERSION
    assert combined["provenance_note"].startswith(f"provenance: canonical ({GENERATOR}")
    for target in ("scripted", "random"):
        summary = json.loads((folder / "targets" / target / "summary.json").read_text())
        assert summary["provenance"]["tasks_digest"] == combined["provenance"]["tasks_digest"]
    assert combined["provenance_note"] in (folder / "summary.md").read_text()
    # one run rescored by another grade version: the summary says the scores do not compare
    (run_dir,) = [
        Path(r["results_dir"])
        for r in json.loads((folder / "targets" / "random" / "output.json").read_text())[
            "tasks"
        ].values()
        if r["task_id"] == "sre-002"
    ]
    run_summary = json.loads((run_dir / "summary.json").read_text())
    run_summary["provenance"]["grade_version"] = GRADE_SCHEMA_VERSION + 1
    (run_dir / "summary.json").write_text(json.dumps(run_summary))
    assert srez("summarize", "p") == 0
    combined = json.loads((folder / "summary.json").read_text())
    assert combined["provenance_note"].startswith("these scores do not compare:")
    assert "scored by different versions" in (folder / "summary.md").read_text()
