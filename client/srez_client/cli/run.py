"""``srez run``: launch one run, wait for it (progress on stderr), mirror it, print its grade.

Anything a run wrote is sanitised before it reaches a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

from srez_client.agent_command import agent_command, parse_option
from srez_client.backends.base import Backend, LaunchSpec, RunHandle
from srez_client.backends.registry import entry_for, make_backend, names_where
from srez_client.cli.options import config_of, model_for, run_async, say
from srez_client.daemon_client.api import DaemonClient
from srez_client.errors import ClientError, UsageError
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import (
    RunOutcome,
    check_backend,
    run_to_results,
    scratch_dir,
    wait_stopped,
)
from srez_client.provider_keys import check_provider_keys
from srez_client.sanitize import sanitize, sanitize_line
from srez_client.task_sets import check_isolated, load_task_set
from srez_daemon.protocol import ToolCall
from srez_daemon.protocol.api import DialogFrame, PhaseFrame
from srez_env.agents.llm import LLM_SPECS

logger = logging.getLogger(__name__)


def cmd_run(args: argparse.Namespace) -> int:
    """``srez run``: launch, wait (progress on stderr), mirror, print the grade summary."""
    config = config_of(args)
    if entry_for(config.kind).writes_results:
        check_isolated(
            [args.agent], config.kind, tasks_dir=args.tasks_dir, task_seed=args.task_seed
        )
    task_set = load_task_set(args.tasks_dir, args.task_seed, config.state_dir, progress=say)
    (task,) = task_set.select([args.task])
    backend = make_backend(config)
    option = None if args.agent_cmd is None else parse_option(args.agent_cmd)
    agent_cmd = agent_command(
        args.agent, option, os.environ
    )  # refuses SREZ_AGENT_CMD for baselines
    spec = LaunchSpec(
        task_id=task.id,
        task_file=task_set.task_file(task),
        agent_spec=args.agent,
        agent_cmd=agent_cmd,
        model=model_for([args.agent], args.model),
        run_seed=args.seed,
        keep=args.keep or args.keep_container,
        time_limit_s=args.timeout,
        results_root=args.results,
    )
    if agent_cmd is not None and not backend.runs_agent_commands:
        hosts = " or ".join(names_where(lambda b: b.runs_agent_commands))
        msg = f"--agent {args.agent} (a custom command) runs on --backend {hosts} only, not {backend.name}"
        raise UsageError(msg)
    check_backend(backend, spec)
    if args.agent in LLM_SPECS:  # a custom command's model and key are its own business
        check_provider_keys([spec.model], os.environ)
    scratch = scratch_dir(config.state_dir)
    return run_async(
        lambda: _run(backend, spec, args.timeout, scratch, keep_container=args.keep_container)
    )


async def _run(
    backend: Backend,
    spec: LaunchSpec,
    limit_s: float | None,
    scratch: Path,
    *,
    keep_container: bool = False,
) -> int:
    """Launch, wait, mirror. SIGINT or SIGTERM stops the run (it writes its summary) and still
    mirrors what it did (exit 130); a second signal acts as usual."""
    launcher = RunLauncher(backend)
    try:
        return await _launch_and_follow(launcher, spec, limit_s, scratch, keep_container)
    finally:
        launcher.close()


async def _launch_and_follow(
    launcher: RunLauncher,
    spec: LaunchSpec,
    limit_s: float | None,
    scratch: Path,
    keep_container: bool,
) -> int:
    backend = launcher.backend
    handle = await launcher.launch(spec)
    say(f"run {handle.run_id}: {handle.task_id} with {handle.agent} on {backend.name}")
    wait_s = None if limit_s is None else limit_s + 120.0  # the daemon ends the agent itself
    if keep_container:
        say(f"run {handle.run_id}: kept until stopped ('srez runs stop {handle.run_id}')")

    async def until_done() -> RunOutcome | None:
        if keep_container:
            await wait_stopped(backend, handle)
            return None  # mirrored below, like an interrupted run
        return await run_to_results(
            backend, spec, scratch, timeout_s=wait_s, progress=say, handle=handle, launcher=launcher
        )

    waiting = asyncio.ensure_future(until_done())
    interrupted = _interrupt_event()
    signalled = asyncio.ensure_future(interrupted.wait())
    watcher = asyncio.ensure_future(_show_progress(backend, handle))
    try:
        await asyncio.wait({waiting, signalled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (watcher, signalled):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    stopped = not waiting.done()
    if stopped:
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        say(f"run {handle.run_id}: interrupted; stopping it, then mirroring what it did")
        await backend.stop(handle)
    outcome = None if stopped else waiting.result()
    if outcome is None:
        current = await backend.get(handle.run_id)
        outcome = await run_to_results(
            backend, spec, scratch, progress=say, handle=current, launcher=launcher
        )
    _print_outcome(outcome)
    if (keep_container or not spec.keep) and outcome.handle.status != "running":
        await backend.remove(outcome.handle)  # everything is in the results folder now
    if spec.keep and outcome.handle.status == "running":
        url = await backend.endpoint(outcome.handle)
        print(f"daemon:   {url} (still serving; 'srez runs stop {handle.run_id}' ends it)")
    ok = outcome.summary is not None and outcome.summary.status == "ok"
    return 130 if stopped else 0 if ok else 1


def _interrupt_event() -> asyncio.Event:
    """An event set by the first SIGINT or SIGTERM (the handlers then go: a second one acts as
    usual)."""
    loop = asyncio.get_running_loop()
    event = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)

    def fire() -> None:
        event.set()
        for sig in signals:
            loop.remove_signal_handler(sig)

    for sig in signals:
        loop.add_signal_handler(sig, fire)
    return event


async def _show_progress(backend: Backend, handle: RunHandle) -> None:
    """Phase changes on stderr (and each step when stderr is a terminal), while the run runs."""
    steps = sys.stderr.isatty()
    try:
        url, token = await backend.endpoint(handle), await backend.token(handle)
        async with DaemonClient(url, token) as client:
            await client.verify()  # even a progress line is only taken from the run's daemon
            async for frame in client.stream():
                if isinstance(frame, PhaseFrame):
                    say(f"run {handle.run_id}: phase {frame.phase}")
                elif steps and isinstance(frame, DialogFrame) and isinstance(frame.entry, ToolCall):
                    say(f"run {handle.run_id}: {sanitize_line(frame.entry.name)}")
    except (ClientError, OSError) as e:  # progress is a courtesy: never fail the run over it
        logger.debug("no live progress for run %s: %s", handle.run_id, e)


def _print_outcome(outcome: RunOutcome) -> None:
    h, s = outcome.handle, outcome.summary
    print(f"run:      {h.run_id} ({h.task_id}, {h.agent}, model {h.model})")
    if s is None:
        print("status:   no summary.json (the run did not finish)")
    else:
        reward = "-" if s.reward is None else f"{s.reward:.3f}"
        yes = {True: "yes", False: "no", None: "-"}
        print(
            f"status:   {s.status}, end {s.end_reason or '-'}, {s.steps or 0} steps, {s.duration_s:.1f} s"
        )
        host = ", graded by the host from its transcript" if s.graded_by == "host" else ""
        print(
            f"grade:    reward {reward}, resolved {yes[s.resolved]}, passed {yes[s.passed]}{host}"
        )
        if s.error:
            print(f"error:    {sanitize(s.error)}")
    print(f"results:  {outcome.results_dir}")
