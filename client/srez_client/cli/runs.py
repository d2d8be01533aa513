"""The ``srez`` commands that launch and manage runs: ``run``, ``runs ...`` and ``attach``.

``RUN`` is a run id or a unique prefix of one. ``--backend`` (default ``local``) says where runs
live and ``--any`` lets a command act on runs this state did not launch (DESIGN.md §8). Progress
goes to stderr, results to stdout; anything a run wrote is sanitised before it reaches a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from srez_client.agent_command import agent_command, parse_option
from srez_client.backends.base import BACKEND_NAMES, Backend, BackendSettings, LaunchSpec, RunHandle
from srez_client.backends.local.recover import is_mirrored, mirror_owned_stopped, results_folder
from srez_client.backends.registry import get_backend as make_backend
from srez_client.daemon_client.api import DaemonClient
from srez_client.daemon_client.follow import attach_plain
from srez_client.daemon_client.terminal import pty_session
from srez_client.errors import ClientError, RunNotFoundError, UsageError
from srez_client.models_catalog import valid_slug
from srez_client.results.finder import find_results, results_rows
from srez_client.results.layout import RUN_ID_RE
from srez_client.results.report import render_table
from srez_client.runs import RunOutcome, check_backend, run_to_results, scratch_dir, wait_stopped
from srez_client.sanitize import sanitize, sanitize_line
from srez_daemon.protocol import ToolCall
from srez_daemon.protocol.api import DialogFrame, PhaseFrame
from srez_env.agents import CUSTOM_PREFIX
from srez_env.agents.llm import LLM_SPECS

logger = logging.getLogger(__name__)

Command = Callable[[argparse.Namespace], int]


def add_commands(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``run``, ``runs`` and ``attach`` to the subcommands ``sub`` of ``srez``."""
    where = parser_class(add_help=False)
    where.add_argument("--backend", default="local", choices=BACKEND_NAMES, help="default local")
    where.add_argument("--any", action="store_true", help="act on runs this state did not launch")

    run = sub.add_parser("run", parents=[where], help="launch one run, wait, mirror, grade")
    run.add_argument("--task", required=True, metavar="ID", help="task id, e.g. sre-001")
    run.add_argument(
        "--agent",
        required=True,
        help="scripted, heuristic, random, replay:FILE, llm, llm-json, or cmd:NAME (your own)",
    )
    run.add_argument(
        "--agent-cmd",
        metavar="CMD",
        help="the command of a cmd:NAME agent, e.g. 'python3 my_agent.py' (default: SREZ_AGENT_CMD)",
    )
    run.add_argument(
        "--model",
        metavar="SLUG",
        help="litellm model slug: for --agent llm/llm-json; optional for cmd:NAME",
    )
    run.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    run.add_argument("--keep", action="store_true", help="keep the daemon serving after the run")
    run.add_argument(
        "--keep-container",
        action="store_true",
        help="keep the run serving until it is stopped ('srez runs stop', 'docker stop'), then mirror",
    )
    run.add_argument("--timeout", type=_positive_float, metavar="S", help="agent time limit (s)")
    run.add_argument("--results", type=Path, default=Path("results"), help="results root")
    run.set_defaults(func=cmd_run)

    runs = sub.add_parser("runs", help="list and manage runs")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="ACTION")
    listing = runs_sub.add_parser("list", parents=[where], help="runs and their state")
    listing.add_argument("--all", action="store_true", help="include runs that exited")
    listing.set_defaults(func=cmd_runs_list)
    for name, func, text in (
        ("stop", cmd_runs_stop, "stop a run (SIGTERM; it writes summary.json)"),
        ("rm", cmd_runs_rm, "stop a run and delete its state (never its results)"),
        ("url", cmd_runs_url, "print the base URL of a run's daemon"),
        ("token", cmd_runs_token, "print a run's token (keep it secret)"),
    ):
        p = runs_sub.add_parser(name, parents=[where], help=text)
        p.add_argument("run", metavar="RUN")
        p.set_defaults(func=func)
        if name == "rm":
            p.add_argument(
                "--force",
                action="store_true",
                help="delete a run that is not mirrored (its files exist nowhere else)",
            )
    logs = runs_sub.add_parser("logs", parents=[where], help="a run's output or daemon logs")
    logs.add_argument("run", metavar="RUN")
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing new output")
    logs.add_argument(
        "--name",
        default="container",
        choices=("container", "agent", "evaluator", "daemon"),
        help="container: the daemon process's output (default); others: through the daemon",
    )
    logs.set_defaults(func=cmd_runs_logs)
    ex = runs_sub.add_parser("exec", parents=[where], help="run a command in a run")
    ex.add_argument("run", metavar="RUN")
    ex.add_argument("--tty", action="store_true", help="an interactive shell (CMD optional)")
    ex.add_argument("--timeout", type=_positive_float, default=60.0, metavar="S")
    ex.add_argument("cmd", nargs="*", metavar="CMD", help="after --")
    ex.set_defaults(func=cmd_runs_exec)
    res = runs_sub.add_parser("results", help="finished runs found in the results folder")
    res.add_argument("--results", type=Path, default=Path("results"), help="results root")
    res.set_defaults(func=cmd_runs_results)

    att = sub.add_parser("attach", parents=[where], help="follow a run's dialog live")
    att.add_argument("run", metavar="RUN")
    att.add_argument("--plain", action="store_true", help="plain text on stdout")
    att.add_argument("--offset", type=int, default=0, help="start at this byte of the dialog")
    att.set_defaults(func=cmd_attach)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        msg = f"must be a number > 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def backend_of(args: argparse.Namespace) -> Backend:
    """The backend the options name, configured from the environment."""
    settings = BackendSettings.from_env(os.environ, any_owner=getattr(args, "any", False))
    return make_backend(getattr(args, "backend", "local"), settings)


def _say(line: str) -> None:
    sys.stderr.write(f"srez: {line}\n")
    sys.stderr.flush()


def _run_async(make: Callable[[], Awaitable[int]]) -> int:
    async def main() -> int:
        return await make()

    return asyncio.run(main())


# ---------------------------------------------------------------------- srez run


def model_for(agents: list[str], model: str | None) -> str:
    """The model of runs of ``agents``: ``--model`` is required by the LLM agents and refused
    without one (a baseline has no model, and a slug no agent uses is a mistake worth saying)."""
    wants = [a for a in agents if a in LLM_SPECS]
    if model is not None and agents and all(a.startswith(CUSTOM_PREFIX) for a in agents):
        # a custom agent may call a model: the slug names its results folder
        if not valid_slug(model):
            msg = f"--model {model!r} is not a model slug (provider/model, e.g. openai/gpt-4o-mini)"
            raise UsageError(msg)
        return model
    if not wants:
        if model is not None:
            msg = f"--model {model!r} is only for --agent llm, llm-json or cmd:NAME"
            raise UsageError(msg)
        return "none"
    if model is None:
        msg = f"--agent {wants[0]} needs --model SLUG (a litellm slug, e.g. openai/gpt-4o-mini)"
        raise UsageError(msg)
    if not valid_slug(model):
        msg = f"--model {model!r} is not a model slug (provider/model, e.g. openai/gpt-4o-mini)"
        raise UsageError(msg)
    return model


def cmd_run(args: argparse.Namespace) -> int:
    """``srez run``: launch, wait (progress on stderr), mirror, print the grade summary."""
    backend = backend_of(args)
    option = None if args.agent_cmd is None else parse_option(args.agent_cmd)
    agent_cmd = agent_command(
        args.agent, option, os.environ
    )  # refuses SREZ_AGENT_CMD for baselines
    spec = LaunchSpec(
        task_id=args.task,
        agent_spec=args.agent,
        agent_cmd=agent_cmd,
        model=model_for([args.agent], args.model),
        run_seed=args.seed,
        keep=args.keep or args.keep_container,
        time_limit_s=args.timeout,
        results_root=args.results,
    )
    if agent_cmd is not None and backend.name != "local":
        msg = f"--agent {args.agent} (a custom command) runs on --backend local only, not {backend.name}"
        raise UsageError(msg)
    check_backend(backend, spec)
    return _run_async(lambda: _run(backend, spec, args.timeout, keep_container=args.keep_container))


async def _run(
    backend: Backend, spec: LaunchSpec, limit_s: float | None, *, keep_container: bool = False
) -> int:
    """Launch, wait, mirror. SIGINT or SIGTERM stops the run (it writes its summary) and still
    mirrors what it did (exit 130); a second signal acts as usual."""
    handle = await backend.launch(spec)
    _say(f"run {handle.run_id}: {handle.task_id} with {handle.agent} on {backend.name}")
    wait_s = None if limit_s is None else limit_s + 120.0  # the daemon ends the agent itself
    scratch = scratch_dir(_state(backend))
    if keep_container:
        _say(f"run {handle.run_id}: kept until stopped ('srez runs stop {handle.run_id}')")

    async def until_done() -> RunOutcome | None:
        if keep_container:
            await wait_stopped(backend, handle)
            return None  # mirrored below, like an interrupted run
        return await run_to_results(
            backend, spec, scratch, timeout_s=wait_s, progress=_say, handle=handle
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
        _say(f"run {handle.run_id}: interrupted; stopping it, then mirroring what it did")
        await backend.stop(handle)
    outcome = None if stopped else waiting.result()
    if outcome is None:
        current = await backend.get(handle.run_id)
        outcome = await run_to_results(backend, spec, scratch, progress=_say, handle=current)
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
                    _say(f"run {handle.run_id}: phase {frame.phase}")
                elif steps and isinstance(frame, DialogFrame) and isinstance(frame.entry, ToolCall):
                    _say(f"run {handle.run_id}: {sanitize_line(frame.entry.name)}")
    except (ClientError, OSError) as e:  # progress is a courtesy: never fail the run over it
        logger.debug("no live progress for run %s: %s", handle.run_id, e)


def _state(backend: Backend) -> Path:
    state = getattr(backend, "state_dir", None)
    return state if isinstance(state, Path) else BackendSettings.from_env(os.environ).state_dir


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


# ---------------------------------------------------------------------- srez runs ...


async def _find(backend: Backend, run: str) -> RunHandle:
    return await backend.get(run)


def cmd_runs_list(args: argparse.Namespace) -> int:
    """``srez runs list``; on docker and local it first mirrors the stopped runs of this state
    that are not mirrored yet (a run whose ``srez run`` or ``srez eval`` was killed is recovered
    by the next ``srez runs list``)."""
    backend = backend_of(args)
    if backend.name == "local":
        scratch = scratch_dir(_state(backend))
        for outcome in asyncio.run(mirror_owned_stopped(backend, scratch)):
            if outcome.outcome in ("mirrored", "failed", "refused"):
                _say(f"{outcome.run_id}: {outcome.outcome} ({sanitize_line(outcome.detail)})")
    if backend.name == "docker":
        from srez_client.backends.docker.backend import DockerBackend
        from srez_client.backends.docker.watch import mirror_ours_stopped

        assert isinstance(backend, DockerBackend)
        scratch = scratch_dir(_state(backend))
        for outcome in asyncio.run(mirror_ours_stopped(backend, scratch)):
            if outcome.outcome in ("mirrored", "failed", "refused"):
                _say(f"{outcome.run_id}: {outcome.outcome} ({sanitize_line(outcome.detail)})")
    runs = asyncio.run(backend.list(include_exited=args.all))
    if not runs:
        print("no runs" if args.all else "no running runs (--all lists those that exited)")
        return 0
    rows = [
        [
            r.run_id,
            r.task_id,
            r.agent,
            r.model,
            r.status,
            "yes" if r.finished else "no",
            "yes" if r.owned else "NO",
            "yes" if backend.writes_results or is_mirrored(r) else "no",
        ]
        for r in runs
    ]
    headers = ["run", "task", "agent", "model", "status", "finished", "ours", "mirrored"]
    print(render_table(headers, rows))
    return 0


def _gone_ok(
    args: argparse.Namespace, action: Callable[[Backend, RunHandle], Awaitable[None]], done: str
) -> int:
    backend = backend_of(args)

    async def go() -> int:
        try:
            handle = await backend.get(args.run)
        except RunNotFoundError:
            if RUN_ID_RE.match(args.run):  # a whole run id that is gone: nothing to do
                print(f"{args.run}: already gone")
                return 0
            raise
        await action(backend, handle)
        print(f"{handle.run_id}: {done}")
        return 0

    return _run_async(go)


def cmd_runs_stop(args: argparse.Namespace) -> int:
    """``srez runs stop RUN`` (idempotent)."""
    return _gone_ok(args, lambda b, h: b.stop(h), "stopped")


def cmd_runs_rm(args: argparse.Namespace) -> int:
    """``srez runs rm RUN [--force]`` (idempotent; results are kept). A run that is not mirrored
    is refused without ``--force``: its state holds the only copy of its files."""

    async def remove(backend: Backend, handle: RunHandle) -> None:
        acting = handle.owned or args.any  # else the backend refuses: not ours
        if acting and not (args.force or backend.writes_results or is_mirrored(handle)):
            try:
                where = f" into {results_folder(handle)}"
            except ClientError:
                where = ""
            msg = f"run {handle.run_id} is not mirrored{where}: its state is the only copy of its files; 'srez mirror {handle.run_id}' copies them, 'srez runs rm --force' deletes them"
            raise UsageError(msg)
        await backend.remove(handle)

    return _gone_ok(args, remove, "removed")


def cmd_runs_url(args: argparse.Namespace) -> int:
    """``srez runs url RUN``."""
    backend = backend_of(args)

    async def go() -> int:
        print(await backend.endpoint(await backend.get(args.run)))
        return 0

    return _run_async(go)


def cmd_runs_token(args: argparse.Namespace) -> int:
    """``srez runs token RUN``."""
    backend = backend_of(args)

    async def go() -> int:
        print(await backend.token(await backend.get(args.run)))
        return 0

    return _run_async(go)


async def _client(backend: Backend, run: str, *, admin: bool = False) -> DaemonClient:
    """A client of the run's daemon, checked to be the daemon we launched (not an impostor on its
    port); view-only unless ``admin`` (exec and the pty need it)."""
    handle = await backend.get(run)
    client = DaemonClient(await backend.endpoint(handle), await backend.token(handle), admin=admin)
    try:
        await client.verify()
    except BaseException:
        await client.close()
        raise
    return client


def cmd_runs_logs(args: argparse.Namespace) -> int:
    """``srez runs logs RUN [--follow] [--name NAME]``."""
    backend = backend_of(args)
    tty = sys.stdout.isatty()

    async def go() -> int:
        if args.name == "container":
            chunks = backend.logs(await backend.get(args.run), follow=args.follow)
            async for chunk in chunks:
                sys.stdout.write(sanitize(chunk) if tty else chunk)
                sys.stdout.flush()
            return 0
        async with await _client(backend, args.run) as client:
            async for chunk in client.logs(args.name, follow=args.follow):
                sys.stdout.write(sanitize(chunk) if tty else chunk)
                sys.stdout.flush()
        return 0

    return _run_async(go)


def cmd_runs_exec(args: argparse.Namespace) -> int:
    """``srez runs exec RUN [--tty] -- CMD...``: the command's output and exit status."""
    backend = backend_of(args)
    if not args.tty and not args.cmd:
        msg = "runs exec needs a command after '--' (or --tty for a shell)"
        raise UsageError(msg)
    if args.tty and not (sys.stdin.isatty() and sys.stdout.isatty()):
        msg = "--tty needs a terminal on stdin and stdout"
        raise UsageError(msg)

    async def go() -> int:
        async with await _client(backend, args.run, admin=True) as client:
            if args.tty:
                return await pty_session(client, args.cmd)
            result = await client.exec(args.cmd, args.timeout)
        out, err = result.stdout, result.stderr
        sys.stdout.write(sanitize(out) if sys.stdout.isatty() else out)
        sys.stderr.write(sanitize(err) if sys.stderr.isatty() else err)
        if result.truncated:
            _say("output truncated at 1 MiB per stream")
        if result.exit_code is None:
            _say(f"timed out after {args.timeout:g} s")
            return 124
        return result.exit_code

    return _run_async(go)


def cmd_runs_results(args: argparse.Namespace) -> int:
    """``srez runs results``: finished runs under the results root."""
    found = find_results(args.results)
    if not found:
        print(f"no finished runs under {args.results}")
        return 0
    headers, rows = results_rows(found)
    print(render_table(headers, rows, right=[5, 6]))
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    """``srez attach RUN``: the full-screen viewer on a terminal; ``--plain``: the dialog,
    sanitised, until the run ends."""
    if not args.plain:
        if sys.stdin.isatty() and sys.stdout.isatty():
            from srez_client.cli.tui import attach_tui

            return attach_tui(args.run, args.backend)
        msg = "the full-screen viewer needs a terminal; use 'srez attach RUN --plain'"
        raise UsageError(msg)
    backend = backend_of(args)

    async def go() -> int:
        async with await _client(backend, args.run) as client:
            await attach_plain(client, sys.stdout, offset=args.offset)
        return 0

    return _run_async(go)
