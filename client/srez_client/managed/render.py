"""``summary.md`` and ``summary.png`` of a managed run, from its combined summary.

The Markdown is pure text; the chart imports matplotlib (Agg backend) only when it is drawn, so
nothing else of the client pays for matplotlib's import.
"""

from __future__ import annotations

from typing import Any, Final

from srez_client.managed.summary import CombinedSummary, TargetSummary


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def with_interval(value: float | None, ci: tuple[float, float] | None, digits: int = 3) -> str:
    """``0.615 [0.48, 0.75]``: a value and its interval (``–`` for no value, no brackets
    without an interval)."""
    if value is None or ci is None:
        return _num(value, digits)
    return f"{value:.{digits}f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _bracket(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{100 * ci[0]:.0f}–{100 * ci[1]:.0f}]"


def _pct_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    return _pct(value) + ("" if value is None else _bracket(ci))


def _table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def _kind(s: TargetSummary) -> str:
    return "baseline" if s.baseline else "model"


def markdown(summary: CombinedSummary) -> str:
    """``summary.md``: scores, resolved@1 by difficulty, and progress and errors, one row per
    target, baselines and models side by side; every score with its 95 % interval in brackets."""
    scores = _table(
        [
            "target",
            "kind",
            "completed",
            "mean reward [95% CI]",
            "± se",
            "resolved",
            "passed",
            "cost",
        ],
        [
            [
                s.target,
                _kind(s),
                f"{s.completed}/{s.tasks_total}",
                with_interval(s.mean_reward, s.reward_ci),
                _num(s.reward_stderr),
                _pct_ci(s.resolved_rate, s.resolved_ci),
                _pct_ci(s.passed_rate, s.passed_ci),
                f"${s.cost_usd:.4f}",
            ]
            for s in summary.targets
        ],
    )
    by_diff = _table(
        ["target", *summary.difficulties],
        [
            [
                s.target,
                *(
                    (
                        f"{_pct(d.rate)} ({d.resolved}/{d.completed}){_bracket(d.ci)}"
                        if (d := s.resolved_by_difficulty.get(name)) is not None
                        else "–"
                    )
                    for name in summary.difficulties
                ),
            ]
            for s in summary.targets
        ],
    )
    progress = _table(
        [
            "target",
            "state",
            "remaining",
            "interrupted",
            "provider errors",
            "agent errors",
            "harness errors",
            "attempts",
            "re-runs",
            "unattested claims",
        ],
        [
            [
                s.target,
                s.state,
                str(s.remaining),
                str(s.interrupted),
                f"{s.provider_errors} ({s.provider_error_attempts} attempts)",
                str(s.agent_errors),
                str(s.harness_errors),
                str(s.attempts),
                str(s.reruns),
                str(s.provider_claims),
            ]
            for s in summary.targets
        ],
    )
    return (
        f"# Managed run {summary.name}\n\n"
        f"{summary.tasks} tasks per target, backend `{summary.backend}`. Scores count completed "
        "tasks only; provider errors are retried, never scored (only those the harness "
        "attested: a custom agent's claimed provider error is its own failure). "
        f"Re-runs, all targets: {summary.reruns}.\n\n"
        + (f"{summary.provenance_note}\n\n" if summary.provenance_note else "")
        + "Brackets hold 95 % intervals (a bootstrap over the completed tasks).\n\n"
        f"## Scores\n\n{scores}\n\n{_differences(summary)}## resolved@1 by difficulty\n\n{by_diff}\n\n"
        f"## Progress and errors\n\n{progress}\n"
    )


def _differences(summary: CombinedSummary) -> str:
    """The section comparing each target with the next one down (empty without comparisons)."""
    if not summary.comparisons:
        return ""
    rows = [
        [
            f"{c.a} vs {c.b}",
            f"{c.diff:+.3f} [{c.lo:+.2f}, {c.hi:+.2f}]",
            str(c.tasks),
            "≈ within noise" if c.within_noise else "> ahead",
        ]
        for c in summary.comparisons
    ]
    table = _table(["targets", "reward difference [95% CI]", "common tasks", "verdict"], rows)
    return (
        "## Differences\n\nEach target against the next one down by mean reward, on the tasks "
        "both completed (a paired bootstrap): within noise when the interval contains 0.\n\n"
        f"{table}\n\n"
    )


KIND_COLOURS: Final = {"baseline": "#8c8c8c", "model": "#3b75af"}
"""One colour per target kind in ``summary.png``."""
DIFFICULTY_HATCHES: Final = ("", "///", "xxx", "...", "\\\\\\")
"""How the difficulties of one target are told apart in ``summary.png`` (in order)."""
ZERO_MARK: Final = 0.012
"""Height of the stub drawn for a zero bar, so that it never looks like missing data."""


def _bars(
    ax: Any,
    xs: list[float],
    values: list[float | None],
    width: float,
    intervals: list[tuple[float, float] | None],
    **style: Any,
) -> None:
    """Bars with their value written on top, above the error bar of its interval (drawn where
    there is one); a zero bar gets a stub, a missing one 'n/a'."""
    heights = [ZERO_MARK if v is not None and v == 0 else (v or 0.0) for v in values]
    ax.bar(xs, heights, width, **style)
    spans = [
        (x, v, v - iv[0], iv[1] - v)
        for x, v, iv in zip(xs, values, intervals, strict=True)
        if v is not None and iv is not None
    ]
    if spans:
        ax.errorbar(
            [x for x, _, _, _ in spans],
            [v for _, v, _, _ in spans],
            yerr=[[max(0.0, b) for _, _, b, _ in spans], [max(0.0, a) for _, _, _, a in spans]],
            fmt="none",
            ecolor="black",
            capsize=3,
            linewidth=1,
        )
    tops = {x: v + above for x, v, _, above in spans}
    for x, v, h in zip(xs, values, heights, strict=True):
        text = "n/a" if v is None else f"{v:.2f}"
        ax.text(x, max(h, tops.get(x, 0.0)) + 0.015, text, ha="center", va="bottom", fontsize=7)


def draw_png(summary: CombinedSummary) -> bytes:
    """``summary.png``: the chart of :func:`chart`, as PNG bytes."""
    import io

    import matplotlib.pyplot as plt

    fig = chart(summary)
    try:
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=100)
        return out.getvalue()
    finally:
        plt.close(fig)


def chart(summary: CombinedSummary) -> Any:
    """The figure of ``summary.png`` (the caller closes it): the run's name as title; mean
    reward per target with error bars, and resolved@1 by difficulty (hatched per difficulty);
    one colour per target kind, every value written on its bar, a zero bar drawn as a stub and
    labelled ``0.00``; every bar with a completed task has the error bar of its 95 %
    interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    targets = summary.targets
    names = [s.target for s in targets]
    colours = [KIND_COLOURS[_kind(s)] for s in targets]
    wide = max(9.0, 1.4 * len(names) * max(1, len(summary.difficulties)) ** 0.5 + 5)
    fig, (left, right) = plt.subplots(1, 2, figsize=(wide, 5.0))
    try:
        fig.suptitle(
            f"Managed run {summary.name}: {summary.tasks} tasks per target,"
            f" backend {summary.backend}",
            fontsize=11,
        )
        xs = [float(x) for x in range(len(names))]
        rewards = [s.mean_reward for s in targets]
        _bars(left, xs, rewards, 0.7, [s.reward_ci for s in targets], color=colours)
        left.set_xticks(xs, names, rotation=30, ha="right", fontsize=8)
        left.set_ylim(0, 1.2)
        left.set_ylabel("mean reward (95% CI)")
        left.set_title("Reward per target", fontsize=10)
        kinds = list(dict.fromkeys(_kind(s) for s in targets))
        left.legend(
            handles=[Patch(color=KIND_COLOURS[k], label=k) for k in kinds],
            fontsize=8,
            loc="upper right",
        )
        diffs = summary.difficulties or ["all"]
        width = 0.8 / len(diffs)
        for i, diff in enumerate(diffs):
            rates: list[float | None] = []
            cis: list[tuple[float, float] | None] = []
            for s in targets:
                d = s.resolved_by_difficulty.get(diff)
                rates.append(d.rate if d is not None else None)
                cis.append(d.ci if d is not None else None)
            _bars(
                right,
                [x + (i - (len(diffs) - 1) / 2) * width for x in xs],
                rates,
                width,
                cis,
                color=colours,
                hatch=DIFFICULTY_HATCHES[i % len(DIFFICULTY_HATCHES)],
                edgecolor="white",
            )
        right.set_xticks(xs, names, rotation=30, ha="right", fontsize=8)
        right.set_ylim(0, 1.2)
        right.set_ylabel("resolved@1 (95% CI)")
        right.set_title("resolved@1 by difficulty (n/a: no task of it completed)", fontsize=10)
        if summary.difficulties:
            right.legend(
                handles=[
                    Patch(
                        facecolor="#bbbbbb",
                        edgecolor="white",
                        hatch=DIFFICULTY_HATCHES[i % len(DIFFICULTY_HATCHES)],
                        label=d,
                    )
                    for i, d in enumerate(diffs)
                ],
                fontsize=8,
                loc="upper right",
            )
        fig.tight_layout()
    except BaseException:
        plt.close(fig)
        raise
    return fig
