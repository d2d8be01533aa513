"""The Python API of managed runs: what the CLI and the TUI's dashboard call.

``export_queue``, ``delete_target_artifacts``, ``delete_managed`` and ``start_runner`` live in
:mod:`.maintenance` and are re-exported here.

Plain functions over a results root (the folder holding ``managed/``); all of them are
synchronous and quick (the runner itself is a separate process: :func:`start_runner`). Bad
input raises :class:`~srez_client.errors.UsageError`; a busy or broken run raises
:class:`~srez_client.managed.store.ManagedError`.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from srez_client.backends.config import BackendSettings
from srez_client.backends.registry import BACKEND_NAMES
from srez_client.errors import UsageError
from srez_client.managed.ledger import BudgetLedger, today
from srez_client.managed.maintenance import (
    delete_managed,
    delete_target_artifacts,
    export_queue,
    start_runner,
)
from srez_client.managed.models import (
    ManagedRun,
    PauseInfo,
    RunnerState,
    Target,
    check_name,
    make_target,
    parse_target,
)
from srez_client.managed.store import (
    ManagedError,
    ManagedPaths,
    live_runner,
    load_checkpoint,
    load_run,
    read_pause,
    runner_alive,
    write_model,
    write_pause,
)
from srez_client.managed.store import clear_pause as _clear_pause
from srez_client.managed.summarize import summarize as _summarize
from srez_client.managed.summarize import task_difficulties
from srez_client.managed.summary import CombinedSummary, TargetSummary, target_summary


class BudgetStatus(BaseModel):
    """Today's budget, across every managed run sharing ``$SREZ_STATE``."""

    model_config = ConfigDict(frozen=True)
    day: str
    budget_usd: float
    spent_usd: float
    outstanding_usd: float
    left_usd: float


class ManagedStatus(BaseModel):
    """What ``srez managed status`` shows, and what a dashboard polls."""

    model_config = ConfigDict(frozen=True)
    name: str
    backend: str
    tasks: int
    runner: RunnerState | None
    """The live runner (None: no runner)."""
    pause: PauseInfo | None
    targets: list[TargetSummary]
    """Per target: state, completed counts, scores, errors (provider vs agent vs harness)."""
    budget: BudgetStatus | None
    """None when the run has no daily budget."""


def _paths(root: Path, name: str) -> ManagedPaths:
    return ManagedPaths.of(root, name)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _state_dir(state_dir: Path | None) -> Path:
    return state_dir or BackendSettings.from_env(os.environ).state_dir


def list_managed(root: Path) -> list[str]:
    """Names of the managed runs under ``root/managed`` (those with a ``run.json``)."""
    folder = root / "managed"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / "run.json").is_file())


def default_targets(baselines: Sequence[str], models: Sequence[str] | None) -> list[Target]:
    """Targets for ``create``: the baselines, then one ``llm`` target per model; ``models``
    None means the catalogue's ``default`` rows (``notes/available_models.md``)."""
    if models is None:
        from srez_client.models_catalog import load_catalog

        models = load_catalog().defaults
    return [make_target(b) for b in baselines] + [make_target("llm", m) for m in models]


def create_managed(
    root: Path,
    name: str,
    *,
    targets: Sequence[Target],
    tasks: Sequence[str],
    backend: str = "local",
    daily_budget_usd: float | None = None,
    cost_cap_usd: float | None = None,
    time_limit_s: float | None = None,
    run_seed: int = 0,
) -> ManagedRun:
    """Create ``root/managed/<name>/run.json``.

    Raises:
        UsageError: Bad name, existing run, unknown backend, no targets or tasks, duplicate
            targets, or a daily budget with LLM targets but no per-task cost cap.
    """
    paths = _paths(root, name)
    if paths.run_json.exists():
        msg = f"managed run {name!r} already exists ({paths.root}); pick another name"
        raise UsageError(msg)
    if backend not in BACKEND_NAMES:
        msg = f"backend {backend!r} is not available (available: {', '.join(BACKEND_NAMES)})"
        raise UsageError(msg)
    run = ManagedRun(
        name=name,
        created_at=_now(),
        backend=backend,
        results_root=str(root.resolve()),
        tasks=list(tasks),
        targets=list(targets),
        run_seed=run_seed,
        daily_budget_usd=daily_budget_usd,
        cost_cap_usd=cost_cap_usd,
        time_limit_s=time_limit_s,
    )
    _check(run)
    paths.root.mkdir(parents=True, exist_ok=True)
    write_model(paths.run_json, run)
    return run


def _check(run: ManagedRun) -> None:
    if not run.tasks:
        msg = "a managed run needs at least one task (--tasks all or a comma list of ids)"
        raise UsageError(msg)
    if not run.targets:
        msg = "a managed run needs at least one target (--baselines and/or --models)"
        raise UsageError(msg)
    names = [t.name for t in run.targets]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        msg = f"target {dupes[0]!r} is listed twice"
        raise UsageError(msg)
    needs_cap = run.daily_budget_usd is not None and run.cost_cap_usd is None
    if needs_cap and any(t.is_llm for t in run.targets):
        msg = "--daily-budget-usd needs --cost-cap-usd (the amount reserved per LLM task)"
        raise UsageError(msg)


def add_target(root: Path, name: str, spec: str) -> Target:
    """Append a target (``scripted``, ``llm:openai/gpt-4o`` or a bare slug) to the queue."""
    paths = _paths(root, name)
    run = load_run(paths)
    target = parse_target(spec)
    updated = run.model_copy(update={"targets": [*run.targets, target]})
    _check(updated)
    write_model(paths.run_json, updated)
    return target


def remove_target(root: Path, name: str, target: str) -> None:
    """Take a target out of the queue; its folder and results stay (add it back to resume).

    Raises:
        UsageError: Unknown target. ManagedError: the runner is running it now.
    """
    paths = _paths(root, name)
    run = load_run(paths)
    if run.target(check_name(target, "target name")) is None:
        msg = f"managed run {name!r} has no target {target!r}"
        raise UsageError(msg)
    live = live_runner(paths)
    if live is not None and live.target == target:
        msg = f"target {target!r} is running now (pid {live.pid}); pause or stop first"
        raise ManagedError(msg)
    write_model(
        paths.run_json,
        run.model_copy(update={"targets": [t for t in run.targets if t.name != target]}),
    )


def status(
    root: Path,
    name: str,
    *,
    state_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ManagedStatus:
    """The run's live state: runner, pause, per-target progress and scores, today's budget."""
    paths = _paths(root, name)
    run = load_run(paths)
    diffs = task_difficulties(run)
    targets = [target_summary(run, t, load_checkpoint(paths, t.name), diffs) for t in run.targets]
    budget = None
    if run.daily_budget_usd is not None:
        day = today(environ)
        view = BudgetLedger(_state_dir(state_dir) / "budget").view(day)
        budget = BudgetStatus(
            day=day,
            budget_usd=run.daily_budget_usd,
            spent_usd=view.spent_usd,
            outstanding_usd=view.outstanding_usd,
            left_usd=view.left(run.daily_budget_usd),
        )
    return ManagedStatus(
        name=run.name,
        backend=run.backend,
        tasks=len(run.tasks),
        runner=live_runner(paths),
        pause=read_pause(paths),
        targets=targets,
        budget=budget,
    )


def pause(root: Path, name: str, message: str = "paused by the user") -> None:
    """Write ``PAUSE`` (reason ``user``): the current task finishes, nothing new starts."""
    paths = _paths(root, name)
    load_run(paths)
    write_pause(paths, PauseInfo(reason="user", at=_now(), day=today(), message=message))


def clear_pause(root: Path, name: str) -> bool:
    """Remove ``PAUSE``; True if there was one. ``run`` starts again from the checkpoints."""
    paths = _paths(root, name)
    load_run(paths)
    return _clear_pause(paths)


def stop(root: Path, name: str, *, timeout_s: float = 15.0) -> bool:
    """Stop the runner and its in-flight run now (SIGTERM; SIGKILL after ``timeout_s``).

    Returns:
        Whether a runner was running.
    """
    paths = _paths(root, name)
    load_run(paths)
    live = live_runner(paths)
    if live is None:
        return False
    os.kill(live.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while runner_alive(paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    if runner_alive(paths):
        os.kill(live.pid, signal.SIGKILL)  # the resume's cleanup pass finishes its record
        while runner_alive(paths) and time.monotonic() < deadline + 5:
            time.sleep(0.05)
    return True


def summarize(root: Path, name: str, *, png: bool = True) -> CombinedSummary:
    """Rebuild every target summary and the combined ``summary.json``, ``.md`` and ``.png``."""
    return _summarize(_paths(root, name), png=png)


def read_run(root: Path, name: str) -> ManagedRun:
    """``run.json`` of a managed run."""
    return load_run(_paths(root, name))


__all__ = [
    "BudgetStatus",
    "ManagedStatus",
    "add_target",
    "clear_pause",
    "create_managed",
    "default_targets",
    "delete_managed",
    "delete_target_artifacts",
    "export_queue",
    "list_managed",
    "pause",
    "read_run",
    "remove_target",
    "start_runner",
    "status",
    "stop",
    "summarize",
]
