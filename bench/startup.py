"""The front door: how long ``srez`` takes to answer, and the main job whole.

Each command is run as a user runs it (the installed ``srez`` beside this interpreter, a fresh
process each time) and timed whole, wall clock, the median of a few runs; each figure is also
given as a ratio to ``python -c pass`` measured in the same run (the interpreter's own start, the
floor no command can go under), so a busy machine moves both sides together:

* ``version``, ``help``, ``tasks_list``, ``tasks_show``: ``srez --version``, ``--help``,
  ``tasks list``, ``tasks show sre-007``;
* ``eval_scripted``: ``srez eval --agent scripted --tasks all --backend inline`` (40 runs written,
  the floors played beside them, the report);
* ``make_run``: ``make run``'s sweep, six agents on the 40 tasks (240 runs);
* ``inline_runs_per_s``: runs of the inline host per second in one process (``run_inline`` of the
  scripted agent on the 40 tasks, warm: the tasks' histories already computed), and the time of
  one run against ``python -c pass``.

Bytecode is cached as on a user's machine: the commands run without ``PYTHONDONTWRITEBYTECODE``
(a sandbox that sets it pays a compile of every module at every start, about 0.1 s, which no user
pays), after one untimed run of each that writes the caches.

``python -m bench --only startup`` prints this section alone (about half a minute).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from srez_env import agent_registry

SREZ: Final = Path(sys.executable).parent / "srez"
MAIN_JOB_AGENTS: Final = ",".join(agent_registry.OFFLINE)
QUICK: Final = {
    "version": ["--version"],
    "help": ["--help"],
    "tasks_list": ["tasks", "list"],
    "tasks_show": ["tasks", "show", "sre-007"],
}
"""The commands that only print, by figure name."""


_ENV: Final = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(argv: Sequence[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=_ENV, check=True, capture_output=True, timeout=300)
    return time.perf_counter() - started


def _median(argv: Sequence[str], repeats: int, cwd: Path) -> float:
    _wall(argv, cwd)  # writes the bytecode caches a first run writes on any machine
    return statistics.median(_wall(argv, cwd) for _ in range(repeats))


def _eval_argv(agents: str, results: Path) -> list[str]:
    argv = [str(SREZ), "eval", "--agent", agents, "--tasks", "all", "--seeds", "1"]
    return [*argv, "--backend", "inline", "--results", str(results)]


def _sweep(agents: str, repeats: int, work: Path) -> float:
    """The median wall time of ``srez eval`` of ``agents`` on every task, each time into a fresh
    results folder (a results folder never holds a run twice)."""
    _wall(_eval_argv(agents, work / f"{agents[:8]}-warm"), work)
    times = []
    for i in range(repeats):
        times.append(_wall(_eval_argv(agents, work / f"{agents[:8]}-{i}"), work))
    return statistics.median(times)


def _inline_runs_per_s(work: Path) -> tuple[float, int]:
    """Runs per second of ``run_inline`` (scripted, the 40 tasks, warm), and the runs timed."""
    from srez_client.backends.inline.host import run_inline
    from srez_env.tasks import load_tasks

    tasks = load_tasks()
    for task in tasks:  # warm: each task's history computed once, as in any sweep
        run_inline(task, "scripted", 0, work / "warm")
    started = time.perf_counter()
    for task in tasks:
        run_inline(task, "scripted", 0, work / "timed")
    return len(tasks) / (time.perf_counter() - started), len(tasks)


def _figure(seconds: float, floor: float) -> dict[str, float]:
    return {"s": round(seconds, 3), "vs_python": round(seconds / floor, 2)}


def startup_figures(repeats: int = 5, sweeps: int = 3) -> dict[str, Any]:
    """Every figure of this section (``repeats`` runs of each quick command, ``sweeps`` of each
    whole evaluation)."""
    with tempfile.TemporaryDirectory(prefix="srez-bench-startup-") as tmp:
        work = Path(tmp)
        floor = _median([sys.executable, "-c", "pass"], repeats, work)
        figures: dict[str, Any] = {"python_c_pass_s": round(floor, 4)}
        for name, args in QUICK.items():
            figures[name] = _figure(_median([str(SREZ), *args], repeats, work), floor)
        figures["eval_scripted"] = _figure(_sweep("scripted", sweeps, work), floor)
        figures["make_run"] = _figure(_sweep(MAIN_JOB_AGENTS, sweeps, work), floor)
        per_s, runs = _inline_runs_per_s(work)
        figures["inline_runs_per_s"] = {
            "runs": runs,
            "runs_per_s": round(per_s, 1),
            "ms_per_run": round(1000 / per_s, 2),
            "run_vs_python": round(1 / per_s / floor, 2),
        }
    return figures
