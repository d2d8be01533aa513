"""``srez eval`` on a daemon backend: every (agent, task, seed) as a run, N at a time.

Each run is launched, waited for, mirrored into the results layout and then removed from the
backend's state (its results stay). A run that fails to launch or to mirror is reported on stderr
and left out of the report; the others go on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

import orjson
from tqdm import tqdm

from srez_client.backends.base import Backend, BackendSettings, LaunchSpec, get_backend
from srez_client.errors import ClientError
from srez_client.mirror_io import read_small_file
from srez_client.runs import run_to_results, scratch_dir
from srez_env.agents.llm import LLM_SPECS
from srez_env.errors import EnvError
from srez_env.task import Task

logger = logging.getLogger(__name__)

Job = tuple[str, Task, int]
"""(agent spec, task, run seed)."""
Row = dict[str, object]


def eval_on_backend(
    backend_name: str, jobs: list[Job], results_root: Path, parallel: int, model: str = "none"
) -> tuple[list[Row], list[Row]]:
    """Run ``jobs`` on a backend; returns (grades as in ``result.json``, one row per run).

    ``model`` is the slug of the jobs whose agent is an LLM (the baselines run with ``none``).

    Raises:
        ClientError: If every run failed (the first failure).
    """
    settings = BackendSettings.from_env(os.environ)
    backend = get_backend(backend_name, settings)
    return asyncio.run(
        _eval(backend, jobs, results_root, parallel, scratch_dir(settings.state_dir), model)
    )


async def _eval(
    backend: Backend,
    jobs: list[Job],
    results_root: Path,
    parallel: int,
    scratch: Path,
    model: str = "none",
) -> tuple[list[Row], list[Row]]:
    gate = asyncio.Semaphore(parallel)
    bar = tqdm(total=len(jobs), file=sys.stderr, disable=not sys.stderr.isatty(), unit="run")

    async def one(spec: str, task: Task, seed: int) -> tuple[Row, Row]:
        async with gate:
            launch = LaunchSpec(
                task_id=task.id,
                agent_spec=spec,
                model=model if spec in LLM_SPECS else "none",
                run_seed=seed,
                results_root=results_root,
            )
            outcome = await run_to_results(backend, launch, scratch)
            await backend.remove(outcome.handle)
        data = read_small_file(outcome.results_dir, b"result.json", 64 << 20)
        if data is None:
            msg = f"run {outcome.handle.run_id} ({task.id}) has no result.json; see {outcome.results_dir}"
            raise ClientError(msg)
        grade = orjson.loads(data)
        summary = outcome.summary
        row: Row = {
            "task_id": task.id,
            "agent": outcome.handle.agent,
            "run_seed": seed,
            "status": summary.status if summary else "error",
            "reward": summary.reward if summary else None,
            "run_dir": str(outcome.results_dir),
        }
        bar.update()
        return grade, row

    try:
        done = await asyncio.gather(*(one(*job) for job in jobs), return_exceptions=True)
    finally:
        bar.close()
    grades: list[Row] = []
    rows: list[Row] = []
    failures: list[BaseException] = []
    for (spec, task, seed), result in zip(jobs, done, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, ClientError | EnvError | OSError):
                raise result
            failures.append(result)
            sys.stderr.write(f"srez: warning: {spec} {task.id} seed {seed}: {result}\n")
            continue
        grades.append(result[0])
        rows.append(result[1])
    if failures and not grades:
        raise failures[0]
    return grades, rows
