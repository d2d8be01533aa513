"""The ``srez`` command line (also installed as ``srez-client``).

Commands: ``tasks list``, ``tasks show ID``, ``eval``, ``play ID``, ``schema dialog``, the
run commands of :mod:`srez_client.cli.run` (``run``) and :mod:`srez_client.cli.runs`
(``runs list|stop|rm|logs|exec|url|token|results``, ``attach``) and ``mirror`` (:mod:`srez_client.cli.mirror`). Results and tables go to stdout; progress, warnings and errors go to
stderr. A bad input (unknown task, agent or backend, malformed replay or task file, a bad option
value) is reported as one line ``srez: error: ...`` with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import yaml

from srez_client.backends.registry import backend_class, names_where
from srez_client.cli import generate as cli_generate
from srez_client.cli.completion import SHELLS, completion_script
from srez_client.cli.evaluate import (
    check_resume,
    eval_inline,
    failed_by_label,
    plan_eval,
    print_eval,
    resumed_results,
    say_interrupted,
)
from srez_client.cli.export import add_export_command
from srez_client.cli.managed import add_managed_command
from srez_client.cli.mcp import add_mcp_command
from srez_client.cli.mirror import add_mirror_command
from srez_client.cli.options import add_backend_settings, comma_list, environment_of, say
from srez_client.cli.play import play, prompted_lines
from srez_client.cli.run import model_for
from srez_client.cli.runs import add_commands
from srez_client.cli.tui import add_tui_commands
from srez_client.errors import ClientError, UsageError
from srez_client.evaluation import eval_on_backend
from srez_client.floors import floor_grades, missing_floors
from srez_client.provider_keys import check_provider_keys
from srez_client.results.report import render_table
from srez_daemon.protocol import PROTOCOL_VERSION, dialog_json_schema, srez_version
from srez_env.agents import custom_agent_name, make_agent
from srez_env.agents.llm import LLM_SPECS
from srez_env.errors import EnvError
from srez_env.task import Task
from srez_env.tasks import load_task, load_tasks

logger = logging.getLogger(__name__)

EXIT_USAGE = 2
"""Exit status for bad input."""
SCHEMAS = ("dialog",)
"""What ``srez schema`` prints."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like every other error of ``srez``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"srez: error: {message} (see '{self.prog} --help')\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"must be an integer >= 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``srez``."""
    parser = _Parser(prog="srez", description="SRE-Zero: incident-response benchmark and harness.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    parser.add_argument(
        "--version",
        action="version",
        version=f"srez {srez_version()} (protocol {PROTOCOL_VERSION})",
        help="print the version and exit",
    )
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
    listing.set_defaults(func=cmd_tasks_list)
    show = tasks_sub.add_parser("show", parents=[tasks_dir], help="the public brief of a task")
    show.add_argument("task_id", metavar="ID")
    show.add_argument(
        "--private",
        action="store_true",
        help="also print the ground truth, reference fix and calibration (never show an agent)",
    )
    show.set_defaults(func=cmd_tasks_show)
    cli_generate.add_parser(tasks_sub)

    ev = sub.add_parser("eval", parents=[tasks_dir], help="run agents on tasks and report")
    ev.add_argument(
        "--agent",
        required=True,
        help="comma list of scripted, heuristic, random, replay:FILE, llm, llm-json, cmd:NAME,"
        " or a Python agent class package.module:AgentClass (inline and local backends)",
    )
    ev.add_argument("--model", metavar="SLUG", help="litellm model slug of the llm agents")
    ev.add_argument(
        "--tasks", default="all", help="'all' (the default) or a comma list of task ids"
    )
    ev.add_argument("--seeds", type=_positive_int, default=1, help="run seeds 0..N-1 (default 1)")
    ev.add_argument("--backend", default="inline", help="where runs execute (default inline)")
    add_backend_settings(ev)
    ev.add_argument(
        "--parallel",
        type=_positive_int,
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
        "--limit", type=_positive_int, metavar="N", help="make at most N runs (after --resume)"
    )
    ev.add_argument(
        "--no-floors",
        action="store_true",
        help="leave the trivial-agent floors (noop, restart-all) out of the leaderboard; by"
        " default those not asked for are played in this process on the same tasks and seeds",
    )
    ev.add_argument("--json", action="store_true", help="print the aggregates as JSON")
    ev.set_defaults(func=cmd_eval)

    pl = sub.add_parser("play", parents=[tasks_dir], help="play a task yourself at a prompt")
    pl.add_argument("task_id", metavar="ID")
    pl.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    pl.set_defaults(func=cmd_play)

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
    schema.set_defaults(func=cmd_schema)
    comp = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    comp.add_argument(
        "shell",
        choices=SHELLS,
        help="bash: 'source <(srez completion bash)'; zsh: save as _srez in a folder on $fpath",
    )
    comp.set_defaults(func=cmd_completion)
    add_commands(sub, _Parser)
    add_mirror_command(sub, _Parser)
    add_export_command(sub)
    add_managed_command(sub)
    add_tui_commands(sub)
    add_mcp_command(sub, [tasks_dir], one_task)
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
    flat = " ".join(message.split()) or "failed"
    sys.stderr.write(f"srez: error: {flat}\n")
    return status


def select_tasks(spec: str | None, tasks_dir: Path | None) -> list[Task]:
    """The tasks named by ``spec`` (``all``, None, or a comma list of ids), from ``tasks_dir``.

    Raises:
        srez_env.errors.TaskError: If an id is unknown or a task file is invalid.
        UsageError: If ``tasks_dir`` holds no task file, or ``spec`` has an empty item.
    """
    ids = None if spec in (None, "all") else comma_list("--tasks", spec or "")
    if tasks_dir is None:
        return load_tasks(ids)
    files = sorted(tasks_dir.glob("*.yaml"))
    if not files:
        msg = f"no task files (*.yaml) in {tasks_dir}"
        raise UsageError(msg)
    found = {task.id: task for task in (load_task(path) for path in files)}
    if ids is None:
        return [found[k] for k in sorted(found)]
    unknown = [i for i in ids if i not in found]
    if unknown:
        msg = f"unknown task id {unknown[0]!r} (not in {tasks_dir})"
        raise UsageError(msg)
    return [found[i] for i in ids]


def one_task(task_id: str, tasks_dir: Path | None) -> Task:
    """The task ``task_id`` (one id, not a list).

    Raises:
        srez_env.errors.TaskError: If the id is unknown or the task file is invalid.
        UsageError: If ``task_id`` is not a single id.
    """
    if task_id == "all" or "," in task_id:
        msg = f"expected one task id, got {task_id!r}"
        raise UsageError(msg)
    return select_tasks(task_id, tasks_dir)[0]


def cmd_tasks_list(args: argparse.Namespace) -> int:
    """``srez tasks list``."""
    tasks = select_tasks(None, args.tasks_dir)
    rows = [
        {
            "id": t.id,
            "title": t.title,
            "fault_kind": t.fault_kind,
            "root_service": t.ground_truth.root_cause.service,
            "difficulty": t.difficulty,
            "max_steps": t.max_steps,
        }
        for t in tasks
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    headers = ["id", "kind", "root service", "difficulty", "max steps"]
    cells = [
        [t.id, t.fault_kind, t.ground_truth.root_cause.service, t.difficulty, str(t.max_steps)]
        for t in tasks
    ]
    print(render_table(headers, cells, right=[4]))
    return 0


def cmd_tasks_show(args: argparse.Namespace) -> int:
    """``srez tasks show ID``: the public brief; ``--private`` adds what an agent must not see."""
    task = one_task(args.task_id, args.tasks_dir)
    if args.private:
        sys.stderr.write(
            "srez: warning: printing private task data (ground truth, reference fix); "
            "keep it away from agents\n"
        )
        sys.stderr.flush()
    print(f"id:         {task.id}")
    print(f"title:      {task.title}")
    print(f"difficulty: {task.difficulty}")
    print(f"max steps:  {task.max_steps}")
    print()
    for paragraph in task.incident.brief.strip().split("\n\n"):
        print(textwrap.fill(" ".join(paragraph.split()), width=100))
    if args.private:
        private = {
            "fault_kind": task.fault_kind,
            "ground_truth": task.ground_truth.model_dump(mode="json"),
            "reference_fix": [a.model_dump(mode="json") for a in task.reference_fix],
            "calibration": task.calibration.model_dump(mode="json"),
        }
        print()
        print(yaml.safe_dump(private, sort_keys=False, allow_unicode=True).rstrip())
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """``srez eval``: every (agent, task, seed) on the chosen backend, then the report."""
    # a backend that writes its results runs the episodes in this process, so eval drives them
    # directly (with task files from anywhere); the others are driven through their daemons
    in_process = backend_class(args.backend).writes_results
    if not in_process and args.tasks_dir is not None:
        hosts = " or ".join(names_where(lambda b: b.writes_results))
        msg = f"--tasks-dir works with --backend {hosts} only (the {args.backend} daemon loads the packaged tasks)"
        raise UsageError(msg)
    agents = list(dict.fromkeys(comma_list("--agent", args.agent)))
    if not agents:
        msg = "--agent needs at least one agent (scripted, heuristic, random, replay:FILE)"
        raise UsageError(msg)
    tasks = select_tasks(args.tasks, args.tasks_dir)
    if not tasks:
        msg = f"--tasks {args.tasks!r} selects no task ('all' or a comma list of ids)"
        raise UsageError(msg)
    model = model_for(agents, args.model)
    for spec in agents:  # fail fast on an unknown agent or a malformed replay file
        # An LLM agent is built in its own process, with its model; a custom command (cmd:NAME)
        # is its own process on a daemon backend (the inline backend refuses it below).
        if spec in LLM_SPECS or (custom_agent_name(spec) and not in_process):
            continue
        make_agent(spec, tasks[0], 0)
    if model != "none" and in_process:
        hosts = " or ".join(names_where(lambda b: not b.writes_results))
        msg = f"the llm agents run on --backend {hosts} (their own process), not {args.backend}"
        raise UsageError(msg)
    if any(spec in LLM_SPECS for spec in agents):
        check_provider_keys([model], os.environ)
    jobs = [(spec, task, seed) for spec in agents for task in tasks for seed in range(args.seeds)]
    plan = plan_eval(jobs, args.results, model, resume=args.resume, limit=args.limit)
    check_resume(plan, jobs, args.results)
    grades, runs = resumed_results(plan.resumed)
    if plan.resumed:
        say(f"{len(plan.resumed)} of {len(jobs)} runs already complete under {args.results}")
    if not in_process:
        try:
            done = eval_on_backend(
                args.backend,
                plan.todo,
                args.results,
                args.parallel,
                model,
                environ=environment_of(args, os.environ),
            )
        except KeyboardInterrupt:  # a second signal: the runs that ended are mirrored already
            say_interrupted(None, len(plan.todo), args.results)
            return 130
        if done.interrupted:
            say_interrupted(len(done.rows), len(plan.todo), args.results)
        failed = failed_by_label(done.failed, model)
        floors = [] if done.interrupted else floors_for(args, agents, tasks)
        grades, runs = grades + done.grades, runs + done.rows
        print_eval(args, grades, runs, failed=failed, plan=plan, floors=floors)
        return 130 if done.interrupted else 0
    first = len(runs)
    try:
        eval_inline(plan.todo, args.results, grades, runs)
    except KeyboardInterrupt:  # the run in flight left nothing behind (run_inline removes it)
        say_interrupted(len(runs) - first, len(plan.todo), args.results)
        print_eval(args, grades, runs, plan=plan)
        return 130
    return print_eval(args, grades, runs, plan=plan, floors=floors_for(args, agents, tasks))


def floors_for(
    args: argparse.Namespace, agents: list[str], tasks: list[Task]
) -> list[dict[str, object]]:
    """The grades of the floors ``--agent`` left out, unless ``--no-floors``."""
    return [] if args.no_floors else floor_grades(missing_floors(agents), tasks, args.seeds)


def cmd_play(args: argparse.Namespace) -> int:
    """``srez play ID``: commands from stdin, observations and the grade on stdout."""
    task = one_task(args.task_id, args.tasks_dir)
    lines = prompted_lines("srez> ") if sys.stdin.isatty() else iter(sys.stdin.readline, "")
    play(task, lines, sys.stdout, run_seed=args.seed)
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    """``srez completion bash|zsh``."""
    sys.stdout.write(completion_script(build_parser(), args.shell))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """``srez schema dialog``."""
    if args.which is None:
        msg = f"srez schema needs which schema to print: one of {', '.join(SCHEMAS)} (e.g. 'srez schema dialog')"
        raise UsageError(msg)
    print(json.dumps(dialog_json_schema(), indent=2))
    return 0
