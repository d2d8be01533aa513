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
from pathlib import Path

from srez_client.cli.options import say
from srez_client.cli.parser import MCP_DEFAULT_NAME as DEFAULT_NAME
from srez_client.cli.tasks import one_task
from srez_client.errors import UsageError
from srez_client.models_catalog import valid_slug
from srez_env.agent_contract import CUSTOM_NAME
from srez_env.agents import BUILTIN_AGENT_NAMES
from srez_env.task import Task


def require_mcp() -> None:
    """Raises UsageError, in one line, when the ``mcp`` library is not installed."""
    if importlib.util.find_spec("mcp") is None:
        msg = "srez mcp needs the MCP library: pip install 'srez[mcp]'"
        raise UsageError(msg)


def cmd_mcp(args: argparse.Namespace) -> int:
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
    task = one_task(args.task, args.tasks_dir)
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
