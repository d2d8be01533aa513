"""Grade a run on the host, from its transcript, when its daemon died before grading.

A daemon killed with ``kill -9`` (or lost with its machine's power) leaves a run folder with a
dialog and ``archive/transcript.jsonl`` but no ``result.json``. The simulator is deterministic:
the same task and the same actions give the same transcript and the same grade. So the host can
compute the grade the daemon would have written, and it does, on mirror and with ``srez regrade``:

1. **The task** is the one ``run.json`` names, loaded from the packaged tasks (the daemon loads
   only those: ``srez eval`` refuses ``--tasks-dir`` on daemon backends), or from ``--tasks-dir``
   when given. The task's world provenance (generator, world seed, task set seed) must equal what
   ``run.json`` recorded, or the task file is not the one the run used and nothing is graded.
2. **Trust.** Every transcript line's action is replayed through a fresh ``SREEnv`` of that task
   (the run's seed, agent and model), and the line the simulator writes must equal the recorded
   line byte for byte; the first line that differs (an edited or an extra line, a line after the
   episode ended, a torn line) refuses the grade, naming the line. The dialog, written by the same
   daemon, must agree: its ``tool_result`` entries carry the transcript's steps, statuses and
   outputs, in order. A transcript that does not replay is not graded: what it says did not
   happen in this simulator.
3. **The end.** A transcript whose episode ended (``submit``, the step budget) ends the replay
   itself. Otherwise the episode is force-submitted with the recorded end reason: the one
   ``state.json`` gives once the agent phase ended (a time limit), else ``agent_exit`` (the daemon
   died during the agent phase, where a stop would have ended it the same way).
4. **What is written.** ``result.json`` is the env's :class:`~srez_env.grade.Grade`, unchanged in
   form, with ``error_kind`` as the daemon would have set it: ``harness`` when the daemon died
   during the agent phase (what a stop records), otherwise what the dialog's closing entry says
   (completed: none; timed out: ``agent``; failed: ``harness`` if stopped, ``provider`` if the
   daemon recorded a provider failure, else ``agent``). ``final.patch`` and ``reference.patch``
   are written when missing. ``summary.json`` is rewritten with the grade, ``status: error``,
   ``error_kind: harness`` (the harness failed: the daemon died) and ``graded_by: host``, which
   is how a host-graded run is told from one that graded itself. A line goes to
   ``logs/evaluator.log`` either way, also when a replay is refused.

What the replay proves: the transcript is an episode this task's simulator produces for those
actions, and the dialog agrees with it. It cannot prove who wrote the files: a host grade is as
trustworthy as the run folder it was read from.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

import orjson
from pydantic import ValidationError

from srez_client.errors import RegradeError
from srez_client.mirror.fs import read_small_file
from srez_daemon.protocol import (
    DialogEntry,
    RunManifest,
    RunSummary,
    SessionCompleted,
    SessionFailed,
    SessionTimedOut,
    TokenCount,
    ToolResult,
    Usage,
    iter_dialog,
)
from srez_daemon.protocol.api import RunState
from srez_daemon.record.storage import atomic_write_bytes, utc_timestamp
from srez_env.env import SREEnv
from srez_env.errors import EnvError
from srez_env.grade import Grade, grade_episode
from srez_env.task import Task
from srez_env.tasks import load_task, load_tasks

logger = logging.getLogger(__name__)

TRANSCRIPT: Final = Path("archive") / "transcript.jsonl"
DIALOG: Final = Path("archive") / "dialog.jsonl"
MAX_FILE_BYTES: Final = 256 << 20
"""Largest transcript or dialog read (a run's budget is tens of steps: far below this)."""
DAEMON_DIED: Final = "the run's daemon died before grading; graded by the host from its transcript"

ErrorKind = Literal["provider", "agent", "harness"]
ForcedReason = Literal["agent_exit", "time_limit", "step_budget"]
_Closing = SessionCompleted | SessionFailed | SessionTimedOut


@dataclass(frozen=True, slots=True)
class Regraded:
    """A run graded on the host."""

    grade: Grade
    summary: RunSummary
    steps_replayed: int
    """Transcript lines replayed (each equal to the recorded one)."""


def needs_regrade(folder: Path) -> bool:
    """Whether ``folder`` is a run folder with a transcript and no ``result.json``."""
    return (
        not (folder / "result.json").exists()
        and (folder / TRANSCRIPT).is_file()
        and (folder / "run.json").is_file()
    )


def regrade_folder(folder: Path, *, tasks_dir: Path | None = None) -> Regraded:
    """Grade the run in ``folder`` from its transcript and write its grade files.

    Args:
        folder: A run folder (a copy before its mirror, a results folder, or a local run's
            ``run/`` once its daemon is gone).
        tasks_dir: Read the task from the ``*.yaml`` files of this folder (default: packaged).

    Returns:
        The grade and the new summary.

    Raises:
        RegradeError: If the run is graded already, or cannot be graded (see the module
            docstring); nothing is written then but a line in ``logs/evaluator.log``.
    """
    if (folder / "result.json").exists():
        msg = f"{folder} has a result.json already: it was graded where it ran"
        raise RegradeError(msg)
    try:
        regraded = replay_folder(folder, tasks_dir=tasks_dir)
    except RegradeError as e:
        _log(folder, f"host regrade refused: {e}")
        raise
    grade = regraded.grade
    atomic_write_bytes(folder / "result.json", grade.to_json())
    for name, text in (("final.patch", grade.diff), ("reference.patch", grade.reference_patch)):
        if not (folder / name).exists():
            atomic_write_bytes(folder / name, text.encode())
    atomic_write_bytes(
        folder / "summary.json", regraded.summary.model_dump_json(indent=2).encode() + b"\n"
    )
    _log(
        folder,
        f"host-graded: {regraded.steps_replayed} transcript lines replayed identically; end "
        f"{grade.metrics.end_reason}, reward {grade.reward.total} resolved {grade.resolved} "
        f"passed {grade.passed}",
    )
    logger.info("run %s: graded by the host", regraded.summary.run_id)
    return regraded


def regrade_copy(folder: Path, run_id: str) -> Regraded | None:
    """Grade a copied run folder before its mirror if it needs it (:func:`needs_regrade`); a
    refused replay is logged (and written to ``logs/evaluator.log``) and the run is mirrored
    ungraded. Never raises :class:`RegradeError`."""
    if not needs_regrade(folder):
        return None
    try:
        return regrade_folder(folder)
    except RegradeError as e:
        logger.warning("run %s has no grade and the host cannot grade it: %s", run_id, e)
        return None


def replay_folder(folder: Path, *, tasks_dir: Path | None = None) -> Regraded:
    """The grade and summary of the run in ``folder``, computed and checked, nothing written.

    Raises:
        RegradeError: See :func:`regrade_folder`.
    """
    manifest = _manifest(folder)
    task = task_for(manifest, tasks_dir)
    lines = _transcript_lines(folder)
    dialog = list(iter_dialog(_read(folder, DIALOG, "the dialog")))
    closing = next((e for e in reversed(dialog) if isinstance(e, _Closing)), None)
    state = _state(folder)
    env = replay(task, manifest, lines)
    check_dialog(dialog, lines, ended=closing is not None)
    if not env.done:
        env.force_submit(_forced_reason(state, closing))
    grade = grade_episode(env.record())
    kind = _grade_error_kind(closing, state)
    if kind is not None:
        grade = grade.model_copy(update={"error_kind": kind})
    summary = _summary(folder, manifest, grade, dialog, closing)
    return Regraded(grade=grade, summary=summary, steps_replayed=len(lines))


def task_for(manifest: RunManifest, tasks_dir: Path | None) -> Task:
    """The task a run used: by id, packaged or from ``tasks_dir``, with the recorded provenance.

    Raises:
        RegradeError: If the task is unknown or is not the one the run recorded.
    """
    try:
        if tasks_dir is None:
            (task,) = load_tasks([manifest.task_id])
        else:
            found = list(map(load_task, sorted(tasks_dir.glob("*.yaml"))))
            matches = [t for t in found if t.id == manifest.task_id]
            if not matches:
                msg = f"task {manifest.task_id!r} is not in {tasks_dir}"
                raise RegradeError(msg)
            task = matches[0]
    except EnvError as e:
        msg = f"cannot load task {manifest.task_id!r} of run {manifest.run_id}: {e}"
        raise RegradeError(msg) from e
    recorded = {
        "world_generator": manifest.world_generator,
        "world_seed": manifest.world_seed,
        "task_set_seed": manifest.task_set_seed,
    }
    if task.provenance() != recorded:
        where = "the packaged tasks" if tasks_dir is None else str(tasks_dir)
        msg = (
            f"task {task.id} in {where} has provenance {task.provenance()}, but run "
            f"{manifest.run_id} recorded {recorded}: not the task it ran (give --tasks-dir DIR "
            "with the task set it used)"
        )
        raise RegradeError(msg)
    return task


def replay(task: Task, manifest: RunManifest, lines: list[str]) -> SREEnv:
    """A fresh episode of ``task`` driven by the actions of ``lines``, each checked to produce
    the same line.

    Raises:
        RegradeError: At the first line that is not what the simulator writes for its action.
    """
    env = SREEnv(task, run_seed=manifest.run_seed, agent=manifest.agent, model=manifest.model)
    env.reset()
    for number, line in enumerate(lines, start=1):
        where = f"transcript line {number}"
        if env.done:
            msg = f"{where}: the episode had already ended at line {number - 1}; refusing to grade"
            raise RegradeError(msg)
        env.step(_action(line, where))
        if env.transcript[-1] != line:
            msg = (
                f"{where} does not replay: the simulator writes another line for its action; "
                "a transcript that does not replay is not trustworthy, so it is not graded"
            )
            raise RegradeError(msg)
    return env


def check_dialog(dialog: list[DialogEntry], lines: list[str], *, ended: bool) -> None:
    """The dialog's tool results agree with the transcript, in order.

    The daemon writes the ``tool_result`` entry just before the transcript line, so a daemon that
    died in between leaves one result more (only while the agent phase ran); a call that arrived
    after the episode ended is refused with ``ALREADY_SUBMITTED`` and has no transcript line.

    Raises:
        RegradeError: If they disagree.
    """
    results = [e for e in dialog if isinstance(e, ToolResult)]
    if len(results) < len(lines):
        msg = (
            f"the dialog holds {len(results)} tool results but the transcript {len(lines)} lines; "
            "refusing to grade"
        )
        raise RegradeError(msg)
    for number, (entry, line) in enumerate(zip(results, lines, strict=False), start=1):
        obs = orjson.loads(line)["observation"]
        agree = entry.step == obs.get("step") and (entry.status == "success") == bool(obs["ok"])
        if agree and obs["ok"]:
            agree = entry.result == obs.get("output")
        if not agree:
            msg = f"transcript line {number} disagrees with the dialog's tool result {number}"
            raise RegradeError(msg)
    extra = [e for e in results[len(lines) :] if "ALREADY_SUBMITTED" not in e.result]
    if len(extra) > (0 if ended else 1):
        msg = (
            f"the dialog holds {len(extra)} tool results the transcript does not have; "
            "refusing to grade"
        )
        raise RegradeError(msg)


# ---------------------------------------------------------------------- reading the folder


def _read(folder: Path, relative: Path, what: str) -> bytes:
    data: bytes | None = None
    parent = folder / relative.parent
    if parent.is_dir() and not parent.is_symlink():
        data = read_small_file(parent, relative.name.encode(), MAX_FILE_BYTES)
    if data is None:
        msg = f"{folder}: {what} ({relative}) is missing or unreadable; cannot grade the run"
        raise RegradeError(msg)
    return data


def _manifest(folder: Path) -> RunManifest:
    try:
        return RunManifest.model_validate_json(_read(folder, Path("run.json"), "run.json"))
    except ValidationError as e:
        msg = f"{folder}: run.json is not valid ({e.error_count()} errors); cannot grade the run"
        raise RegradeError(msg) from e


def _transcript_lines(folder: Path) -> list[str]:
    data = _read(folder, TRANSCRIPT, "the transcript")
    if data and not data.endswith(b"\n"):
        msg = f"{folder}: the transcript's last line is torn (no newline); refusing to grade"
        raise RegradeError(msg)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        msg = f"{folder}: the transcript is not UTF-8 (byte {e.start}); refusing to grade"
        raise RegradeError(msg) from e
    return text.splitlines()


def _state(folder: Path) -> RunState | None:
    data = read_small_file(folder, b"state.json", 1 << 20)
    if data is None:
        return None
    try:
        return RunState.model_validate_json(data)
    except ValidationError:
        return None


def _action(line: str, where: str) -> dict[str, object] | str:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        msg = f"{where} is not JSON ({e}); refusing to grade"
        raise RegradeError(msg) from e
    action = record.get("action") if isinstance(record, dict) else None
    if isinstance(action, dict) and isinstance(action.get("tool"), str):
        args = action.get("args", {})
        return {"tool": action["tool"], "args": args}
    if isinstance(action, dict) and isinstance(action.get("raw"), str):
        return str(action["raw"])
    msg = f"{where} has no action to replay; refusing to grade"
    raise RegradeError(msg)


# ---------------------------------------------------------------------- how the run ended


def _forced_reason(state: RunState | None, closing: _Closing | None) -> ForcedReason:
    recorded = state.end_reason if state is not None and closing is not None else None
    if recorded in ("agent_exit", "time_limit", "step_budget"):
        return recorded
    if isinstance(closing, SessionTimedOut):
        return "time_limit"
    return "agent_exit"


def _grade_error_kind(closing: _Closing | None, state: RunState | None) -> ErrorKind | None:
    if closing is None:
        return "harness"  # died in the agent phase: a stop there records the same
    if isinstance(closing, SessionCompleted):
        return None
    if isinstance(closing, SessionTimedOut):
        return "agent"
    if state is not None and state.end_reason == "stopped":
        return "harness"
    error = closing.error or ""
    if error.startswith("the model provider failed"):
        return "provider"
    if error.startswith("the agent refused its configuration"):
        return "harness"
    return "agent"


def _summary(
    folder: Path,
    manifest: RunManifest,
    grade: Grade,
    dialog: list[DialogEntry],
    closing: _Closing | None,
) -> RunSummary:
    old: RunSummary | None = None
    data = read_small_file(folder, b"summary.json", 1 << 20)
    if data is not None:
        try:
            old = RunSummary.model_validate_json(data)
        except ValidationError:
            old = None
    before = [e for e in (closing.error if closing else None, old.error if old else None) if e]
    error = DAEMON_DIED + "".join(f" (before that: {e})" for e in dict.fromkeys(before))
    last_ts = dialog[-1].ts if dialog else manifest.started_at
    usage = next((e for e in reversed(dialog) if isinstance(e, Usage)), None)
    duration = _seconds_between(manifest.started_at, last_ts)
    return RunSummary(
        run_id=manifest.run_id,
        task_id=manifest.task_id,
        agent=manifest.agent,
        model=manifest.model,
        status="error",
        reward=grade.reward.total,
        resolved=grade.resolved,
        passed=grade.passed,
        steps=grade.steps,
        end_reason=grade.metrics.end_reason,
        duration_s=old.duration_s if old else duration,
        finished_at=old.finished_at if old else last_ts,
        error=error,
        error_kind="harness",
        claimed_error_kind=old.claimed_error_kind if old else None,
        cost_usd=usage.cost_usd if usage else (old.cost_usd if old else 0.0),
        tokens=usage.tokens if usage else (old.tokens if old else TokenCount()),
        graded_by="host",
    )


def _seconds_between(start: str, end: str) -> float:
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return round(max(0.0, (b - a).total_seconds()), 3)


def _log(folder: Path, line: str) -> None:
    """Append a line to ``logs/evaluator.log`` (never through a link; best effort)."""
    logs = folder / "logs"
    if logs.is_symlink() or (logs / "evaluator.log").is_symlink():
        return
    try:
        logs.mkdir(exist_ok=True)
        with (logs / "evaluator.log").open("a", encoding="utf-8") as f:
            f.write(f"{utc_timestamp(datetime.now(UTC))} {line}\n")
    except OSError as e:
        logger.warning("%s: cannot write logs/evaluator.log: %s", folder, e)
