"""The argument parsers of the command groups, and how a command is named without importing it.

``srez`` parses its arguments before it imports any machinery: the parsers here are built from
light modules only (argparse, the backend registry's names, constants), and each command is given
as a ``module:function`` string (:func:`command`) that is imported when that command runs. So
``srez --version``, ``--help`` or ``tasks list`` never pay for aiohttp, the Docker SDK, urwid,
numpy or the backends (``tests/client/test_startup.py``), and each command imports only what it
uses. :mod:`srez_client.cli.main` builds the top-level parser with these.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from srez_client.backends.registry import BACKEND_NAMES, DEFAULT_BACKEND
from srez_client.cli.options import (
    SEED_MAX,
    backend_options,
    int_between,
    positive_float,
    run_seed,
)
from srez_env import agent_registry

Command = Callable[[argparse.Namespace], int]
"""What a command is: the parsed arguments in, the exit status out."""

STATUS_FILTERS: Final = ("ok", "error", "resolved", "unresolved")
"""``srez runs results --status`` (those of :func:`srez_client.results.finder.filter_results`,
kept here so that parsing needs no results module; a test holds them equal)."""
BASELINE_NAMES: Final = agent_registry.MANAGED_BASELINES
"""The baselines of ``srez managed create --baselines`` (:mod:`srez_env.agent_registry`)."""
MCP_DEFAULT_NAME: Final = "mcp"
"""The agent name an in-process MCP episode is filed under unless ``--name`` says another."""


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """A command named by ``module:function``, imported when it is called."""

    location: str

    def __call__(self, args: argparse.Namespace) -> int:
        module, _, name = self.location.partition(":")
        func: Command = getattr(importlib.import_module(module), name)
        return func(args)


def command(location: str) -> LazyCommand:
    """The command at ``location`` (``srez_client.cli.<group>:<function>``), imported lazily."""
    if ":" not in location:
        msg = f"a command is named module:function, got {location!r}"
        raise ValueError(msg)
    return LazyCommand(location)


# ---------------------------------------------------------------------- argument types


def _money(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        msg = f"must be an amount in USD >= 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _positive(text: str) -> float:
    value = _money(text)
    if value <= 0:
        msg = f"must be > 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        msg = f"must be a TCP port (0 to 65535; 0: a free one), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


# ---------------------------------------------------------------------- run, runs, attach


def task_seed(text: str) -> int:
    """An argparse type: the seed of a task set (an integer >= 0)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        msg = f"{text[:40]!r} is not a seed (an integer from 0 to {SEED_MAX})"
        raise argparse.ArgumentTypeError(msg)
    return value


def add_task_seed(parser: argparse.ArgumentParser) -> None:
    """``--task-seed N``: the tasks of the set generated from seed N (instead of ``--tasks-dir``)."""
    parser.add_argument(
        "--task-seed",
        type=task_seed,
        metavar="N",
        help="the tasks of the set of 40 generated from seed N (a held-out set: keep N private),"
        " cached privately in $SREZ_STATE/task-sets on first use; instead of --tasks-dir",
    )


def add_run_command(sub: Any, where: argparse.ArgumentParser) -> None:
    """Add ``run`` to the subcommands ``sub`` of ``srez`` (``where``: the backend options)."""
    run = sub.add_parser("run", parents=[where], help="launch one run, wait, mirror, grade")
    run.add_argument("--task", required=True, metavar="ID", help="task id, e.g. sre-001")
    run.add_argument(
        "--tasks-dir",
        type=Path,
        metavar="DIR",
        help="read the task from the *.yaml files of DIR instead of the packaged ones",
    )
    add_task_seed(run)
    run.add_argument(
        "--agent",
        required=True,
        help="scripted, heuristic, random, replay:FILE, llm, llm-json, or your own: cmd:NAME"
        " (a program on the agent socket) or mcp:NAME (an MCP client)",
    )
    run.add_argument(
        "--agent-cmd",
        metavar="CMD",
        help="the command of a cmd:NAME or mcp:NAME agent, e.g. 'python3 my_agent.py' (default: SREZ_AGENT_CMD)",
    )
    run.add_argument(
        "--model",
        metavar="SLUG",
        help="litellm model slug: for --agent llm/llm-json; optional for cmd:NAME",
    )
    run.add_argument("--seed", type=run_seed, default=0, help="run seed (default 0)")
    run.add_argument("--keep", action="store_true", help="keep the daemon serving after the run")
    run.add_argument(
        "--keep-container",
        action="store_true",
        help="keep the run serving until it is stopped ('srez runs stop', 'docker stop'), then mirror",
    )
    run.add_argument("--timeout", type=positive_float, metavar="S", help="agent time limit (s)")
    run.add_argument("--results", type=Path, default=Path("results"), help="results root")
    run.set_defaults(func=command("srez_client.cli.run:cmd_run"))


def add_runs_commands(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``run``, ``runs`` and ``attach`` to the subcommands ``sub`` of ``srez``."""
    runs_module = "srez_client.cli.runs"
    where = backend_options(parser_class)
    add_run_command(sub, backend_options(parser_class, any_owner=False))
    runs = sub.add_parser("runs", help="list and manage runs")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="ACTION")
    listing = runs_sub.add_parser("list", parents=[where], help="runs and their state")
    listing.add_argument("--all", action="store_true", help="include runs that exited")
    listing.set_defaults(func=command(f"{runs_module}:cmd_runs_list"))
    for name, text in (
        ("stop", "stop a run (SIGTERM; it writes summary.json)"),
        ("rm", "stop a run and delete its state (never its results)"),
        ("url", "print the base URL of a run's daemon"),
        ("token", "print a run's token (keep it secret)"),
    ):
        p = runs_sub.add_parser(name, parents=[where], help=text)
        p.add_argument("run", metavar="RUN")
        p.set_defaults(func=command(f"{runs_module}:cmd_runs_{name}"))
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
    logs.set_defaults(func=command(f"{runs_module}:cmd_runs_logs"))
    ex = runs_sub.add_parser("exec", parents=[where], help="run a command in a run")
    ex.add_argument("run", metavar="RUN")
    ex.add_argument("--tty", action="store_true", help="an interactive shell (CMD optional)")
    ex.add_argument("--timeout", type=positive_float, default=60.0, metavar="S")
    ex.add_argument("cmd", nargs="*", metavar="CMD", help="after --")
    ex.set_defaults(func=command(f"{runs_module}:cmd_runs_exec"))
    res = runs_sub.add_parser("results", help="finished runs found in the results folder")
    res.add_argument("--results", type=Path, default=Path("results"), help="results root")
    res.add_argument("--task", metavar="IDS", help="only these tasks (comma list)")
    res.add_argument("--agent", metavar="NAMES", help="only these agents (comma list)")
    res.add_argument(
        "--model", metavar="SLUGS", help="only these models (comma list; none: baselines)"
    )
    res.add_argument(
        "--status",
        choices=STATUS_FILTERS,
        help="ok or error (how the run ended), resolved or unresolved (its grade)",
    )
    res.add_argument("--json", action="store_true", help="print JSON instead of a table")
    res.set_defaults(func=command(f"{runs_module}:cmd_runs_results"))
    prune = runs_sub.add_parser(
        "prune",
        parents=[where],
        help="delete the state of every exited run that is mirrored (never its results)",
    )
    prune.add_argument(
        "--yes", action="store_true", help="delete them (without it: list what would go)"
    )
    prune.set_defaults(func=command(f"{runs_module}:cmd_runs_prune"))

    att = sub.add_parser(
        "attach",
        parents=[where],
        help="follow a run's dialog live (a finished run: from its results folder)",
    )
    att.add_argument("run", metavar="RUN", help="run id or prefix (live or finished), or a folder")
    att.add_argument("--plain", action="store_true", help="plain text on stdout")
    att.add_argument(
        "--offset",
        type=int_between(0, SEED_MAX, "a byte offset"),
        default=0,
        help="start at this byte of the dialog",
    )
    att.add_argument(
        "--results", type=Path, default=Path("results"), help="where finished runs are found"
    )
    att.set_defaults(func=command(f"{runs_module}:cmd_attach"))


# ---------------------------------------------------------------------- mirror, regrade


def add_mirror_commands(sub: Any) -> None:
    """Add ``mirror`` and ``regrade`` to the subcommands ``sub`` of ``srez``."""
    m = sub.add_parser("mirror", help="copy stopped runs into their results folders")
    m.add_argument("run", nargs="?", metavar="RUN", help="the run to mirror (or --watch)")
    m.add_argument("--watch", action="store_true", help="mirror every srez run as it stops")
    m.add_argument("--once", action="store_true", help="with --watch: only those stopped now")
    m.add_argument(
        "--timeout", type=positive_float, metavar="S", help="with --watch: watch for S seconds"
    )
    m.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        help="results root accepted for runs this state did not launch (default ./results)",
    )
    m.add_argument("--rm", action="store_true", help="remove our runs' state once mirrored")
    m.add_argument(
        "--backend",
        choices=BACKEND_NAMES,
        help="where RUN is (default: the first backend that has it, in registry order)",
    )
    m.set_defaults(func=command("srez_client.cli.mirror:cmd_mirror"))

    r = sub.add_parser("regrade", help="grade a run from its transcript when its daemon died")
    r.add_argument("run", metavar="RUN", help="run id or unique prefix")
    r.add_argument("--results", type=Path, default=Path("results"), help="results root")
    r.add_argument(
        "--tasks-dir",
        type=Path,
        metavar="DIR",
        help="read the run's task from the *.yaml files of DIR instead of the packaged ones",
    )
    r.set_defaults(func=command("srez_client.cli.mirror:cmd_regrade"))


# ---------------------------------------------------------------------- managed


def add_managed_command(sub: Any) -> None:
    """Add ``managed`` and its actions to the subcommands ``sub`` of ``srez``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--results", type=Path, default=Path("results"), help="results root")
    managed = sub.add_parser("managed", help="long multi-target evaluations with resume and budget")
    acts = managed.add_subparsers(dest="managed_command", required=True, metavar="ACTION")

    def action(name: str, func: str, text: str, *args: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = acts.add_parser(name, parents=[common], help=text)
        for arg in args:
            p.add_argument(arg, metavar=arg.upper())
        p.set_defaults(func=command(f"srez_client.cli.managed:{func}"))
        return p

    create = action("create", "cmd_create", "create a managed run", "name")
    create.add_argument(
        "--baselines",
        help=f"comma list of {', '.join(BASELINE_NAMES)}, or none (default: all of them when"
        " --models is not given either, else none)",
    )
    create.add_argument(
        "--models",
        help="comma list of litellm slugs, or none (default: the catalogue's default models when"
        " --baselines is not given either, else none)",
    )
    create.add_argument(
        "--tasks", default="all", help="'all' (the default) or a comma list of task ids"
    )
    create.add_argument("--backend", default=DEFAULT_BACKEND, choices=BACKEND_NAMES)
    create.add_argument("--daily-budget-usd", type=_money, metavar="X")
    create.add_argument("--cost-cap-usd", type=_positive, metavar="Y", help="per LLM task")
    create.add_argument(
        "--time-limit", type=_positive, metavar="S", help="agent time limit per task"
    )
    create.add_argument(
        "--seed", type=run_seed, default=0, help="run seed of every run (default 0)"
    )
    action("add-target", "cmd_add_target", "queue one more target", "name", "target")
    action("remove-target", "cmd_remove_target", "take a target out of the queue", "name", "target")
    action("list", "cmd_list", "the managed runs")
    st = action("status", "cmd_status", "progress, scores, errors and budget", "name")
    st.add_argument("--json", action="store_true", help="print JSON")
    run = action("run", "cmd_run", "run the queue (one target at a time)", "name")
    run.add_argument("--target", help="run this target only")
    run.add_argument("--retry-failed", action="store_true", help="re-run tasks the harness failed")
    run.add_argument(
        "--wait",
        action="store_true",
        help="sleep through budget and provider pauses (next day, end of cooldown) and go on",
    )
    action("pause", "cmd_pause", "finish the current task, start nothing new", "name")
    action("clear-pause", "cmd_clear_pause", "remove the pause flag", "name")
    action("stop", "cmd_stop", "stop the runner and its in-flight run now", "name")
    sm = action("summarize", "cmd_summarize", "rebuild the summaries", "name")
    sm.add_argument("--no-png", action="store_true", help="skip summary.png")
    action("export-queue", "cmd_export", "write command.sh and command.ps1", "name")
    dta = action(
        "delete-target-artifacts",
        "cmd_delete_artifacts",
        "delete a target's results",
        "name",
        "target",
    )
    dta.add_argument("--yes", action="store_true", help="do not ask")
    dl = action("delete", "cmd_delete", "delete the managed run's folder (never results)", "name")
    dl.add_argument("--yes", action="store_true", help="do not ask")


# ---------------------------------------------------------------------- export, tui, mcp


def add_export_command(sub: Any) -> None:
    """Add ``export`` to the subcommands ``sub`` of ``srez``."""
    export = sub.add_parser("export", help="write runs in other formats")
    formats = export.add_subparsers(dest="export_format", required=True, metavar="FORMAT")
    atif = formats.add_parser("atif", help="ATIF v1.8 trajectory.json beside each run's dialog")
    atif.add_argument(
        "run",
        nargs="?",
        metavar="RUN",
        help="a run folder, or a run id (or a unique prefix of one)",
    )
    atif.add_argument("--all", action="store_true", help="every finished run under --results")
    atif.add_argument(
        "--results", type=Path, default=Path("results"), help="results root (default ./results)"
    )
    atif.set_defaults(func=command("srez_client.cli.export:cmd_export_atif"))


def add_tui_commands(sub: Any) -> None:
    """Add ``tui`` and ``explain`` to the subcommands ``sub`` of ``srez``."""
    tui = sub.add_parser("tui", help="the full-screen dashboard: runs, launch, attach")
    tui.add_argument("--results", type=Path, default=Path("results"), help="results root")
    tui.set_defaults(func=command("srez_client.cli.tui:cmd_tui"))
    ex = sub.add_parser("explain", help="ask a model about a run (host-side, own spending cap)")
    ex.add_argument("run", metavar="RUN", help="run id (live or finished) or a results folder")
    ex.add_argument(
        "--prompt",
        default="compare",
        help="compare (default), review, problems, or a question in quotes",
    )
    ex.add_argument("--results", type=Path, default=Path("results"), help="results root")
    ex.add_argument("--backend", default=None, choices=BACKEND_NAMES, help="where live runs are")
    ex.set_defaults(func=command("srez_client.cli.tui:cmd_explain"))


def add_view_command(sub: Any) -> None:
    """Add ``view`` to the subcommands ``sub`` of ``srez``."""
    view = sub.add_parser("view", help="the runs in a browser: a results folder, and live runs")
    view.add_argument("--results", type=Path, default=Path("results"), help="results root")
    view.add_argument(
        "--port", type=_port_number, default=0, help="port to listen on (default: a free one)"
    )
    view.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)"
    )
    view.add_argument(
        "--hosted",
        action="store_true",
        help="results only, read-only (no live runs, stop or terminal): for a team behind a proxy",
    )
    view.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name the server answers to (a reverse proxy's); repeatable",
    )
    view.add_argument(
        "--backend",
        default=None,
        choices=BACKEND_NAMES,
        help="where live runs are (default: $SREZ_TUI_BACKENDS, else local and every backend"
        " this state launched runs on)",
    )
    view.set_defaults(func=command("srez_client.cli.view:cmd_view"))


def add_mcp_command(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``mcp`` to the subcommands ``sub`` of ``srez`` (``parents``: ``--tasks-dir``)."""
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
    mcp.add_argument("--seed", type=run_seed, help="with --task: run seed (default 0)")
    mcp.add_argument("--results", type=Path, help="with --task: results root (default ./results)")
    mcp.add_argument(
        "--name", help=f"with --task: the agent's name in results/ (default {MCP_DEFAULT_NAME})"
    )
    mcp.add_argument("--model", metavar="SLUG", help="with --task: the client's model, if known")
    mcp.set_defaults(func=command("srez_client.cli.mcp:cmd_mcp"))
