"""The TUI commands: ``srez tui`` (the dashboard), the full-screen ``srez attach RUN`` (through
:func:`attach_tui`, called by :mod:`srez_client.cli.runs` when stdout is a terminal) and ``srez explain RUN``.

urwid and the TUI modules are imported only when one of these commands runs, so the rest of the
command line starts as fast as before; litellm only when a question is asked.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from srez_client.backends.config import BackendSettings
from srez_client.errors import UsageError


def _app(results: Path, backend: str | None = None) -> Any:
    from srez_client.tui.app import TuiApp, default_backends

    env = dict(os.environ)
    if backend is not None:
        env["SREZ_TUI_BACKENDS"] = backend
    state = BackendSettings.from_env(env).state_dir
    return TuiApp(results_root=results, state_dir=state, backends=default_backends(env))


def _need_terminal(what: str) -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        msg = f"{what} needs a terminal on stdin and stdout"
        raise UsageError(msg)


def cmd_tui(args: argparse.Namespace) -> int:
    """``srez tui``."""
    _need_terminal("srez tui")
    app = _app(args.results)
    asyncio.run(app.run())
    return 0


def attach_tui(run: str, backend: str, results: Path = Path("results")) -> int:
    """``srez attach RUN`` on a terminal: the run viewer on one run."""
    app = _app(results, backend)
    asyncio.run(app.run(run))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """``srez explain RUN``: the answer on stdout (sanitised on a terminal)."""
    from srez_client.sanitize import sanitize
    from srez_client.tui.explain import ExplainSettings, ask
    from srez_client.tui.explain_context import gather_context
    from srez_client.tui.viewmodels.explain_prompt import build_messages

    app = _app(args.results, args.backend)

    async def go() -> int:
        source = await app.resolve(args.run)
        if source is None:
            msg = f"no run {args.run!r}: not live, and not a finished run under {args.results}"
            raise UsageError(msg)
        try:
            await source.connect()
            ctx = await gather_context(source)
        finally:
            await source.close()
        answer = await ask(
            ExplainSettings.from_env(os.environ, app.state_dir), build_messages(args.prompt, ctx)
        )
        if not answer.ok:
            sys.stderr.write(f"srez: error: {' '.join(answer.text.split())}\n")
            return 1
        text = answer.text.rstrip() + "\n"
        sys.stdout.write(sanitize(text) if sys.stdout.isatty() else text)
        sys.stderr.write(f"srez: explain cost ${answer.cost_usd:.4f} (not counted as the run's)\n")
        return 0

    return asyncio.run(go())
