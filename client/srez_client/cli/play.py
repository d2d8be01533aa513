"""``srez play``: a person plays a task at a prompt, one tool call per line.

A line is either ``tool value value key=value`` (values in the order ``help`` shows the
arguments, or by name; quoted as in a shell; ``replicas``, ``limit`` and ``minutes`` that look
like integers become integers, every other value stays a string) or a JSON object
``{"tool": ..., "args": {...}}``. Results are printed as text: a tool's text output as it is, a
JSON one indented. ``help`` lists the tools, ``quit``
gives up (the episode is force-submitted), and the tool ``submit`` ends it; the grade is printed
at the end either way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final, TextIO

from srez_client.cli.tasks import one_task
from srez_client.errors import UsageError
from srez_client.results.report import CHECK_NAMES, GradeView
from srez_client.results.table import clean
from srez_client.shell_words import split_words
from srez_env.baselines.replay import parse_action
from srez_env.env import SREEnv
from srez_env.grade import grade_episode
from srez_env.task import Task

INT_ARGS: Final = frozenset({"replicas", "limit", "minutes"})
"""Arguments whose integer-looking values are sent as integers."""

PLAYER: Final = "human"
"""Agent name of a person at the prompt, as the grade records it."""
HELP_WORDS: Final = frozenset({"help", "?", "tools"})
QUIT_WORDS: Final = frozenset({"quit", "exit"})


def parse_command(
    line: str, params: Mapping[str, Sequence[str]] | None = None
) -> dict[str, object]:
    """Turn one typed line into an action ``{"tool": str, "args": {...}}``.

    Args:
        line: ``tool value ... key=value ...`` or a JSON object.
        params: Each tool's argument names in the order ``help`` shows them: a bare value is
            the next of these. A word ``name=value`` whose name is one of the tool's arguments
            names it (any other word with ``=`` is a value: ``set_config db opts a=b``).

    Returns:
        The action.

    Raises:
        UsageError: If the line is not in either form (nothing is sent to the simulator then).
    """
    text = line.strip()
    if text.startswith("{"):
        try:
            return parse_action(text)
        except ValueError as e:
            raise UsageError(str(e)) from e
    tool, *words = split_words(text, "the line", example="get_logs payments")
    names = list((params or {}).get(tool, ()))
    args: dict[str, object] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not (sep and key and (key in names or not names)):
            free = [n for n in names if n not in args]
            if not free:
                msg = f"{tool} takes no more values, got {word!r} (see 'help'; e.g. get_logs payments 10m)"
                raise UsageError(msg)
            key, value = free[0], word
        is_int = key in INT_ARGS and value.lstrip("-").isdigit()
        args[key] = int(value) if is_int else value
    return {"tool": tool, "args": args}


def tool_params(tools: object) -> dict[str, list[str]]:
    """Each tool's argument names, in the order :func:`tools_help` shows them."""
    params: dict[str, list[str]] = {}
    for spec in tools if isinstance(tools, list) else []:
        fn = spec.get("function", spec) if isinstance(spec, dict) else {}
        props = fn.get("parameters", {}).get("properties", {}) if isinstance(fn, dict) else {}
        if isinstance(fn, dict) and isinstance(props, dict):
            params[str(fn.get("name", ""))] = [str(name) for name in props]
    return params


def tools_help(tools: object) -> str:
    """One line per tool from the prompt's OpenAI-style function specs: name, args, summary."""
    lines = []
    for spec in tools if isinstance(tools, list) else []:
        fn = spec.get("function", spec) if isinstance(spec, dict) else {}
        if not isinstance(fn, dict):
            continue
        params = fn.get("parameters", {})
        props = params.get("properties", {}) if isinstance(params, dict) else {}
        required = params.get("required", []) if isinstance(params, dict) else []
        args = [name if name in required else f"[{name}]" for name in props]
        summary = str(fn.get("description", "")).strip().splitlines()
        first = summary[0] if summary else ""
        lines.append(f"  {fn.get('name', '?')} {' '.join(args)}".rstrip() + f"  -  {first}")
    lines.append(
        "  (values in this order, or by name as key=value; quoted if they hold spaces;"
        " or one JSON object per line)"
    )
    lines.append("  help: this list; quit: give up and see the grade")
    return "\n".join(clean(line) for line in lines)


def observation_lines(observation: Mapping[str, object]) -> str:
    """What to print for one observation: the output, or the error, then a status line."""
    if observation.get("ok"):
        body = readable(observation.get("output", ""))
    else:
        error = observation.get("error")
        err = error if isinstance(error, dict) else {}
        body = f"error {err.get('code', '?')}: {err.get('message', '')}"
        if err.get("hint"):
            body += f"\nhint: {err['hint']}"
    status = (
        f"[step {observation.get('step')}, {observation.get('steps_left')} left, "
        f"clock {observation.get('clock')}]"
    )
    return f"{clean_text(body)}\n{status}"


def readable(output: object) -> str:
    """A tool's output for a person: text as it is, JSON (an object or a list, or a string that
    holds one) indented."""
    value = output
    if isinstance(output, str):
        try:
            value = json.loads(output)
        except ValueError:
            return output
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return str(output)


def clean_text(text: str) -> str:
    """Like :func:`~srez_client.results.table.clean`, but keeps newlines and tabs."""
    return "\n".join(clean(line.replace("\t", "    ")) for line in text.split("\n"))


def grade_text(grade: GradeView) -> str:
    """The five checks with their reasons, then the reward and its components."""
    lines = [f"grade of {grade.task_id}: reward {grade.reward.total:.6f}"]
    for name in CHECK_NAMES:
        check = grade.checks.get(name)
        mark = "PASS" if check is not None and check.passed else "FAIL"
        lines.append(f"  {name:<7}{mark}")
        lines.extend(f"           {reason}" for reason in (check.reasons if check else []))
    lines.append(f"  resolved {grade.resolved}, passed {grade.passed}, steps {grade.steps}")
    parts = ", ".join(f"{k} {v:.6f}" for k, v in grade.reward.components.items())
    lines.append(f"  reward components: {parts}")
    return "\n".join(clean(line) for line in lines)


def prompted_lines(prompt: str) -> Iterator[str]:
    """Lines typed at an interactive prompt (with line editing where ``readline`` exists)."""
    with contextlib.suppress(ImportError):  # not on every platform
        import readline  # noqa: F401 - importing it turns on line editing for input()
    while True:
        try:
            yield input(prompt)
        except EOFError:
            return


def play(task: Task, lines: Iterable[str], out: TextIO, *, run_seed: int = 0) -> GradeView:
    """Play ``task`` with commands from ``lines``, printing to ``out``; returns the grade.

    The episode ends on ``submit``, when the step budget runs out, on ``quit`` or at the end of
    the input (the last two force-submit it as ``agent_exit``).
    """
    env = SREEnv(task, run_seed=run_seed, agent=PLAYER)
    prompt = env.reset()
    out.write(clean_text(str(prompt.get("text", ""))) + "\n\n")
    out.write("Type 'help' for the tools, one call per line; 'submit' ends the episode.\n")
    params = tool_params(prompt.get("tools"))
    for line in lines:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        if word in HELP_WORDS:
            out.write(tools_help(prompt.get("tools")) + "\n")
            continue
        if word in QUIT_WORDS:
            break
        try:
            action = parse_command(word, params)
        except UsageError as e:
            out.write(f"not sent: {e}\n")
            continue
        result = env.step(action)
        out.write(observation_lines(result.observation) + "\n")
        if env.done:
            break
    if not env.done:
        env.force_submit("agent_exit")
    grade = GradeView.model_validate_json(grade_episode(env.record()).to_json())
    out.write("\n" + grade_text(grade) + "\n")
    return grade


def cmd_play(args: argparse.Namespace) -> int:
    """``srez play ID``: commands from stdin, observations and the grade on stdout."""
    task = one_task(args.task_id, args.tasks_dir)
    lines = prompted_lines("srez> ") if sys.stdin.isatty() else iter(sys.stdin.readline, "")
    play(task, lines, sys.stdout, run_seed=args.seed)
    return 0
