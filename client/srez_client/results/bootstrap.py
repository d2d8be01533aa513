"""95 % confidence intervals of the report's aggregates: a seeded percentile bootstrap. Pure.

The unit of resampling is the task: a resample draws as many tasks as the group has, with
replacement. Where tasks have several runs (seeds), each drawn task's runs are drawn again, with
replacement, from that task's own runs (a two-level bootstrap); with one run per task that
second level changes nothing. A resample's statistic is computed as the point estimate is: the
mean over the resampled runs (mean reward, resolved@1, passed@1), and for pass^k the mean over the
resampled tasks of each task's C(c, k) / C(n, k). pass^k for k > 1 resamples tasks only: drawing
a task's seeds again with replacement would let one passing run count k times and bias pass^k
upward; pass^1 (each task's share of passing runs, unbiased under that draw) uses both levels.

The interval is the 2.5th and 97.5th percentiles of :data:`RESAMPLES` resamples drawn by a
generator seeded with :data:`DEFAULT_SEED`, so the same runs always give the same interval. A
group of one run gives the degenerate interval ``(point, point)``; so does a group whose runs all
agree (a zero-width interval), and one task with several runs gets the seed level alone.

:func:`paired_difference` compares two agents on the tasks both ran: each resample draws the
same tasks for both (and each agent's runs of a drawn task apart), and the interval is that of
the difference of their mean rewards. The difference is *within noise* when its interval
contains 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import comb
from typing import Final

import numpy as np
import numpy.typing as npt

DEFAULT_SEED: Final = 20240917
"""The seed of every bootstrap unless told otherwise."""
RESAMPLES: Final = 2000
"""Resamples per interval."""
LEVEL: Final = 0.95
"""The confidence level of every interval."""

Interval = tuple[float, float]
"""(low, high), both ends included."""
RunValues = tuple[float, bool, bool]
"""One run's reward, resolved and passed."""

_Floats = npt.NDArray[np.float64]
_Ints = npt.NDArray[np.int64]
RUN_METRICS: Final = ("mean_reward", "resolved_at_1", "passed_at_1")
"""The metrics averaged over runs, in the order of :data:`RunValues`."""


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """How intervals are drawn: the generator's seed and the number of resamples."""

    seed: int = DEFAULT_SEED
    resamples: int = RESAMPLES


DEFAULT_BOOTSTRAP: Final = Bootstrap()
"""The bootstrap of every report unless told otherwise."""


@dataclass(frozen=True, slots=True)
class Difference:
    """The paired difference of two agents' mean rewards over the tasks both ran."""

    diff: float
    lo: float
    hi: float
    tasks: int

    @property
    def within_noise(self) -> bool:
        """Whether the interval of the difference contains 0."""
        return self.lo <= 0.0 <= self.hi


@dataclass(frozen=True, slots=True)
class _Runs:
    """One group's runs, task after task: each metric's values (metrics, runs), and where each
    task's runs start and how many it has."""

    flat: _Floats
    starts: _Ints
    counts: _Ints


def _runs(tasks: Sequence[Sequence[Sequence[float]]]) -> _Runs:
    counts = np.array([len(runs) for runs in tasks], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    flat = np.array([v for runs in tasks for v in runs], dtype=np.float64).T
    return _Runs(flat=flat, starts=starts, counts=counts)


def _draw(rng: np.random.Generator, runs: _Runs, task_idx: _Ints) -> tuple[_Ints, _Floats | None]:
    """The runs each resample draws: for each drawn task of n runs, n of its runs drawn again
    with replacement, as indexes into ``runs.flat`` (resamples, tasks × most runs); and a 0/1
    weight per slot (None when every task has as many runs, so every slot counts)."""
    n = runs.counts[task_idx]
    slots = int(runs.counts.max())
    if slots == 1:
        seed_idx = np.zeros((*task_idx.shape, 1), dtype=np.int64)
    else:
        seed_idx = (rng.random((*task_idx.shape, slots)) * n[..., None]).astype(np.int64)
    idx = (runs.starts[task_idx][..., None] + seed_idx).reshape(len(task_idx), -1)
    if int(runs.counts.min()) == slots:
        return idx, None
    mask = (np.arange(slots) < n[..., None]).reshape(len(task_idx), -1).astype(np.float64)
    return idx, mask


def _means(values: _Floats, idx: _Ints, mask: _Floats | None) -> _Floats:
    """Per resample, the mean of ``values`` (one per run) over the runs it drew."""
    drawn = values[idx]
    result: _Floats = drawn.mean(axis=1) if mask is None else (drawn * mask).sum(1) / mask.sum(1)
    return result


def _task_share_means(values: _Floats, idx: _Ints, mask: _Floats | None, tasks: int) -> _Floats:
    """Per resample, the mean over its drawn tasks of each one's mean over its drawn runs."""
    drawn = values[idx].reshape(len(idx), tasks, -1)
    if mask is None:
        result: _Floats = drawn.mean(axis=(1, 2))
    else:
        weights = mask.reshape(drawn.shape)
        result = ((drawn * weights).sum(axis=2) / weights.sum(axis=2)).mean(axis=1)
    return result


def _interval(stats: _Floats) -> list[Interval]:
    """The percentile interval of each column of ``stats`` (resamples, columns)."""
    tail = 100 * (1 - LEVEL) / 2
    lo, hi = np.percentile(stats, [tail, 100 - tail], axis=0)
    return [(round(float(a), 6), round(float(b), 6)) for a, b in zip(lo, hi, strict=True)]


def group_intervals(
    tasks: Sequence[Sequence[RunValues]],
    ks: Sequence[int] = (),
    spec: Bootstrap = DEFAULT_BOOTSTRAP,
) -> dict[str, Interval]:
    """The intervals of one group's metrics.

    Args:
        tasks: Per task, the values of each of its runs; every task has at least one run.
        ks: The k of pass^k to give an interval for (each at most the fewest runs of a task).
        spec: The seed and the number of resamples.

    Returns:
        ``mean_reward``, ``resolved_at_1``, ``passed_at_1`` and ``pass^k`` for each k, each
        ``(low, high)``; empty when there are no tasks.
    """
    if not tasks:
        return {}
    runs = _runs([[(float(r), float(s), float(p)) for r, s, p in one] for one in tasks])
    rng = np.random.default_rng(spec.seed)
    task_idx = rng.integers(0, len(tasks), size=(spec.resamples, len(tasks)))
    idx, mask = _draw(rng, runs, task_idx)
    stats = np.stack([_means(row, idx, mask) for row in runs.flat], axis=1)
    out = dict(zip(RUN_METRICS, _interval(stats), strict=True))
    if ks:
        passes = [sum(p for _, _, p in runs) for runs in tasks]
        per_task = np.array(
            [
                [comb(c, k) / comb(len(runs), k) for k in ks]
                for c, runs in zip(passes, tasks, strict=True)
            ]
        )
        resampled = per_task[task_idx].mean(axis=1)
        if 1 in ks:
            shares = _task_share_means(runs.flat[2], idx, mask, len(tasks))
            resampled[:, list(ks).index(1)] = shares
        out |= {f"pass^{k}": iv for k, iv in zip(ks, _interval(resampled), strict=True)}
    return out


def paired_difference(
    a: Mapping[str, Sequence[float]],
    b: Mapping[str, Sequence[float]],
    spec: Bootstrap = DEFAULT_BOOTSTRAP,
) -> Difference | None:
    """The difference of mean rewards a - b over the tasks both ran, with its interval.

    Args:
        a: Per task, the rewards of the first agent's runs.
        b: The same for the second agent.
        spec: The seed and the number of resamples.

    Returns:
        The difference, or None when the agents share no task.
    """
    common = sorted(set(a) & set(b))
    if not common:
        return None
    rng = np.random.default_rng(spec.seed)
    task_idx = rng.integers(0, len(common), size=(spec.resamples, len(common)))
    means: list[_Floats] = []
    points: list[float] = []
    for side in (a, b):
        runs = _runs([[(float(v),) for v in side[t]] for t in common])
        idx, mask = _draw(rng, runs, task_idx)
        means.append(_means(runs.flat[0], idx, mask))
        points.append(float(runs.flat[0].mean()))
    ((lo, hi),) = _interval((means[0] - means[1])[:, None])
    return Difference(diff=round(points[0] - points[1], 6), lo=lo, hi=hi, tasks=len(common))
