"""How long a fresh 40-task set takes (docs/environment.md §6.15): ``srez tasks generate``'s work
for a few seeds, against loading and verifying the 40 shipped task files in the same process.

* ``first_set_s``: the set of :data:`FIRST_SEED` in a process that has generated nothing yet, so
  it also pays what a process pays once (the matrix's rows expanded into their typical tasks,
  the range calibrators' reference worlds learnt): what ``srez tasks generate`` costs but its
  imports, against the 20 s target.
* ``set_s``: each of :data:`SEEDS`' sets after it, generated and verified (every task held to
  :func:`srez_env.generator.verify.problems`), and ``median_set_s`` their median. 104 and 8001
  have a row that needs the generator's second, deeper pass (§6.15); 4242 is the test suite's.
* ``verify_shipped_s``: loading the 40 shipped files and holding each to the same contract (the
  range learners aside): the least a set of 40 verified tasks can cost, so
  ``median_vs_verify_shipped`` is what drawing and refusing worlds adds to verifying the kept ones.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Final

GENERATOR_TARGET_S: Final = 20.0
"""One 40-task set from a fresh process, at most."""
FIRST_SEED: Final = 31337
SEEDS: Final = (104, 8001, 4242)
TASKS_PER_SET: Final = 40


def set_seconds(seed: int, count: int = TASKS_PER_SET) -> float:
    """Generates the ``count``-task set of ``seed``; returns the seconds it took."""
    from srez_env.generator import sets

    started = time.perf_counter()
    tasks = sets.generate(seed, count)
    elapsed = time.perf_counter() - started
    if len(tasks) != count:  # never expected: generate raises rather than fall short
        msg = f"seed {seed}: {len(tasks)} tasks, not {count}"
        raise RuntimeError(msg)
    return elapsed


def verify_shipped(count: int = TASKS_PER_SET) -> tuple[float, int]:
    """Loads and verifies the first ``count`` shipped task files; returns the seconds and how
    many passed."""
    from srez_env.generator.taskfiles import TASKS_DIR
    from srez_env.generator.verify import problems
    from srez_env.tasks import load_task

    paths = sorted(TASKS_DIR.glob("sre-*.yaml"))[:count]
    started = time.perf_counter()
    passed = sum(not problems(load_task(p)) for p in paths)
    return time.perf_counter() - started, passed


def generator_figures(
    first: int = FIRST_SEED, seeds: tuple[int, ...] = SEEDS, count: int = TASKS_PER_SET
) -> dict[str, Any]:
    """The figures of the module docstring (``count`` smaller only in its test)."""
    first_s = set_seconds(first, count)
    per_seed = {seed: set_seconds(seed, count) for seed in seeds}
    median_s = statistics.median(per_seed.values())
    verify_s, verified = verify_shipped(count)
    return {
        "tasks_per_set": count,
        "first_seed": first,
        "first_set_s": round(first_s, 2),
        "target_s": GENERATOR_TARGET_S,
        "first_vs_target": round(first_s / GENERATOR_TARGET_S, 3),
        "set_s": {str(seed): round(s, 2) for seed, s in per_seed.items()},
        "median_set_s": round(median_s, 2),
        "median_vs_target": round(median_s / GENERATOR_TARGET_S, 3),
        "verify_shipped_s": round(verify_s, 2),
        "shipped_verified": verified,
        "median_vs_verify_shipped": round(median_s / verify_s, 2),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(generator_figures(), indent=2))
