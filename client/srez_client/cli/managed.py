"""``srez managed ...``: long multi-target evaluations (docs/design.md §10; docs/managed.md).

``create``, ``add-target``, ``remove-target``, ``list``, ``status``, ``run``, ``pause``,
``clear-pause``, ``stop``, ``summarize``, ``export-queue``, ``delete-target-artifacts`` and
``delete``. Every command takes ``--results DIR`` (default ``results``): the managed run lives in
``DIR/managed/NAME``. A bad input is one line ``srez: error: ...`` and exit status 2; ``run``
exits 0 when its queue is done, 75 when it paused (user or budget) and 143 when stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from srez_client.backends.config import BackendSettings
from srez_client.backends.registry import get_backend
from srez_client.cli.options import comma_list
from srez_client.errors import UsageError
from srez_client.managed import api
from srez_client.managed.models import BASELINES
from srez_client.managed.render import with_interval
from srez_client.managed.runner import run_managed
from srez_client.managed.store import ManagedPaths
from srez_client.managed.summary import TargetSummary
from srez_client.provider_keys import check_provider_keys
from srez_client.results.table import render_table


def _names(option: str, text: str | None) -> list[str]:
    """A ``--baselines`` or ``--models`` value: not given or ``none`` is no names."""
    return [] if text is None or text.strip() == "none" else comma_list(option, text)


def cmd_create(args: argparse.Namespace) -> int:
    """``srez managed create``."""
    from srez_env.tasks import load_tasks

    # The defaults fill in a queue the user did not describe at all; naming only baselines (or
    # only models) means only those, never the catalogue's paid models added behind their back.
    neither = args.baselines is None and args.models is None
    baselines = list(BASELINES) if neither else _names("--baselines", args.baselines)
    models = None if neither else _names("--models", args.models)
    ids = None if args.tasks == "all" else comma_list("--tasks", args.tasks)
    tasks = [t.id for t in load_tasks(ids)]
    run = api.create_managed(
        args.results,
        args.name,
        targets=api.default_targets(baselines, models),
        tasks=tasks,
        backend=args.backend,
        daily_budget_usd=args.daily_budget_usd,
        cost_cap_usd=args.cost_cap_usd,
        time_limit_s=args.time_limit,
        run_seed=args.seed,
    )
    names = ", ".join(t.name for t in run.targets)
    print(
        f"created managed run {run.name}: {len(run.tasks)} tasks × {len(run.targets)} targets ({names})"
    )
    return 0


def cmd_add_target(args: argparse.Namespace) -> int:
    """``srez managed add-target NAME TARGET``."""
    target = api.add_target(args.results, args.name, args.target)
    print(f"added target {target.name}")
    return 0


def cmd_remove_target(args: argparse.Namespace) -> int:
    """``srez managed remove-target NAME TARGET``."""
    api.remove_target(args.results, args.name, args.target)
    print(f"removed target {args.target} from the queue (its results stay)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """``srez managed list``."""
    for name in api.list_managed(args.results):
        print(name)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """``srez managed status NAME``."""
    st = api.status(args.results, args.name)
    if args.json:
        print(json.dumps(st.model_dump(mode="json"), indent=2))
        return 0
    runner = (
        f"running (pid {st.runner.pid}, {st.runner.target} {st.runner.task})"
        if st.runner
        else "not running"
    )
    print(f"managed run {st.name}: {st.tasks} tasks, backend {st.backend}, runner {runner}")
    if st.pause is not None:
        print(f"paused ({st.pause.reason}): {st.pause.message}")
    if st.budget is not None:
        b = st.budget
        print(
            f"budget {b.day}: ${b.spent_usd:.4f} spent, ${b.outstanding_usd:.4f} reserved, ${b.left_usd:.4f} left of ${b.budget_usd:.2f}"
        )
    rows = [
        [
            s.target,
            s.state,
            f"{s.completed}/{s.tasks_total}",
            with_interval(s.mean_reward, s.reward_ci),
            str(s.provider_errors),
            str(s.agent_errors),
            str(s.harness_errors),
            f"${s.cost_usd:.4f}",
        ]
        for s in st.targets
    ]
    headers = [
        "target",
        "state",
        "completed",
        "reward",
        "provider err",
        "agent err",
        "harness err",
        "cost",
    ]
    print(render_table(headers, rows))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """``srez managed run NAME [--target T]``: the runner process."""
    paths = ManagedPaths.of(args.results, args.name)
    run = api.read_run(args.results, args.name)
    check_provider_keys(_models_to_run(args), os.environ)
    settings = BackendSettings.from_env(os.environ)
    backend = get_backend(run.backend, settings)

    def echo(line: str) -> None:
        sys.stderr.write(f"srez: {line}\n")
        sys.stderr.flush()

    status = asyncio.run(
        run_managed(
            paths,
            backend,
            settings.state_dir,
            only=args.target,
            retry_failed=args.retry_failed,
            wait=args.wait,
            echo=echo,
        )
    )
    targets = api.status(args.results, args.name).targets
    print(target_table([t for t in targets if args.target in (None, t.target)]))
    return status


def target_table(targets: list[TargetSummary]) -> str:
    """What ``managed run`` ends with: per target, tasks completed of all, resolved, mean reward
    (with its 95 % interval) and errors (agent, provider and harness)."""
    rows = [
        [
            s.target,
            "baseline" if s.baseline else "model",
            f"{s.completed}/{s.tasks_total}",
            str(round((s.resolved_rate or 0.0) * s.completed)),
            with_interval(s.mean_reward, s.reward_ci),
            str(s.agent_errors + s.provider_errors + s.harness_errors),
        ]
        for s in targets
    ]
    headers = ["target", "kind", "runs", "resolved", "mean reward", "errors"]
    return render_table(headers, rows, right=[2, 3, 4, 5])


def _models_to_run(args: argparse.Namespace) -> list[str]:
    """The models of the LLM targets ``managed run`` may start: those with tasks left (or with
    failed ones, under ``--retry-failed``), of ``--target`` only when it is given."""
    run = api.read_run(args.results, args.name)
    states = {t.target: t.state for t in api.status(args.results, args.name).targets}
    return [
        t.model
        for t in run.targets
        if t.is_llm
        and args.target in (None, t.name)
        and (args.retry_failed or states.get(t.name) != "done")
    ]


def cmd_pause(args: argparse.Namespace) -> int:
    """``srez managed pause NAME``."""
    api.pause(args.results, args.name)
    print(f"paused {args.name}: the current task finishes, nothing new starts")
    return 0


def cmd_clear_pause(args: argparse.Namespace) -> int:
    """``srez managed clear-pause NAME``."""
    had = api.clear_pause(args.results, args.name)
    print("pause cleared" if had else "was not paused")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """``srez managed stop NAME``."""
    was = api.stop(args.results, args.name)
    print("stopped" if was else "no runner was running")
    return 0


def cmd_summarize(args: argparse.Namespace) -> int:
    """``srez managed summarize NAME``."""
    api.summarize(args.results, args.name, png=not args.no_png)
    print(f"summaries written in {ManagedPaths.of(args.results, args.name).root}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``srez managed export-queue NAME``."""
    for path in api.export_queue(args.results, args.name):
        print(path)
    return 0


def _confirm(args: argparse.Namespace, what: str) -> None:
    if args.yes:
        return
    if not sys.stdin.isatty():
        msg = f"refusing to delete {what} without confirmation; pass --yes"
        raise UsageError(msg)
    answer = input(f"delete {what}? type the run name ({args.name}) to confirm: ")
    if answer.strip() != args.name:
        msg = "not confirmed; nothing deleted"
        raise UsageError(msg)


def cmd_delete_artifacts(args: argparse.Namespace) -> int:
    """``srez managed delete-target-artifacts NAME TARGET``."""
    _confirm(args, f"the results of target {args.target} of {args.name}")
    deleted = api.delete_target_artifacts(args.results, args.name, args.target)
    print(f"deleted {len(deleted)} results folders of {args.target}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    """``srez managed delete NAME``."""
    _confirm(args, f"managed run {args.name}")
    print(f"deleted {api.delete_managed(args.results, args.name)}")
    return 0
