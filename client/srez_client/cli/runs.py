"""The ``srez`` commands that manage runs: ``runs ...`` and ``attach`` (``run``: :mod:`.run`).

``RUN`` is a run id or a unique prefix of one; the backend options are :mod:`.options`'s. Results
go to stdout, progress to stderr; anything a run wrote is sanitised before it reaches a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from srez_client.backends.base import Backend, RunHandle
from srez_client.backends.registry import make_backend
from srez_client.cli.options import (
    backend_of,
    config_of,
    run_async,
    say,
)
from srez_client.daemon_client.api import DaemonClient
from srez_client.daemon_client.follow import attach_plain, render_entry, render_finished
from srez_client.daemon_client.terminal import pty_session
from srez_client.errors import (
    AmbiguousRunError,
    ClientError,
    NoDaemonError,
    RunNotFoundError,
    UsageError,
)
from srez_client.layout import RUN_ID_RE
from srez_client.lifecycle.recovery import is_mirrored, recover_unmirrored, results_folder
from srez_client.lifecycle.run import scratch_dir
from srez_client.results.finder import (
    filter_results,
    find_results,
    find_run,
    read_summary,
    results_json,
    results_rows,
)
from srez_client.results.table import render_table
from srez_client.sanitize import sanitize, sanitize_line
from srez_daemon.protocol import iter_dialog


def cmd_runs_list(args: argparse.Namespace) -> int:
    """``srez runs list``; it first mirrors the stopped runs of this state that are not mirrored
    yet, where the backend has any (a run whose ``srez run`` or ``srez eval`` was killed is
    recovered by the next ``srez runs list``)."""
    config = config_of(args)
    backend = make_backend(config)
    for outcome in asyncio.run(recover_unmirrored(backend, scratch_dir(config.state_dir))):
        if outcome.outcome in ("mirrored", "failed", "refused"):
            say(f"{outcome.run_id}: {outcome.outcome} ({sanitize_line(outcome.detail)})")
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

    return run_async(go)


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
    return _print_answer(args, lambda backend, handle: backend.endpoint(handle))


def cmd_runs_token(args: argparse.Namespace) -> int:
    """``srez runs token RUN``."""
    return _print_answer(args, lambda backend, handle: backend.token(handle))


def _print_answer(
    args: argparse.Namespace, ask: Callable[[Backend, RunHandle], Awaitable[str]]
) -> int:
    """Print what ``ask`` answers about RUN."""
    backend = backend_of(args)

    async def go() -> int:
        print(await ask(backend, await backend.get(args.run)))
        return 0

    return run_async(go)


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

    return run_async(go)


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
            say("output truncated at 1 MiB per stream")
        if result.exit_code is None:
            say(f"timed out after {args.timeout:g} s")
            return 124
        return result.exit_code

    return run_async(go)


def _names(text: str | None, option: str) -> list[str]:
    if text is None:
        return []
    names = [part.strip() for part in text.split(",")]
    if not all(names):
        msg = f"{option} {text!r} has an empty name (a comma list such as a,b)"
        raise UsageError(msg)
    return names


def cmd_runs_results(args: argparse.Namespace) -> int:
    """``srez runs results [--task --agent --model --status] [--json]``: finished runs under
    the results root, oldest first."""
    found = filter_results(
        find_results(args.results),
        tasks=_names(args.task, "--task"),
        agents=_names(args.agent, "--agent"),
        models=[m.replace("__", "/") for m in _names(args.model, "--model")],
        status=args.status,
    )
    if args.json:
        print(json.dumps(results_json(found), indent=2))
        return 0
    if not found:
        filtered = any((args.task, args.agent, args.model, args.status))
        print(
            f"no finished runs under {args.results}" + (" match those filters" if filtered else "")
        )
        return 0
    headers, rows = results_rows(found)
    print(render_table(headers, rows, right=[5, 6]))
    return 0


def cmd_runs_prune(args: argparse.Namespace) -> int:
    """``srez runs prune [--yes]``: ``runs rm`` for every exited run of this state that is
    mirrored. Without ``--yes`` it only lists them; a run that is not mirrored is never pruned
    (its state holds the only copy of its files) and one still running is left alone."""
    backend = backend_of(args)

    async def go() -> int:
        runs = await backend.list(include_exited=True)
        exited = [r for r in runs if r.status == "exited" and (r.owned or args.any)]
        ready = [r for r in exited if backend.writes_results or is_mirrored(r)]
        for r in exited:
            if r not in ready:
                say(f"{r.run_id}: kept, not mirrored ('srez mirror {r.run_id}' copies it)")
        if not ready:
            print("nothing to prune: no exited run that is mirrored")
            return 0
        for r in ready:
            if args.yes:
                await backend.remove(r)
            print(
                f"{r.run_id}: {'removed' if args.yes else 'would be removed'} ({r.task_id} {r.agent})"
            )
        if not args.yes:
            print(f"{len(ready)} runs; 'srez runs prune --yes' removes their state (results stay)")
        return 0

    return run_async(go)


def cmd_attach(args: argparse.Namespace) -> int:
    """``srez attach RUN``: the full-screen viewer on a terminal; ``--plain``: the dialog,
    sanitised, until the run ends. A run with no daemon serving (finished, or a results folder)
    is read from its results folder, as the full-screen viewer does."""
    if not args.plain:
        if sys.stdin.isatty() and sys.stdout.isatty():
            from srez_client.cli.tui import attach_tui

            return attach_tui(args.run, args.backend, args.results)
        msg = "the full-screen viewer needs a terminal; use 'srez attach RUN --plain'"
        raise UsageError(msg)
    if (Path(args.run) / "archive" / "dialog.jsonl").is_file():
        return _print_finished(Path(args.run), args.offset)
    backend = backend_of(args)

    async def go() -> int:
        try:
            if (
                backend.relays_dialog
                and (handle := await backend.get(args.run)).status == "running"
            ):
                await _print_relayed(backend, handle, args.offset)
                return 0
            client = await _client(backend, args.run)
        except AmbiguousRunError:
            raise
        except (RunNotFoundError, NoDaemonError) as e:
            try:
                found = find_run(args.results, args.run)
            except AmbiguousRunError:
                raise
            except RunNotFoundError:
                msg = f"{e}; and no finished run {args.run!r} under {args.results}"
                raise RunNotFoundError(msg) from e
            return _print_finished(found.path, args.offset)
        async with client:
            await attach_plain(client, sys.stdout, offset=args.offset)
        return 0

    return run_async(go)


async def _print_relayed(backend: Backend, handle: RunHandle, offset: int) -> None:
    """Print a run's dialog as its backend relays it (``offset``: a line number), until the run
    ends, as ``attach --plain`` prints a live one."""
    async for line in backend.relayed_dialog(handle, offset):
        if not line:
            sys.stdout.write("== the run started again (a new attempt)\n")
            continue
        for entry in iter_dialog(line + b"\n", final=True):
            sys.stdout.write(render_entry(entry) + "\n")
        sys.stdout.flush()
    sys.stdout.write("== phase: done\n")
    sys.stdout.flush()


def _print_finished(folder: Path, offset: int) -> int:
    """Print a finished run's dialog from ``offset`` as ``attach --plain`` prints a live one."""
    try:
        data = (folder / "archive" / "dialog.jsonl").read_bytes()[max(offset, 0) :]
    except OSError as e:
        msg = f"{folder}: no readable archive/dialog.jsonl ({e.strerror})"
        raise UsageError(msg) from e
    for text in render_finished(data, read_summary(folder)):
        sys.stdout.write(text + "\n")
    return 0
