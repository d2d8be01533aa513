"""``srez eval`` on a daemon backend: every (agent, task, seed) as a run, N at a time.

Each run is launched, waited for, mirrored into the results layout and then removed from the
backend's state (its results stay). A run that fails to launch or to mirror is reported on stderr
and left out of the report; the others go on.

The first SIGINT (Ctrl-C) or SIGTERM interrupts the evaluation: no run starts any more, the runs in
flight are stopped (each daemon ends its agent, grades what was done and writes its summary),
mirrored and removed like any other, and the report covers the runs that ended;
:attr:`EvalResult.interrupted` tells the caller (``srez eval`` exits 130). A second signal acts
as usual.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from tqdm import tqdm

from srez_client.backends.base import Backend, LaunchSpec, RunHandle
from srez_client.backends.config import BackendSettings
from srez_client.backends.registry import config_for, make_backend
from srez_client.errors import ClientError
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import run_to_results, scratch_dir
from srez_client.results.tally import run_row
from srez_client.task_sets import TaskSet
from srez_client.transfer.fs import read_small_file
from srez_env.agents.llm import LLM_SPECS
from srez_env.errors import EnvError
from srez_env.task import Task

logger = logging.getLogger(__name__)

Job = tuple[str, Task, int]
"""(agent spec, task, run seed)."""
Row = dict[str, object]


@dataclass(slots=True)
class EvalResult:
    """What an evaluation on a daemon backend produced."""

    grades: list[Row] = field(default_factory=list)
    """The grades, as in ``result.json``."""
    rows: list[Row] = field(default_factory=list)
    """One row per run."""
    interrupted: bool = False
    """A signal interrupted it: the report is partial."""
    failed: list[Job] = field(default_factory=list)
    """The jobs that could not be run (launch or mirror failed)."""


def eval_on_backend(
    backend_name: str,
    jobs: list[Job],
    results_root: Path,
    parallel: int,
    model: str = "none",
    *,
    environ: Mapping[str, str] | None = None,
    task_set: TaskSet | None = None,
) -> EvalResult:
    """Run ``jobs`` on a backend; returns the grades and one row per run.

    ``model`` is the slug of the jobs whose agent is an LLM (the baselines run with ``none``);
    the backend is configured from ``environ`` (default: this process's environment). The jobs'
    tasks are of ``task_set`` (default: the packaged set); a task of another set travels with
    its launch (:meth:`~srez_client.task_sets.TaskSet.task_file`).

    Raises:
        ClientError: If every run failed (the first failure), unless interrupted.
    """
    settings = BackendSettings.from_env(os.environ if environ is None else environ)
    config = config_for(backend_name, settings)
    backend = make_backend(config)
    try:
        return asyncio.run(
            _eval(
                backend,
                jobs,
                results_root,
                parallel,
                scratch_dir(config.state_dir),
                model,
                task_set,
            )
        )
    finally:
        backend.close()


async def _eval(
    backend: Backend,
    jobs: list[Job],
    results_root: Path,
    parallel: int,
    scratch: Path,
    model: str = "none",
    task_set: TaskSet | None = None,
) -> EvalResult:
    gate = asyncio.Semaphore(parallel)
    launcher = RunLauncher(backend)
    bar = tqdm(total=len(jobs), file=sys.stderr, disable=not sys.stderr.isatty(), unit="run")
    interrupted = asyncio.Event()
    in_flight: dict[str, RunHandle] = {}
    stopping: list[asyncio.Future[None]] = []
    loop = asyncio.get_running_loop()

    def interrupt() -> None:
        interrupted.set()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        sys.stderr.write("srez: interrupted; stopping the runs in flight, then mirroring them\n")
        for handle in list(in_flight.values()):
            stopping.append(asyncio.ensure_future(backend.stop(handle)))

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, interrupt)

    async def one(spec: str, task: Task, seed: int) -> tuple[Row, Row] | None:
        async with gate:
            if interrupted.is_set():
                return None  # never started
            launch = LaunchSpec(
                task_id=task.id,
                agent_spec=spec,
                model=model if spec in LLM_SPECS else "none",
                run_seed=seed,
                results_root=results_root,
                task_file=task_set.task_file(task) if task_set is not None else None,
            )
            handle = await launcher.launch(launch)
            in_flight[handle.run_id] = handle
            try:
                if interrupted.is_set():  # launched while the others were being stopped
                    await backend.stop(handle)
                outcome = await run_to_results(
                    backend, launch, scratch, handle=handle, launcher=launcher
                )
            finally:
                in_flight.pop(handle.run_id, None)
            await backend.remove(outcome.handle)
        data = read_small_file(outcome.results_dir, b"result.json", 64 << 20)
        if data is None:
            msg = f"run {outcome.handle.run_id} ({task.id}) has no result.json; see {outcome.results_dir}"
            raise ClientError(msg)
        grade = orjson.loads(data)
        row = run_row(
            outcome.summary,
            task_id=task.id,
            agent=outcome.handle.agent,
            seed=seed,
            run_dir=outcome.results_dir,
        )
        bar.update()
        return grade, row

    try:
        done = await asyncio.gather(*(one(*job) for job in jobs), return_exceptions=True)
        await asyncio.gather(*stopping, return_exceptions=True)
    finally:
        bar.close()
        launcher.close()
        if not interrupted.is_set():
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
    result = EvalResult(interrupted=interrupted.is_set())
    failures: list[BaseException] = []
    for (spec, task, seed), item in zip(jobs, done, strict=True):
        if isinstance(item, BaseException):
            if not isinstance(item, ClientError | EnvError | OSError):
                raise item
            failures.append(item)
            result.failed.append((spec, task, seed))
            sys.stderr.write(f"srez: warning: {spec} {task.id} seed {seed}: {item}\n")
            continue
        if item is not None:
            result.grades.append(item[0])
            result.rows.append(item[1])
    if failures and not result.grades and not result.interrupted:
        raise failures[0]
    return result
