"""Grade a run on the host, from its transcript, when its daemon died before grading.

A daemon killed with ``kill -9`` (or lost with its machine's power) leaves a run folder with a
dialog and ``archive/transcript.jsonl`` but no ``result.json``. The simulator is deterministic:
the same task and the same actions give the same transcript and the same grade. So the host can
compute the grade the daemon would have written, and it does, on mirror and with ``srez regrade``:

1. **The task** is the one ``run.json`` names: the task the host handed the run (a
   ``--tasks-dir`` or ``--task-seed`` set's, on mirror right after the run), or loaded from the
   packaged tasks, or from ``--tasks-dir`` when given. The task's world provenance (generator,
   world seed, task set seed) and, when recorded, its content digest must equal what ``run.json``
   recorded, or the task is not the one the run used and nothing is graded.
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

Steps 1 and 2 are :mod:`srez_client.results.transcript_replay`, steps 3 and 4 (the end, the
error kind, the summary) :mod:`srez_client.results.run_outcome`; this module reads the folder,
puts them together and writes the files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TypeVar

from pydantic import BaseModel, ValidationError

from srez_client.errors import RegradeError
from srez_client.results.run_outcome import (
    closing_entry,
    forced_reason,
    grade_error_kind,
    host_summary,
    ungraded_summary,
)
from srez_client.results.transcript_replay import check_dialog, replay, task_for
from srez_client.transfer.fs import read_small_file
from srez_core.atomic import atomic_write_bytes
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import RunManifest, RunSummary, iter_dialog
from srez_daemon.protocol.api import RunState
from srez_env.grade import Grade, grade_episode
from srez_env.task import Task

logger = logging.getLogger(__name__)

TRANSCRIPT: Final = Path("archive") / "transcript.jsonl"
DIALOG: Final = Path("archive") / "dialog.jsonl"
MAX_FILE_BYTES: Final = 256 << 20
"""Largest transcript or dialog read (a run's budget is tens of steps: far below this)."""

_M = TypeVar("_M", bound=BaseModel)


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


def regrade_folder(
    folder: Path, *, tasks_dir: Path | None = None, task: Task | None = None
) -> Regraded:
    """Grade the run in ``folder`` from its transcript and write its grade files.

    Args:
        folder: A run folder (a copy before its mirror, a results folder, or a local run's
            ``run/`` once its daemon is gone).
        tasks_dir: Read the task from the ``*.yaml`` files of this folder (default: packaged).
        task: The task itself, when the host has it (the one it handed the run).

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
        regraded = replay_folder(folder, tasks_dir=tasks_dir, task=task)
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


def regrade_copy(folder: Path, run_id: str, task: Task | None = None) -> Regraded | None:
    """Grade a copied run folder before its mirror if it needs it (:func:`needs_regrade`), with
    ``task`` when the host handed it to the run (else the packaged one). A run left with no
    ``summary.json`` that cannot be graded (no transcript, a refused replay) gets one written by
    the host (:func:`~srez_client.results.run_outcome.ungraded_summary`), so the folder under
    its final name is complete. Never raises :class:`RegradeError`."""
    why = "its run folder holds no transcript of an episode"
    if needs_regrade(folder):
        try:
            return regrade_folder(folder, task=task)
        except RegradeError as e:
            logger.warning("run %s has no grade and the host cannot grade it: %s", run_id, e)
            why = str(e)
    if not (folder / "summary.json").exists():
        _write_ungraded(folder, run_id, why)
    return None


def _write_ungraded(folder: Path, run_id: str, why: str) -> None:
    try:
        manifest = _manifest(folder)
    except RegradeError as e:  # no valid run.json: the mirror refuses the folder anyway
        logger.warning("run %s: %s", run_id, e)
        return
    summary = ungraded_summary(
        manifest, " ".join(why.split())[:500], utc_timestamp(datetime.now(UTC))
    )
    atomic_write_bytes(folder / "summary.json", summary.model_dump_json(indent=2).encode() + b"\n")
    logger.warning("run %s ended without a summary; the host wrote one (not graded)", run_id)


def replay_folder(
    folder: Path, *, tasks_dir: Path | None = None, task: Task | None = None
) -> Regraded:
    """The grade and summary of the run in ``folder``, computed and checked, nothing written.

    Raises:
        RegradeError: See :func:`regrade_folder`.
    """
    manifest = _manifest(folder)
    task = task_for(manifest, tasks_dir, task)
    lines = _transcript_lines(folder)
    dialog = list(iter_dialog(_read(folder, DIALOG, "the dialog")))
    closing = closing_entry(dialog)
    state = _optional(folder, "state.json", RunState)
    env = replay(task, manifest, lines)
    check_dialog(dialog, lines, ended=closing is not None)
    if not env.done:
        env.force_submit(forced_reason(state, closing))
    grade = grade_episode(env.record())
    kind = grade_error_kind(closing, state)
    if kind is not None:
        grade = grade.model_copy(update={"error_kind": kind})
    old = _optional(folder, "summary.json", RunSummary)
    summary = host_summary(manifest, grade, dialog, closing, old)
    return Regraded(grade=grade, summary=summary, steps_replayed=len(lines))


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


def _optional(folder: Path, name: str, model: type[_M]) -> _M | None:
    """``name`` in ``folder`` read as ``model``; None if it is missing, over 1 MiB or not valid."""
    data = read_small_file(folder, name.encode(), 1 << 20)
    if data is None:
        return None
    try:
        return model.model_validate_json(data)
    except ValidationError:
        return None


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
