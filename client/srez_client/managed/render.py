"""``summary.md`` and ``summary.png`` of a managed run, from its combined summary.

The Markdown is pure text; the chart imports matplotlib (Agg backend) only when it is drawn, so
nothing else of the client pays for matplotlib's import.
"""

from __future__ import annotations

from srez_client.managed.summary import CombinedSummary, TargetSummary


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def _kind(s: TargetSummary) -> str:
    return "baseline" if s.baseline else "model"


def markdown(summary: CombinedSummary) -> str:
    """``summary.md``: scores, resolved@1 by difficulty, and progress and errors, one row per
    target, baselines and models side by side."""
    scores = _table(
        ["target", "kind", "completed", "mean reward ± se", "resolved", "passed", "cost"],
        [
            [
                s.target,
                _kind(s),
                f"{s.completed}/{s.tasks_total}",
                f"{_num(s.mean_reward)} ± {_num(s.reward_stderr)}",
                _pct(s.resolved_rate),
                _pct(s.passed_rate),
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
                        f"{_pct(d.rate)} ({d.resolved}/{d.completed})"
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
        f"## Scores\n\n{scores}\n\n## resolved@1 by difficulty\n\n{by_diff}\n\n"
        f"## Progress and errors\n\n{progress}\n"
    )


def draw_png(summary: CombinedSummary) -> bytes:
    """``summary.png``: mean reward per target with error bars, and resolved@1 by difficulty."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [s.target for s in summary.targets]
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(8.0, 1.2 * len(names) + 4), 4.5))
    try:
        xs = list(range(len(names)))
        left.bar(
            xs,
            [s.mean_reward or 0.0 for s in summary.targets],
            yerr=[s.reward_stderr or 0.0 for s in summary.targets],
            color=["#888888" if s.baseline else "#3b75af" for s in summary.targets],
            capsize=4,
        )
        left.set_xticks(xs, names, rotation=30, ha="right", fontsize=8)
        left.set_ylim(0, 1.05)
        left.set_ylabel("mean reward (± s.e.)")
        left.set_title("Reward per target")
        width = 0.8 / max(1, len(summary.difficulties))
        for i, diff in enumerate(summary.difficulties):
            rates = []
            for s in summary.targets:
                d = s.resolved_by_difficulty.get(diff)
                rates.append(d.rate if d is not None and d.rate is not None else 0.0)
            right.bar([x + i * width for x in xs], rates, width, label=diff)
        right.set_xticks(
            [x + 0.4 - width / 2 for x in xs], names, rotation=30, ha="right", fontsize=8
        )
        right.set_ylim(0, 1.05)
        right.set_ylabel("resolved@1")
        right.set_title("resolved@1 by difficulty")
        if summary.difficulties:
            right.legend(fontsize=8)
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=100)
        return out.getvalue()
    finally:
        plt.close(fig)
