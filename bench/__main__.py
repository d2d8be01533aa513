"""``make bench``: performance figures, printed as one JSON object: ``env`` (below), ``generator``
(:mod:`bench.generator`: a fresh 40-task set, against verifying the 40 shipped ones), ``daemon``
(:mod:`bench.daemon`), ``backends`` (:mod:`bench.docker`), ``llm`` (:mod:`bench.llm`),
``managed`` (:mod:`bench.managed`), ``tui`` (:mod:`bench.tui`), ``sandbox``
(:mod:`bench.sandbox`: what the ``local`` backend's bubblewrap sandbox adds to an agent's start),
``rl`` (:mod:`bench.rl`: the Gymnasium environment's steps per second against ``SREEnv.step``)
``mcp`` (:mod:`bench.mcp`: what ``srez mcp`` adds to a tool call, and an episode over it) and
``thin`` (:mod:`bench.thin`: an agent process with and without litellm, and concurrent ``local``
LLM runs through the model relay; 1 and 10 runs here, the 10/50/100 scale with ``make bench-thin``) and
``report`` (:mod:`bench.report`: a report's build time with its bootstrap intervals and without)
and ``startup`` (:mod:`bench.startup`: how long ``srez`` takes to answer, ``srez eval`` and
``make run`` whole, and the inline host's runs per second, each against ``python -c pass``) and
``view`` (:mod:`bench.view`: ``srez view``'s runs list of 10,000 finished runs, against 300 ms, and
a live entry from a ``local`` run's daemon into chromium's DOM, against 50 ms p99) and
``template`` (:mod:`bench.run_template`: a ``local`` run's daemon forked from the warm run
template against started afresh: CPU-seconds per start, launch to ready, idle RSS and PSS, the
template's own RSS).

``python -m bench --only startup,report`` prints only the sections named (comma list).

Every figure is measured in this process and, where it makes sense, reported as a ratio against
a reference measured in the same run (or the design target it must stay under), so a slow or busy
machine moves both sides together:

* ``step``: the median and p90 time of one ``SREEnv.step()`` over every step of the three
  baselines on all 40 tasks, against the 1 ms target.
* ``scripted_all_tasks``: the scripted expert on all 40 tasks inline (reset, steps, grade), from a
  cold process state (no per-task history yet) and warm, against the 2 s target.
* ``episodes_per_s``: whole episodes per second for each baseline (warm).
* ``history_fork``: starting an episode by forking the per-task history computed once, against
  rebuilding the 240 minutes of history for every episode (what the fork saves).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any, Final

from srez_env.agents import make_agent
from srez_env.env import SREEnv
from srez_env.grade import clear_reference_cache, grade_episode
from srez_env.sim.scenario import build_world, clear_templates
from srez_env.task import Task
from srez_env.tasks import load_tasks

BASELINES = ("scripted", "heuristic", "random")
STEP_TARGET_MS = 1.0
SCRIPTED_TARGET_S = 2.0


def _episode(task: Task, spec: str, step_times: list[float] | None = None) -> None:
    env = SREEnv(task, agent=spec)
    observation: Any = env.reset()
    agent = make_agent(spec, task, 0)
    while not env.done:
        action = agent.act(observation)
        started = time.perf_counter()
        observation = env.step(action).observation
        if step_times is not None:
            step_times.append(time.perf_counter() - started)
    grade_episode(env.record())


def _timed(fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _sweep(tasks: list[Task], spec: str, step_times: list[float] | None = None) -> float:
    def run() -> None:
        for task in tasks:
            _episode(task, spec, step_times)

    return _timed(run)


def measure() -> dict[str, Any]:
    """Runs every measurement and returns the figures."""
    tasks = load_tasks()
    clear_templates()
    clear_reference_cache()
    cold = _sweep(tasks, "scripted")
    warm = _sweep(tasks, "scripted")
    step_times: list[float] = []
    per_baseline = {spec: _sweep(tasks, spec, step_times) for spec in BASELINES}
    step_ms = sorted(1000 * t for t in step_times)
    median_ms = statistics.median(step_ms)
    p90_ms = step_ms[int(0.9 * (len(step_ms) - 1))]

    def fork_all() -> None:
        for task in tasks:
            SREEnv(task).reset()

    def rebuild_all() -> None:
        for task in tasks:
            build_world(task).at(0).snapshot()

    fork_s = min(_timed(fork_all) for _ in range(3))
    rebuild_s = min(_timed(rebuild_all) for _ in range(3))
    return {
        "step": {
            "median_ms": round(median_ms, 4),
            "p90_ms": round(p90_ms, 4),
            "steps_measured": len(step_ms),
            "target_ms": STEP_TARGET_MS,
            "median_vs_target": round(median_ms / STEP_TARGET_MS, 3),
        },
        "scripted_all_tasks": {
            "tasks": len(tasks),
            "cold_s": round(cold, 3),
            "warm_s": round(warm, 3),
            "target_s": SCRIPTED_TARGET_S,
            "cold_vs_target": round(cold / SCRIPTED_TARGET_S, 3),
        },
        "episodes_per_s": {spec: round(len(tasks) / s, 1) for spec, s in per_baseline.items()},
        "history_fork": {
            "reset_ms_per_episode": round(1000 * fork_s / len(tasks), 3),
            "rebuild_ms_per_episode": round(1000 * rebuild_s / len(tasks), 3),
            "speedup": round(rebuild_s / fork_s, 1),
        },
    }


SECTIONS: Final = (
    "env",
    "generator",
    "daemon",
    "backends",
    "llm",
    "real_model",
    "managed",
    "tui",
    "sandbox",
    "rl",
    "mcp",
    "thin",
    "report",
    "startup",
    "view",
    "template",
)
"""Every section, in the order they are measured and printed."""


def section(name: str) -> Any:
    """Measures one section (its module imported now) and returns its figures."""
    if name == "env":
        return measure()
    if name == "generator":
        from bench.generator import generator_figures

        return generator_figures()
    if name == "daemon":
        from bench.daemon import daemon_figures

        return asyncio.run(daemon_figures())
    if name == "backends":
        from bench.docker import docker_figures

        return asyncio.run(docker_figures())
    if name == "llm":
        from bench.llm import llm_figures

        return llm_figures()
    if name == "real_model":
        from bench.real_model import real_model_figures

        return real_model_figures()
    if name == "managed":
        from bench.managed import bench_managed

        return bench_managed()
    if name == "tui":
        from bench.tui import bench_tui

        return bench_tui()
    if name == "sandbox":
        from bench.sandbox import sandbox_figures

        return asyncio.run(sandbox_figures())
    if name == "rl":
        from bench.rl import rl_figures

        return rl_figures()
    if name == "mcp":
        from bench.mcp import mcp_figures

        return asyncio.run(mcp_figures())
    if name == "thin":
        from bench.thin import thin_figures

        return thin_figures()
    if name == "report":
        from bench.report import report_figures

        return report_figures()
    if name == "startup":
        from bench.startup import startup_figures

        return startup_figures()
    if name == "view":
        from bench.view import view_figures

        return view_figures()
    if name == "template":
        from bench.run_template import template_figures

        return asyncio.run(template_figures())
    msg = f"no bench section {name!r} (sections: {', '.join(SECTIONS)})"
    raise ValueError(msg)


def main(argv: list[str] | None = None) -> None:
    """Prints the figures of every section (or of ``--only``'s) as one JSON object."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only",
        metavar="SECTIONS",
        help=f"a comma list of sections to measure (default all: {', '.join(SECTIONS)})",
    )
    args = parser.parse_args(argv)
    names = list(SECTIONS) if args.only is None else [n.strip() for n in args.only.split(",")]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {unknown[0]!r} (sections: {', '.join(SECTIONS)})")
    figures = {name: section(name) for name in names}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
