"""The ``srez`` command line (also installed as ``srez-client``).

Commands: ``tasks list``, ``tasks show ID``, ``eval``, ``play ID``, ``schema dialog``, the
run commands (``run``, ``runs list|stop|rm|logs|exec|url|token|results``, ``attach``), ``mirror``
and the others of :mod:`srez_client.cli.parser`. Results and tables go to stdout; progress,
warnings and errors go to stderr. A bad input (unknown task, agent or backend, malformed replay or
task file, a bad option value) is reported as one line ``srez: error: ...`` with exit status 2,
never as a traceback.

The arguments are parsed before any machinery is imported: the parser is built from light
modules, and each command (named ``module:function``, :func:`~srez_client.cli.parser.command`)
is imported when it runs, with what it needs and nothing else.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn

from srez_client.cli import generate as cli_generate
from srez_client.cli.completion import SHELLS
from srez_client.cli.options import add_backend_settings, int_between, run_seed
from srez_client.cli.parser import (
    add_export_command,
    add_managed_command,
    add_mcp_command,
    add_mirror_commands,
    add_runs_commands,
    add_task_seed,
    add_tui_commands,
    add_view_command,
    command,
)
from srez_client.disk import is_no_space, no_space_line
from srez_client.errors import ClientError
from srez_client.sanitize import sanitize_line
from srez_daemon.protocol import PROTOCOL_VERSION
from srez_env.errors import EnvError

logger = logging.getLogger(__name__)

EXIT_USAGE = 2
"""Exit status for bad input."""
SCHEMAS = ("dialog",)
"""What ``srez schema`` prints."""


class _VersionAction(argparse.Action):
    """``--version``: the distribution's version is read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **_kwargs: object) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="print the version and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        from srez_daemon.protocol import srez_version

        sys.stdout.write(f"srez {srez_version()} (protocol {PROTOCOL_VERSION})\n")
        sys.stdout.flush()
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like every other error of ``srez``."""

    def error(self, message: str) -> NoReturn:
        shown = sanitize_line(message)  # an argument echoed back may hold escapes
        self.exit(EXIT_USAGE, f"srez: error: {shown} (see '{self.prog} --help')\n")


SEEDS_MAX: Final = 1000
"""Run seeds one ``srez eval`` plays at most (per task and agent)."""
PARALLEL_MAX: Final = 256
LIMIT_MAX: Final = 1_000_000


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``srez``."""
    parser = _Parser(prog="srez", description="SRE-Zero: incident-response benchmark and harness.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    tasks_dir = _Parser(add_help=False)
    tasks_dir.add_argument(
        "--tasks-dir",
        type=Path,
        metavar="DIR",
        help="read the tasks from the *.yaml files of DIR instead of the packaged ones",
    )

    tasks = sub.add_parser("tasks", help="list, show or generate benchmark tasks")
    tasks_sub = tasks.add_subparsers(dest="tasks_command", required=True, metavar="ACTION")
    listing = tasks_sub.add_parser("list", parents=[tasks_dir], help="one row per task")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(func=command("srez_client.cli.tasks:cmd_tasks_list"))
    show = tasks_sub.add_parser("show", parents=[tasks_dir], help="the public brief of a task")
    show.add_argument("task_id", metavar="ID")
    show.add_argument(
        "--private",
        action="store_true",
        help="also print the ground truth, reference fix and calibration (never show an agent)",
    )
    show.set_defaults(func=command("srez_client.cli.tasks:cmd_tasks_show"))
    cli_generate.add_parser(tasks_sub)

    ev = sub.add_parser("eval", parents=[tasks_dir], help="run agents on tasks and report")
    ev.add_argument(
        "--agent",
        required=True,
        help="comma list of scripted, heuristic, random, replay:FILE, llm, llm-json, cmd:NAME,"
        " or a Python agent class package.module:AgentClass (local backend; inline on the"
        " packaged tasks only)",
    )
    ev.add_argument("--model", metavar="SLUG", help="litellm model slug of the llm agents")
    ev.add_argument(
        "--tasks", default="all", help="'all' (the default) or a comma list of task ids"
    )
    add_task_seed(ev)
    ev.add_argument(
        "--seeds", type=int_between(1, SEEDS_MAX), default=1, help="run seeds 0..N-1 (default 1)"
    )
    ev.add_argument("--backend", default="inline", help="where runs execute (default inline)")
    add_backend_settings(ev)
    ev.add_argument(
        "--parallel",
        type=int_between(1, PARALLEL_MAX),
        default=1,
        metavar="N",
        help="runs at a time on a daemon backend (default 1)",
    )
    ev.add_argument("--results", type=Path, default=Path("results"), help="results root")
    ev.add_argument(
        "--resume",
        action="store_true",
        help="skip each (agent, task, seed) already complete under --results (graded, not ended"
        " by a provider or harness failure) and report it with the new runs",
    )
    ev.add_argument(
        "--limit",
        type=int_between(1, LIMIT_MAX),
        metavar="N",
        help="make at most N runs (after --resume)",
    )
    ev.add_argument(
        "--no-floors",
        action="store_true",
        help="leave the trivial-agent floors (noop, restart-all) out of the leaderboard; by"
        " default those not asked for are played in this process on the same tasks and seeds",
    )
    ev.add_argument(
        "--detail",
        action="store_true",
        help="also print each run, each agent's aggregates by difficulty and by fault kind, and"
        " the runs per agent (default: the leaderboard and one line per agent by difficulty)",
    )
    ev.add_argument("--json", action="store_true", help="print the aggregates as JSON")
    ev.set_defaults(func=command("srez_client.cli.evaluate:cmd_eval"))

    pl = sub.add_parser("play", parents=[tasks_dir], help="play a task yourself at a prompt")
    pl.add_argument("task_id", metavar="ID")
    pl.add_argument("--seed", type=run_seed, default=0, help="run seed (default 0)")
    pl.set_defaults(func=command("srez_client.cli.play:cmd_play"))

    schema = sub.add_parser("schema", help="print a JSON Schema")
    # optional for argparse so that a missing WHICH gets our message (argparse's says only
    # "required: which"); cmd_schema refuses it
    schema.add_argument(
        "which",
        nargs="?",
        choices=SCHEMAS,
        metavar="WHICH",
        help="dialog: one line of dialog.jsonl",
    )
    schema.set_defaults(func=command("srez_client.cli.schema:cmd_schema"))
    comp = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    comp.add_argument(
        "shell",
        choices=SHELLS,
        help="bash: 'source <(srez completion bash)'; zsh: save as _srez in a folder on $fpath",
    )
    comp.set_defaults(func=command("srez_client.cli.completion:cmd_completion"), root_parser=parser)
    add_runs_commands(sub, _Parser)
    add_mirror_commands(sub)
    add_export_command(sub)
    add_managed_command(sub)
    add_tui_commands(sub)
    add_view_command(sub)
    add_mcp_command(sub, [tasks_dir])
    _name_help_parsers(parser)
    return parser


def _name_help_parsers(parser: argparse.ArgumentParser) -> None:
    """Make each (sub)command's parser its own default ``help_parser``: argparse reports an
    unknown option from the top parser, and the user needs the help of the command they typed."""
    parser.set_defaults(help_parser=parser)
    for action in parser._actions:  # argparse has no public walk over its subparsers
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _name_help_parsers(child)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when None.

    Returns:
        The exit status: 0 on success, 2 on bad input, 1 on other failures.
    """
    parser = build_parser()
    try:
        args = parse_command_line(parser, list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # --help, or a usage error already printed as one line
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="srez: %(levelname)s %(name)s: %(message)s")
    try:
        status: int = args.func(args)
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (EnvError, ClientError) as e:
        return _fail(str(e), EXIT_USAGE)
    except OSError as e:
        if is_no_space(e):  # where, and that what was written stays
            line = no_space_line(e, Path.cwd())
            return _fail(
                f"{line}: nothing already written is lost; free some space and run the command again",
                1,
            )
        return _fail(str(e), 1)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    return status


def parse_command_line(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; for ``runs exec``, everything after the first ``--`` is the command.

    argparse alone cannot take ``runs exec RUN --tty -- CMD...``: the command's positional is
    filled (empty) before ``--tty`` is seen.
    """
    if "--" in argv:
        cut = argv.index("--")
        head = argv[:cut]
        if "runs" in head and "exec" in head[head.index("runs") :]:
            args = _parse(parser, head)
            args.cmd = [*args.cmd, *argv[cut + 1 :]]
            return args
    return _parse(parser, argv)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args``, but an unknown argument is reported by the (sub)command it was
    given to, so the message points to that command's ``--help``."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        owner: argparse.ArgumentParser = getattr(args, "help_parser", parser)
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _fail(message: str, status: int) -> int:
    flat = sanitize_line(" ".join(message.split())) or "failed"  # a path may hold escapes
    sys.stderr.write(f"srez: error: {flat}\n")
    return status
