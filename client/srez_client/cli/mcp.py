"""``srez mcp``: the agent's tools as an MCP server (:mod:`srez_client.integrations.mcp`).

* ``srez mcp --socket PATH``: a proxy to a run's agent socket, on stdio (or ``--http [PORT]``:
  streamable HTTP on 127.0.0.1, behind a token written on stderr or into ``--token-file``); the
  daemon records every call.
* ``srez mcp --task ID``: an episode in this process, on stdio; its run is filed under
  ``--results`` like an inline run, as the agent ``--name`` (default ``mcp``).

The ``mcp`` library is imported only once the command runs; without it the command says, in one
line, to install ``srez[mcp]``.
"""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from srez_client.cli.options import say
from srez_client.errors import UsageError
from srez_client.models_catalog import valid_slug
from srez_env.agents import BUILTIN_AGENT_NAMES
from srez_env.agents.contract import CUSTOM_NAME
from srez_env.task import Task

DEFAULT_NAME: Final = "mcp"
"""The agent name an in-process MCP episode is filed under unless ``--name`` says another."""
TaskLoader = Callable[[str, Path | None], Task]
"""``srez``'s one-task loader (an id, ``--tasks-dir``)."""


def _port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        msg = f"must be a TCP port (0 to 65535; 0: a free one), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def add_mcp_command(sub: Any, parents: list[argparse.ArgumentParser], load: TaskLoader) -> None:
    """Add ``mcp`` to the subcommands ``sub`` of ``srez`` (``parents``: ``--tasks-dir``;
    ``load``: how a task is read)."""
    mcp = sub.add_parser(
        "mcp",
        parents=parents,
        help="the agent's tools as an MCP server: a run's agent socket, or an episode here",
    )
    where = mcp.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", type=Path, metavar="PATH", help="a run's agent socket")
    where.add_argument("--task", metavar="ID", help="an episode of task ID in this process")
    mcp.add_argument(
        "--http",
        type=_port_number,
        nargs="?",
        const=0,
        metavar="PORT",
        help="with --socket: streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (default: a free port);"
        " clients send its token, which it writes on stderr",
    )
    mcp.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="with --http: write the token to PATH (0600; removed on exit) instead of on stderr",
    )
    mcp.add_argument("--seed", type=int, help="with --task: run seed (default 0)")
    mcp.add_argument("--results", type=Path, help="with --task: results root (default ./results)")
    mcp.add_argument(
        "--name", help=f"with --task: the agent's name in results/ (default {DEFAULT_NAME})"
    )
    mcp.add_argument("--model", metavar="SLUG", help="with --task: the client's model, if known")
    mcp.set_defaults(func=lambda args: cmd_mcp(args, load))


def require_mcp() -> None:
    """Raises UsageError, in one line, when the ``mcp`` library is not installed."""
    if importlib.util.find_spec("mcp") is None:
        msg = "srez mcp needs the MCP library: pip install 'srez[mcp]'"
        raise UsageError(msg)


def cmd_mcp(args: argparse.Namespace, load: TaskLoader) -> int:
    """``srez mcp``: serve until the client leaves (stdio) or until SIGINT/SIGTERM (HTTP)."""
    inline_only = {
        "--seed": args.seed,
        "--results": args.results,
        "--name": args.name,
        "--model": args.model,
        "--tasks-dir": args.tasks_dir,
    }
    if args.socket is not None:
        given = [option for option, value in inline_only.items() if value is not None]
        if given:
            msg = f"{given[0]} is for --task (an episode here); a run's socket has its own"
            raise UsageError(msg)
        if args.token_file is not None and args.http is None:
            msg = "--token-file is the token of --http; stdio needs none"
            raise UsageError(msg)
        require_mcp()
        return _serve_socket(args.socket, args.http, args.token_file)
    if args.http is not None or args.token_file is not None:
        msg = "--http (and its --token-file) serve a run's agent socket (--socket); --task serves stdio"
        raise UsageError(msg)
    name = DEFAULT_NAME if args.name is None else args.name
    if not CUSTOM_NAME.fullmatch(name) or name in BUILTIN_AGENT_NAMES:
        msg = f"--name {name!r}: use 1 to 40 of a-z 0-9 . _ -, not a built-in agent's name"
        raise UsageError(msg)
    if args.model is not None and not valid_slug(args.model):
        msg = (
            f"--model {args.model!r} is not a model slug (provider/model, e.g. openai/gpt-4o-mini)"
        )
        raise UsageError(msg)
    task = load(args.task, args.tasks_dir)
    require_mcp()
    return _serve_inline(
        task,
        name=name,
        model=args.model or "none",
        run_seed=0 if args.seed is None else args.seed,
        results=Path("results") if args.results is None else args.results,
    )


def _serve_socket(path: Path, http_port: int | None, token_file: Path | None) -> int:
    from srez_client.integrations.mcp.serve import serve_socket

    serve_socket(path, http_port, token_file)
    return 0


def _serve_inline(task: Task, *, name: str, model: str, run_seed: int, results: Path) -> int:
    from srez_client.integrations.mcp.serve import serve_task

    run = serve_task(task, name=name, model=model, run_seed=run_seed, results=results)
    say(f"run {run.run_id}: {task.id} as {name}, filed in {run.run_dir}")
    return 0
