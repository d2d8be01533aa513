"""Aggregates over graded runs (docs/environment.md §3.9) and their tables. Pure: no I/O.

The input is a list of grades as dicts shaped like ``result.json``. Each is read through
:class:`GradeView`, a typed view of the fields the aggregates need; other fields are ignored, so
grades of later schema versions still aggregate as long as these fields keep their meaning.

Metrics (each over the runs of a group):

* ``resolved@1`` / ``passed@1``: share of runs resolved / passed;
* ``mean_reward``: mean of ``reward.total``;
* ``rca_service`` / ``rca_kind``: share whose declared service / fault kind was right;
* ``evidence``: mean of ``reward.components.evidence``;
* ``unsafe``: share that failed the ``safe`` check; ``collateral``: share with a collateral edit;
* ``invalid_rate``: invalid actions over steps, summed over the runs;
* ``mean_steps``; ``mean_ttm``: mean time to mitigate over the runs that mitigated (``n_ttm``);
* ``pass^k`` (τ-bench) for k in {1, 3, 5} up to the fewest seeds any task has, when some task has
  more than one run: per task with n runs of which c passed, C(c, k) / C(n, k), averaged over tasks.

Each aggregate carries in ``ci`` the 95 % confidence interval of its mean reward, resolved@1,
passed@1 and each pass^k (keys ``mean_reward``, ``resolved_at_1``, ``passed_at_1``, ``pass^k``): a
seeded bootstrap over tasks, and over each task's seeds where it has several
(:mod:`~srez_client.results.bootstrap`). The tables write them after the value, ``0.512 [0.43,
0.60]`` and ``45.0% [30-60]``.

The leaderboard compares each agent with the next one down (a paired bootstrap over the tasks
both ran, :func:`compare_rewards`): its ``vs next`` column is
``>`` when the agent's mean reward is ahead by more than noise (the 95 % interval of the
difference excludes 0), ``≈`` when the difference is within noise (``~`` in ASCII), ``?`` when
the two share no task. ``Report.comparisons`` holds every such pair. The floor agents
(:data:`FLOOR_AGENTS`: they do nothing, or restart everything) are marked ``(floor)``: the score
an agent must clear to have done anything useful.

A run that ended on an infrastructure failure (``error_kind`` ``provider`` or ``harness``,
:mod:`srez_env.agents.failures`) is not the agent's result: it is in no aggregate, interval or
pass^k, and ``Report.left_out`` counts it per agent. A ``model_limit`` or ``agent`` failure is
the agent's result and counts like any run.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from math import comb
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from srez_client.results.bootstrap import (
    DEFAULT_BOOTSTRAP,
    Bootstrap,
    Interval,
    group_intervals,
    paired_difference,
)
from srez_client.results.table import render_table
from srez_env import agent_registry
from srez_env.agents.failures import counted

CHECK_NAMES: Final = ("valid", "func", "safe", "intent", "rca")
"""The five checks, in table order."""
DIFFICULTIES: Final = ("easy", "medium", "hard")
"""The difficulty tiers, in table order."""
PASS_HAT_K: Final = (1, 3, 5)
"""The k of pass^k that are reported (each only when every task has at least k runs)."""
FLOOR_AGENTS: Final = agent_registry.FLOORS
"""Agents whose score is a floor (doing nothing; restarting everything): marked in leaderboards."""


class _View(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class CheckView(_View):
    """One check of a grade."""

    passed: bool = Field(alias="pass")
    reasons: list[str] = []


class RewardView(_View):
    """The reward of a grade."""

    total: float
    components: dict[str, float] = {}


class MetricsView(_View):
    """The metrics of a grade that the aggregates use."""

    end_reason: str | None = None
    invalid_actions: int = 0
    rca_service_correct: bool = False
    rca_kind_correct: bool = False
    collateral_keys: list[str] = []
    time_to_mitigate_min: int | None = None


class GradeView(_View):
    """The fields of ``result.json`` that reports read."""

    task_id: str
    agent: str
    model: str | None = None
    run_seed: int = 0
    difficulty: str
    fault_kind: str
    steps: int
    max_steps: int = 0
    checks: dict[str, CheckView]
    resolved: bool
    passed: bool
    reward: RewardView
    metrics: MetricsView
    error_kind: str | None = None
    """Why the run failed (:mod:`srez_env.agents.failures`); an infrastructure failure is left
    out of every aggregate."""

    @property
    def model_name(self) -> str:
        """The model, ``none`` for agents without one."""
        return self.model or "none"

    def check(self, name: str) -> bool:
        """Whether check ``name`` passed (a missing check counts as failed)."""
        found = self.checks.get(name)
        return found is not None and found.passed


class Aggregate(BaseModel):
    """The aggregate metrics of one group of runs."""

    model_config = ConfigDict(frozen=True)

    n: int
    resolved_at_1: float
    passed_at_1: float
    mean_reward: float
    rca_service: float
    rca_kind: float
    evidence: float
    unsafe: float
    collateral: float
    invalid_rate: float
    mean_steps: float
    mean_ttm: float | None
    n_ttm: int
    pass_hat_k: dict[int, float] = {}
    ci: dict[str, Interval] = {}
    """95 % intervals: ``mean_reward``, ``resolved_at_1``, ``passed_at_1``, ``pass^k`` (see the
    module docstring); empty when the report was built without intervals."""


class AgentReport(BaseModel):
    """Aggregates of one (agent, model): overall, by difficulty and by fault kind."""

    model_config = ConfigDict(frozen=True)

    agent: str
    model: str
    overall: Aggregate
    by_difficulty: dict[str, Aggregate]
    by_fault_kind: dict[str, Aggregate]


class Comparison(BaseModel):
    """Agent ``a`` against ``b`` (the next one down the leaderboard) on the tasks both ran."""

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    diff: float
    """Mean reward of ``a`` minus that of ``b``, over their common tasks."""
    lo: float
    hi: float
    """The 95 % interval of ``diff`` (paired bootstrap)."""
    within_noise: bool
    """Whether the interval contains 0."""
    tasks: int
    """Tasks both ran."""


class Report(BaseModel):
    """Everything ``srez eval`` reports: per agent, and the leaderboard order."""

    model_config = ConfigDict(frozen=True)

    agents: list[AgentReport]
    leaderboard: list[str]
    """``agent`` or ``agent (model)`` labels, best mean reward first."""
    comparisons: list[Comparison] = []
    """Each leaderboard entry against the next (none without intervals, or with one agent)."""
    floors: list[str] = []
    """The leaderboard labels of floor agents (:data:`FLOOR_AGENTS`)."""
    left_out: dict[str, int] = {}
    """Runs per label that ended on an infrastructure failure (``provider``, ``harness``): not
    the agent's result, so in no aggregate; ``srez eval --resume`` runs them again."""


def views(grades: Iterable[Mapping[str, object] | GradeView]) -> list[GradeView]:
    """Read grade dicts (as in ``result.json``) into typed views.

    Raises:
        pydantic.ValidationError: If a grade lacks a field the aggregates need.
    """
    return [g if isinstance(g, GradeView) else GradeView.model_validate(g) for g in grades]


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 6) if values else 0.0


def _share(runs: Sequence[GradeView], test: Callable[[GradeView], bool]) -> float:
    return _mean([1.0 if test(r) else 0.0 for r in runs])


def pass_hat_k(passes_by_task: Mapping[str, Sequence[bool]], k: int) -> float:
    """τ-bench pass^k: per task, C(c, k) / C(n, k), averaged over tasks.

    Args:
        passes_by_task: For each task, whether each of its n runs passed.
        k: How many runs are drawn without replacement; every task needs at least k runs.

    Returns:
        The mean over tasks of the probability that k runs drawn from that task's runs all pass.

    Raises:
        ValueError: If k < 1, there are no tasks, or a task has fewer than k runs.
    """
    if k < 1 or not passes_by_task:
        msg = f"pass^k needs k >= 1 and at least one task (k={k}, tasks={len(passes_by_task)})"
        raise ValueError(msg)
    total = 0.0
    for task, runs in passes_by_task.items():
        if len(runs) < k:
            msg = f"task {task} has {len(runs)} runs, fewer than k={k}"
            raise ValueError(msg)
        total += comb(sum(runs), k) / comb(len(runs), k)
    return round(total / len(passes_by_task), 6)


def aggregate(
    grades: Iterable[Mapping[str, object] | GradeView],
    bootstrap: Bootstrap | None = DEFAULT_BOOTSTRAP,
) -> Aggregate:
    """Aggregate one group of runs (see the module docstring for the definitions); with
    ``bootstrap`` None, without intervals."""
    runs = views(grades)
    steps = sum(r.steps for r in runs)
    ttms = [
        float(r.metrics.time_to_mitigate_min)
        for r in runs
        if r.metrics.time_to_mitigate_min is not None
    ]
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in runs:
        by_task[r.task_id].append(r.passed)
    pass_k: dict[int, float] = {}
    if by_task and max(len(v) for v in by_task.values()) > 1:
        fewest = min(len(v) for v in by_task.values())
        pass_k = {k: pass_hat_k(by_task, k) for k in PASS_HAT_K if k <= fewest}
    ci: dict[str, Interval] = {}
    if bootstrap is not None:
        per_task: dict[str, list[tuple[float, bool, bool]]] = defaultdict(list)
        for r in runs:
            per_task[r.task_id].append((r.reward.total, r.resolved, r.passed))
        ci = group_intervals(list(per_task.values()), sorted(pass_k), bootstrap)
    return Aggregate(
        n=len(runs),
        resolved_at_1=_share(runs, lambda r: r.resolved),
        passed_at_1=_share(runs, lambda r: r.passed),
        mean_reward=_mean([r.reward.total for r in runs]),
        rca_service=_share(runs, lambda r: r.metrics.rca_service_correct),
        rca_kind=_share(runs, lambda r: r.metrics.rca_kind_correct),
        evidence=_mean([r.reward.components.get("evidence", 0.0) for r in runs]),
        unsafe=_share(runs, lambda r: not r.check("safe")),
        collateral=_share(runs, lambda r: bool(r.metrics.collateral_keys)),
        invalid_rate=round(sum(r.metrics.invalid_actions for r in runs) / steps, 6)
        if steps
        else 0.0,
        mean_steps=_mean([float(r.steps) for r in runs]),
        mean_ttm=_mean(ttms) if ttms else None,
        n_ttm=len(ttms),
        pass_hat_k=pass_k,
        ci=ci,
    )


def agent_label(agent: str, model: str) -> str:
    """``agent``, or ``agent (model)`` when there is a model."""
    return agent if model == "none" else f"{agent} ({model})"


def agent_report(
    runs: Sequence[GradeView], bootstrap: Bootstrap | None = DEFAULT_BOOTSTRAP
) -> AgentReport:
    """Aggregates of the runs of one (agent, model), overall and broken down."""
    if not runs:
        msg = "agent_report needs at least one run"
        raise ValueError(msg)
    by_difficulty = {
        d: aggregate([r for r in runs if r.difficulty == d], bootstrap) for d in DIFFICULTIES
    }
    kinds = sorted({r.fault_kind for r in runs})
    return AgentReport(
        agent=runs[0].agent,
        model=runs[0].model_name,
        overall=aggregate(runs, bootstrap),
        by_difficulty={d: a for d, a in by_difficulty.items() if a.n},
        by_fault_kind={
            k: aggregate([r for r in runs if r.fault_kind == k], bootstrap) for k in kinds
        },
    )


def _rewards_by_task(runs: Sequence[GradeView]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        out[r.task_id].append(r.reward.total)
    return out


def compare_rewards(
    a: str,
    rewards_a: Mapping[str, Sequence[float]],
    b: str,
    rewards_b: Mapping[str, Sequence[float]],
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
) -> Comparison | None:
    """``a`` against ``b`` (task → rewards of its runs, each) on the tasks both ran; None when
    they share none."""
    found = paired_difference(rewards_a, rewards_b, bootstrap)
    if found is None:
        return None
    return Comparison(
        a=a,
        b=b,
        diff=found.diff,
        lo=found.lo,
        hi=found.hi,
        within_noise=found.within_noise,
        tasks=found.tasks,
    )


def build_report(
    grades: Iterable[Mapping[str, object] | GradeView],
    bootstrap: Bootstrap | None = DEFAULT_BOOTSTRAP,
) -> Report:
    """Group runs by (agent, model) and aggregate each group; rank them by mean reward, and
    compare each with the next one down (unless ``bootstrap`` is None: no intervals)."""
    groups: dict[tuple[str, str], list[GradeView]] = defaultdict(list)
    left_out: Counter[str] = Counter()
    for g in views(grades):
        if counted(g.error_kind):
            groups[(g.agent, g.model_name)].append(g)
        else:
            left_out[agent_label(g.agent, g.model_name)] += 1
    reports = [agent_report(runs, bootstrap) for _, runs in sorted(groups.items())]
    ranked = sorted(reports, key=lambda a: (-a.overall.mean_reward, a.agent, a.model))
    comparisons: list[Comparison] = []
    if bootstrap is not None:
        for upper, lower in zip(ranked, ranked[1:], strict=False):
            found = compare_rewards(
                agent_label(upper.agent, upper.model),
                _rewards_by_task(groups[(upper.agent, upper.model)]),
                agent_label(lower.agent, lower.model),
                _rewards_by_task(groups[(lower.agent, lower.model)]),
                bootstrap,
            )
            if found is not None:
                comparisons.append(found)
    return Report(
        agents=reports,
        leaderboard=[agent_label(a.agent, a.model) for a in ranked],
        comparisons=comparisons,
        floors=[agent_label(a.agent, a.model) for a in ranked if a.agent in FLOOR_AGENTS],
        left_out=dict(sorted(left_out.items())),
    )


def report_json(report: Report) -> dict[str, object]:
    """The JSON form of a report (what ``srez eval --json`` prints)."""
    return report.model_dump(mode="json")


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def runs_table(
    grades: Iterable[Mapping[str, object] | GradeView], *, ascii_marks: bool = False
) -> str:
    """One row per run: task, kind, difficulty, agent, seed, reward, the five checks, steps.

    Args:
        grades: The runs.
        ascii_marks: Show checks as ``P``/``F`` rather than ``✓``/``✗``.
    """
    yes, no = ("P", "F") if ascii_marks else ("✓", "✗")
    runs = sorted(views(grades), key=lambda r: (r.task_id, r.agent, r.model_name, r.run_seed))
    headers = ["task", "kind", "difficulty", "agent", "seed", "reward", *CHECK_NAMES, "steps"]
    rows = [
        [
            r.task_id,
            r.fault_kind,
            r.difficulty,
            agent_label(r.agent, r.model_name),
            str(r.run_seed),
            f"{r.reward.total:.3f}",
            *(yes if r.check(c) else no for c in CHECK_NAMES),
            f"{r.steps}/{r.max_steps}" if r.max_steps else str(r.steps),
        ]
        for r in runs
    ]
    return render_table(headers, rows, right=[4, 5, 11])


def _pass_k_headers(agg: Aggregate) -> list[str]:
    return [f"pass^{k}" for k in sorted(agg.pass_hat_k)]


def _reward_cell(agg: Aggregate) -> str:
    iv = agg.ci.get("mean_reward")
    text = f"{agg.mean_reward:.3f}"
    return text if iv is None else f"{text} [{iv[0]:.2f}, {iv[1]:.2f}]"


def _share_cell(agg: Aggregate, value: float, key: str) -> str:
    iv = agg.ci.get(key)
    text = _pct(value)
    return text if iv is None else f"{text} [{100 * iv[0]:.0f}-{100 * iv[1]:.0f}]"


def _metric_cells(agg: Aggregate, ks: Sequence[int]) -> list[str]:
    ttm = "-" if agg.mean_ttm is None else f"{agg.mean_ttm:.1f} (n={agg.n_ttm})"
    return [
        str(agg.n),
        _reward_cell(agg),
        _share_cell(agg, agg.resolved_at_1, "resolved_at_1"),
        _share_cell(agg, agg.passed_at_1, "passed_at_1"),
        _pct(agg.rca_service),
        _pct(agg.rca_kind),
        f"{agg.evidence:.3f}",
        _pct(agg.unsafe),
        _pct(agg.collateral),
        _pct(agg.invalid_rate),
        f"{agg.mean_steps:.1f}",
        ttm,
        *(
            _share_cell(agg, agg.pass_hat_k[k], f"pass^{k}") if k in agg.pass_hat_k else "-"
            for k in ks
        ),
    ]


_METRIC_HEADERS: Final = (
    "n",
    "reward",
    "resolved@1",
    "passed@1",
    "rca svc",
    "rca kind",
    "evidence",
    "unsafe",
    "collateral",
    "invalid",
    "steps",
    "ttm min",
)


def aggregate_table(report: AgentReport) -> str:
    """Aggregates of one agent: overall, then each difficulty, then each fault kind."""
    ks = sorted(report.overall.pass_hat_k)
    groups = [("overall", report.overall)]
    groups += [(d, a) for d, a in report.by_difficulty.items()]
    groups += [(f"kind {k}", a) for k, a in report.by_fault_kind.items()]
    headers = ["group", *_METRIC_HEADERS, *_pass_k_headers(report.overall)]
    rows = [[name, *_metric_cells(agg, ks)] for name, agg in groups]
    return render_table(headers, rows, right=range(1, len(headers)))


def _vs_next(report: Report, label: str, below: str | None, *, ascii_marks: bool) -> str:
    if below is None or not any(a.overall.ci for a in report.agents):
        return "-"
    found = next((c for c in report.comparisons if c.a == label and c.b == below), None)
    if found is None:
        return "?"
    return ("~" if ascii_marks else "≈") if found.within_noise else ">"


def leaderboard_table(report: Report, *, ascii_marks: bool = False) -> str:
    """Agents ranked by mean reward, with their overall aggregates, and how each compares with
    the next one down (``vs next``: ``>`` ahead beyond noise, ``≈`` within noise, ``?`` no
    common task; ``~`` for ``≈`` with ``ascii_marks``). Floor agents are marked ``(floor)``."""
    by_label = {agent_label(a.agent, a.model): a for a in report.agents}
    ks = sorted({k for a in report.agents for k in a.overall.pass_hat_k})
    headers = ["rank", "agent", "vs next", *_METRIC_HEADERS, *(f"pass^{k}" for k in ks)]
    below = [*report.leaderboard[1:], None]
    rows = [
        [
            str(i),
            f"{label} (floor)" if label in report.floors else label,
            _vs_next(report, label, nxt, ascii_marks=ascii_marks),
            *_metric_cells(by_label[label].overall, ks),
        ]
        for i, (label, nxt) in enumerate(zip(report.leaderboard, below, strict=True), start=1)
    ]
    return render_table(headers, rows, right=[0, *range(3, len(headers))])


def difficulty_table(report: Report) -> str:
    """One line per agent, in leaderboard order: its mean reward (with its 95 % interval) on
    each difficulty. The runs of each difficulty are counted in its header when every agent has
    as many, else in each cell."""
    by_label = {agent_label(a.agent, a.model): a for a in report.agents}
    present = [d for d in DIFFICULTIES if any(d in a.by_difficulty for a in report.agents)]
    counts = {
        d: {a.by_difficulty[d].n for a in report.agents if d in a.by_difficulty} for d in present
    }
    headers = ["mean reward by difficulty"]
    headers += [f"{d} (n={min(counts[d])})" if len(counts[d]) == 1 else d for d in present]
    rows = []
    for label in report.leaderboard:
        cells = [f"{label} (floor)" if label in report.floors else label]
        for d in present:
            agg = by_label[label].by_difficulty.get(d)
            if agg is None:
                cells.append("-")
            else:
                cells.append(_reward_cell(agg) + ("" if len(counts[d]) == 1 else f" (n={agg.n})"))
        rows.append(cells)
    return render_table(headers, rows, right=range(1, len(headers)))
