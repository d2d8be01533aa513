"""The results layout on the host (DESIGN.md §7) and the durable writes that build it.

A run lives in ``results/<task>/<model>/<agent>/<run-id>/``: ``<model>`` is the model slug with
``/`` written as ``__`` (``none`` for the baselines) and ``<run-id>`` is
``YYYYMMDDTHHMMSSZ-<8 hex>``. A run is written into ``.<run-id>.partial/`` beside its final place
and renamed when complete, so a folder under its final name is always complete. Its files:

* ``run.json``: what was launched (:class:`~srez_daemon.protocol.RunManifest`);
* ``archive/dialog.jsonl``: the dialog (:mod:`srez_daemon.protocol.dialog`), fsynced per entry;
* ``archive/transcript.jsonl``: the environment's own step log (replayable);
* ``result.json``: the grade; ``final.patch`` and ``reference.patch``: the two diffs;
* ``summary.json``: how it ended (:class:`~srez_daemon.protocol.RunSummary`), written last.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Final, Self, TypeVar

import orjson
from pydantic import BaseModel

from srez_client.errors import ResultsError
from srez_daemon.protocol import DialogEntry, encode_entry

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]
"""Returns the current time as an aware datetime."""

RandomBytes = Callable[[int], bytes]
"""Returns n random bytes (``os.urandom`` in production)."""

RUN_ID_RE: Final = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")
"""What a run id looks like."""

DIALOG_PATH: Final = Path("archive") / "dialog.jsonl"
"""Where the dialog sits inside a run folder."""

_UNSAFE_COMPONENT: Final = re.compile(r"[\x00-\x1f\x7f]")
E = TypeVar("E", bound=DialogEntry)


def system_clock() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def utc_timestamp(moment: datetime) -> str:
    """Format a time as UTC ISO-8601 with milliseconds and a ``Z`` suffix.

    Args:
        moment: An aware datetime (a naive one is refused).

    Returns:
        E.g. ``2025-03-14T10:03:00.125Z``.

    Raises:
        ValueError: If ``moment`` is naive.
    """
    if moment.tzinfo is None:
        msg = f"naive datetime {moment!r}: pass an aware time (UTC)"
        raise ValueError(msg)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id(now: datetime, random_bytes: RandomBytes = os.urandom) -> str:
    """Make a run id, ``YYYYMMDDTHHMMSSZ-<8 hex>``.

    Args:
        now: The start time of the run (aware).
        random_bytes: Source of the 4 random bytes of the suffix.

    Returns:
        The run id.
    """
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{random_bytes(4).hex()}"


def model_slug(model: str | None) -> str:
    """The results-folder name of a model: ``/`` written as ``__``; ``none`` for no model.

    Args:
        model: A model slug such as ``anthropic/claude-x``, or None / ``""`` for baselines.

    Returns:
        A single, safe path component.

    Raises:
        ResultsError: If the name cannot be a folder name (``..``, control characters).
    """
    if not model:
        return "none"
    return path_component(model.replace("/", "__").replace("\\", "__"), "model")


def path_component(name: str, what: str) -> str:
    """Check that ``name`` is usable as one folder name inside the results tree.

    Args:
        name: The candidate name.
        what: What the name is, for the error message (``task``, ``agent``, ...).

    Returns:
        ``name`` unchanged.

    Raises:
        ResultsError: If it is empty, ``.`` or ``..``, or holds a separator or control character.
    """
    if (
        name in ("", ".", "..")
        or "/" in name
        or "\\" in name
        or _UNSAFE_COMPONENT.search(name)
        or len(name.encode()) > 200
    ):
        msg = f"{what} name {name!r} cannot be a results folder name (no '/', '..' or control characters)"
        raise ResultsError(msg)
    return name


def run_path(results_root: Path, task_id: str, model: str | None, agent: str, run_id: str) -> Path:
    """The final folder of a run: ``<root>/<task>/<model slug>/<agent>/<run-id>``.

    Raises:
        ResultsError: If a component is not a safe folder name or the run id is malformed.
    """
    if not RUN_ID_RE.match(run_id):
        msg = f"run id {run_id!r} is malformed (expected YYYYMMDDTHHMMSSZ-<8 hex>)"
        raise ResultsError(msg)
    agent_dir = path_component(agent.replace("/", "__").replace("\\", "__"), "agent")
    return results_root / path_component(task_id, "task") / model_slug(model) / agent_dir / run_id


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (new, renamed or removed names) to disk."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a mix.

    Writes a temp file in the same folder, fsyncs it, renames it over ``path`` and fsyncs the
    folder. If anything fails, the temp file is removed and ``path`` is left as it was.

    Args:
        path: The file to write; its folder must exist.
        data: The new content.
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, value: BaseModel | dict[str, object]) -> None:
    """Write a pydantic model or a dict as indented JSON with :func:`atomic_write_bytes`."""
    if isinstance(value, BaseModel):
        data = orjson.dumps(value.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    else:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    atomic_write_bytes(path, data + b"\n")


class DialogWriter:
    """Appends dialog entries to a file, one fsynced line each, and owns ``seq`` and ``ts``.

    Use it as a context manager. Entries are built by a factory that receives the next ``seq`` and
    the current ``ts``, so every entry is validated when it is made::

        with DialogWriter(path, clock=clock) as dialog:
            dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text=prompt))
    """

    def __init__(self, path: Path, *, clock: Clock = system_clock) -> None:
        """Open ``path`` for appending (it must not exist yet).

        Raises:
            FileExistsError: If the file exists: a dialog is never appended to across runs.
        """
        self._path = path
        self._clock = clock
        self._seq = 0
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        fsync_dir(path.parent)

    @property
    def path(self) -> Path:
        """The dialog file."""
        return self._path

    @property
    def count(self) -> int:
        """Entries written so far (also the next ``seq``)."""
        return self._seq

    def append(self, make: Callable[[int, str], E]) -> E:
        """Build the next entry with ``make(seq, ts)``, write it as one line and fsync.

        Returns:
            The entry as written.
        """
        if self._fd < 0:
            msg = f"dialog {self._path} is closed"
            raise ValueError(msg)
        entry = make(self._seq, utc_timestamp(self._clock()))
        data = encode_entry(entry)
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)
        self._seq += 1
        return entry

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class RunFolder:
    """A run folder being written under ``.<run-id>.partial/`` and renamed when complete."""

    def __init__(self, final_dir: Path) -> None:
        """Prepare (not create) the folders; see :meth:`create`."""
        self.final_dir = final_dir
        """Where the run ends up."""
        self.partial_dir = final_dir.with_name(f".{final_dir.name}.partial")
        """Where it is written until :meth:`complete`."""
        self._completed = False

    @classmethod
    def create(cls, final_dir: Path) -> Self:
        """Create the partial folder (and the parents of the final one).

        Raises:
            ResultsError: If the run folder or its partial folder already exists.
        """
        folder = cls(final_dir)
        if final_dir.exists():
            msg = f"run folder {final_dir} already exists; a run is never overwritten"
            raise ResultsError(msg)
        final_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.partial_dir.mkdir()
        except FileExistsError as e:
            msg = f"run folder {folder.partial_dir} already exists; is another run writing it?"
            raise ResultsError(msg) from e
        return folder

    @property
    def completed(self) -> bool:
        """Whether :meth:`complete` has renamed the folder."""
        return self._completed

    def path(self, relative: Path | str) -> Path:
        """A path inside the folder as it is now (partial until complete), parents created."""
        base = self.final_dir if self._completed else self.partial_dir
        target = base / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_bytes(self, relative: Path | str, data: bytes) -> Path:
        """Write a file atomically; returns its path."""
        target = self.path(relative)
        atomic_write_bytes(target, data)
        return target

    def write_json(self, relative: Path | str, value: BaseModel | dict[str, object]) -> Path:
        """Write a JSON file atomically; returns its path."""
        target = self.path(relative)
        atomic_write_json(target, value)
        return target

    def open_dialog(self, *, clock: Clock = system_clock) -> DialogWriter:
        """Create ``archive/dialog.jsonl`` and return its writer."""
        return DialogWriter(self.path(DIALOG_PATH), clock=clock)

    def complete(self) -> Path:
        """Rename the partial folder to its final name, durably.

        Returns:
            The final folder.

        Raises:
            ResultsError: If the final folder appeared meanwhile (it is never replaced).
        """
        if self._completed:
            return self.final_dir
        for folder in sorted(
            (p for p in self.partial_dir.rglob("*") if p.is_dir() and not p.is_symlink()),
            key=lambda p: len(p.parts),
            reverse=True,
        ):
            fsync_dir(folder)
        fsync_dir(self.partial_dir)
        if self.final_dir.exists():
            msg = f"run folder {self.final_dir} appeared while the run was written; kept {self.partial_dir}"
            raise ResultsError(msg)
        self.partial_dir.rename(self.final_dir)
        fsync_dir(self.final_dir.parent)
        self._completed = True
        logger.debug("completed run folder %s", self.final_dir)
        return self.final_dir
