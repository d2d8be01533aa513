"""Generates the 40-task set of every seed given, in a process pool, and tabulates the tasks
that fail and the draws each task needed (docs/environment.md §6.15).

    python env/tools/seed_survey.py 1-200 8001 [--jobs 2]

Prints one line per failing task (seed, task id, row, last problem), the rows that needed the
most draws, and the time per set; exits 1 when any task failed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SeedReport:
    seed: int
    seconds: float
    failures: tuple[tuple[str, str], ...]
    """(task id and row, the generator's message) per task that never verified."""
    draws: tuple[tuple[str, int], ...]
    """(row id, worlds drawn) per task."""


def survey(seed: int) -> SeedReport:
    """Realises every member of the set of ``seed`` alone, counting the worlds each drew."""
    from srez_env.generator import matrix, sets
    from srez_env.sim.scenario import clear_templates

    drawn = Counter[str]()
    world_seed = sets._world_seed

    def counting(set_seed: int, task_id: str, attempt: int) -> int:
        drawn[task_id] += 1
        return world_seed(set_seed, task_id, attempt)

    sets._world_seed = counting  # type: ignore[assignment]
    rows = matrix.load().rows
    failures: list[tuple[str, str]] = []
    draws: list[tuple[str, int]] = []
    started = time.perf_counter()
    for n in range(len(rows)):
        row = rows[n % len(rows)]
        task_id = sets.member_id(seed, n)
        try:
            sets.member(rows, seed, n)
        except sets.GenerationError as e:
            failures.append((f"{task_id} ({row.id})", str(e)))
        draws.append((row.id, drawn[task_id]))
    sets._world_seed = world_seed  # type: ignore[assignment]
    clear_templates()  # a worker surveys many sets: keep its memory flat
    return SeedReport(seed, time.perf_counter() - started, tuple(failures), tuple(draws))


def _seeds(specs: list[str]) -> list[int]:
    out: list[int] = []
    for spec in specs:
        low, _, high = spec.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("seeds", nargs="+", help="seeds or ranges (1-200)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    seeds = _seeds(args.seeds)
    started = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        reports = list(pool.map(survey, seeds))
    failed = 0
    most: Counter[str] = Counter()
    for report in reports:
        for task, message in report.failures:
            failed += 1
            print(f"FAIL seed {report.seed}: {task}: {message}")
        for row, n in report.draws:
            most[row] = max(most[row], n)
    print("most draws per row:", ", ".join(f"{r}={n}" for r, n in most.most_common(12)))
    times = [r.seconds for r in reports]
    print(
        f"{len(seeds)} sets, {failed} failing tasks; per set median {statistics.median(times):.1f}s"
        f" max {max(times):.1f}s; wall {time.perf_counter() - started:.0f}s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
