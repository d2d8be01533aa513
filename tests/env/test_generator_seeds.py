"""Every seed generates (docs/environment.md §6.15): a row whose injected limit, at its drawn
share, leaves the gateway SLO holding in every world of a seed is placed deeper in a second pass,
and the task that comes out holds the whole contract of :mod:`srez_env.generator.verify`.

The fast tests realise the rows that failed before the second pass existed; the slow one
generates the 40-task sets of seeds 1 to 200 on both cores and holds every task to the contract.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import pytest

from srez_env.generator import matrix, sets
from srez_env.generator.place import DEEPENING_STEPS, _rewritten
from srez_env.generator.unusual import DECOYS
from srez_env.generator.verify import fault_spares_slo, problems
from srez_env.generator.worlds import WorldDraw, draw_world
from srez_env.sim.scenario import clear_templates
from srez_env.task import Task

FAILED_BEFORE = {
    # (seed, row index): every one of the row's 40 worlds left the gateway SLO holding with
    # the cache at its drawn share (sre-023 and sre-025 starve the cache: only a database with
    # no CPU to spare turns the misses into latency). Found by env/tools/seed_survey.py 1-200 8001.
    (104, 22): "sre-023",
    (8001, 22): "sre-023",
    (7, 24): "sre-025",
}
SLOW_SEEDS = range(1, 201)


@pytest.fixture(scope="module")
def realised() -> dict[tuple[int, int], Task]:
    """Row n of the matrix under the id it had at position n before sets were shuffled (§6.17):
    its worlds are keyed by that id, so these are the very worlds that failed."""
    rows = matrix.load().rows
    return {
        (seed, n): sets.realise(rows[n], seed, sets.member_id(seed, n)) for seed, n in FAILED_BEFORE
    }


@pytest.mark.parametrize("key", sorted(FAILED_BEFORE))
def test_a_row_that_failed_before_now_verifies(
    realised: dict[tuple[int, int], Task], key: tuple[int, int]
) -> None:
    seed, n = key
    task = realised[key]
    assert task.id == sets.member_id(seed, n)
    assert task.world is not None and task.world.set_seed == seed
    assert task.fault_kind == "cache_eviction_stampede"
    assert problems(task) == [], task.id  # verified again here, not taken on trust


def _draw_of(task: Task, seed: int, n: int) -> tuple[Task, WorldDraw]:
    """The row's typical task (renamed) and the draw of the world the generator kept, redrawn
    as :func:`srez_env.generator.sets.realise` draws it."""
    typical = sets._renamed(sets._typical(matrix.load().rows[n]), task.id)
    assert task.world is not None
    worlds = [sets._world_seed(seed, task.id, a) for a in range(sets.MAX_ATTEMPTS)]
    assert task.world.seed in worlds, "the kept world is not one of the row's draws"
    extra: dict[str, set[str]] = defaultdict(set)
    for spec in typical.injection.versions:
        extra[spec.service].add(spec.version)
    draw = draw_world(task.world.seed, typical.incident.start, extra, DECOYS[typical.difficulty])
    world = draw.spec.model_copy(update={"set_seed": seed})
    return typical, replace(draw, spec=world)


@pytest.mark.parametrize("key", sorted(FAILED_BEFORE))
def test_the_kept_limit_is_the_mildest_step_that_breaks_the_slo(
    realised: dict[tuple[int, int], Task], key: tuple[int, int]
) -> None:
    """Not merely some value low enough: the drawn share and every milder step leave the SLO
    holding, the kept one breaks it, and it is never below the row's own value's share."""
    seed, n = key
    task = realised[key]
    typical, draw = _draw_of(task, seed, n)
    steps = [_rewritten(typical, draw, d) for d in range(DEEPENING_STEPS + 1)]
    kept = next(d for d, t in enumerate(steps) if t.injection == task.injection)
    assert kept > 0, "the drawn share already broke the SLO: the second pass was not needed"
    assert all(fault_spares_slo(steps[d]) for d in range(kept))
    assert not fault_spares_slo(task)
    value = int(task.injection.config[0].value)
    row_value = int(typical.injection.config[0].value)
    drawn = int(steps[0].injection.config[0].value)
    assert row_value <= value < drawn


def _generate_and_verify(seed: int) -> tuple[int, int, list[str], float]:
    """One seed's set, each task verified again; (seed, tasks, problems, seconds)."""
    started = time.perf_counter()
    try:
        tasks = sets.generate(seed, 40)
        found = [f"{t.id}: {p}" for t in tasks for p in problems(t)]
    except sets.GenerationError as e:
        return seed, 0, [str(e)], time.perf_counter() - started
    finally:
        clear_templates()  # a worker generates a hundred sets: keep its memory flat
    return seed, len({t.id for t in tasks}), found, time.perf_counter() - started


@pytest.mark.slow
def test_every_seed_from_1_to_200_yields_40_verified_tasks(
    capsys: pytest.CaptureFixture[str], record_property: Callable[[str, object], None]
) -> None:
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_generate_and_verify, SLOW_SEEDS))
    wall = time.perf_counter() - started
    seconds = [r[3] for r in results]
    record_property("wall_s", round(wall, 1))
    with capsys.disabled():  # the figure docs/development.md quotes
        print(
            f"\n{len(results)} seeds on 2 workers: {wall:.0f} s wall, per set (generated and "
            f"verified again) median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s"
        )
    bad = [(seed, n, found[:3]) for seed, n, found, _ in results if n != 40 or found]
    assert bad == []
