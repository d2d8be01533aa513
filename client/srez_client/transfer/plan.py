"""What a mirror copies and what it skips, decided from a listing alone. Pure: no I/O.

The listing (:class:`SourceEntry`, one per ``lstat`` result, parents before children) comes from
:func:`srez_client.transfer.fs.scan_tree`; :func:`plan_entries` turns it into a :class:`MirrorPlan`:
folders and regular files with a single link are copied; symlinks, hardlinked files, FIFOs,
sockets, devices, bad names and the mirror's own reserved names are skipped and recorded; the caps
of :class:`MirrorLimits` are applied to the listed sizes (docs/security.md A5, A6).

The run's record, ``archive/dialog.jsonl`` and ``archive/transcript.jsonl``
(:data:`RECORD_FILES`), is never dropped by the per-file, file-count or total caps: the daemon
bounds it (caps on the agent's notes, the step budget), and a mirror without it would lose the
tool record. Only :attr:`MirrorLimits.max_record_bytes`, far above anything the daemon writes,
stops a forged one.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from srez_client.sanitize import escape_bytes

EntryType = Literal[
    "dir", "file", "symlink", "hardlink", "fifo", "socket", "char_device", "block_device", "unknown"
]
"""What a listed entry is (``hardlink``: a regular file with more than one link)."""

SkipReason = Literal[
    "link",
    "bad_parent",
    "hardlink",
    "special",
    "bad_name",
    "reserved",
    "too_deep",
    "too_large",
    "total_cap",
    "file_cap",
    "changed",
    "unreadable",
]
"""Why an entry was not copied. ``changed``: it was not the file the listing saw when opened;
``bad_parent``: its folder is not a copied folder (a path through a link, say)."""

MIRROR_JSON: Final = b"mirror.json"
"""The mirror's record, at the root of a mirrored folder."""
CONTAINER_LOG: Final = (b"logs", b"container.log")
"""Where the run's process output goes (written by the backend's ``copy_out``)."""
COPY_OUT_RESERVED: Final = frozenset({(MIRROR_JSON,), CONTAINER_LOG})
"""Paths a run folder may not provide itself when a backend copies it out."""
MIRROR_RESERVED: Final = frozenset({(MIRROR_JSON,)})
"""Paths :func:`srez_client.mirror.copier.mirror_run` writes itself."""
RECORD_FILES: Final = frozenset({(b"archive", b"dialog.jsonl"), (b"archive", b"transcript.jsonl")})
"""The run's record: copied whatever the per-file, file-count and total caps (up to
:attr:`MirrorLimits.max_record_bytes`)."""


@dataclass(frozen=True, slots=True)
class MirrorLimits:
    """Caps of one mirror (docs/security.md A6)."""

    max_files: int = 100_000
    """Files copied at most."""
    max_total_bytes: int = 1 << 30
    """Bytes copied at most, in all."""
    max_file_bytes: int = 100 << 20
    """Largest file copied."""
    max_record_bytes: int = 4 << 30
    """Largest :data:`RECORD_FILES` file copied: the daemon's caps keep a real dialog far below
    (64 MiB of notes plus the tool record); only a forged one can pass it."""
    max_depth: int = 64
    """Folders deeper than this are not entered (each open level holds a descriptor)."""
    max_name_bytes: int = 255
    """Longest name component."""


DEFAULT_LIMITS: Final = MirrorLimits()
"""The caps of docs/security.md A6."""


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """One entry of a listing: what ``lstat`` said about it."""

    parts: tuple[bytes, ...]
    """Path components from the root."""
    type: EntryType
    size: int = 0
    dev: int = 0
    ino: int = 0
    link_target: bytes | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    """An entry that was not copied, and why."""

    parts: tuple[bytes, ...]
    type: EntryType
    reason: SkipReason
    link_target: bytes | None = None


@dataclass(frozen=True, slots=True)
class MirrorPlan:
    """What to copy (folders and files, parents before children) and what to skip."""

    entries: tuple[SourceEntry, ...]
    skipped: tuple[Skipped, ...]
    truncated: bool
    total_bytes: int


class SkippedRecord(BaseModel):
    """One skipped entry of ``mirror.json``; names escaped with ``escape_bytes``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str
    type: str
    link_target: str | None = None
    reason: str


class FileRecord(BaseModel):
    """One copied file of ``mirror.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str
    size: int
    sha256: str


class MirrorRecord(BaseModel):
    """``mirror.json``: what the mirror copied and what it skipped."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_version: Literal[1] = 1
    run_id: str | None = None
    artifacts_truncated: bool = False
    files_copied: int = 0
    bytes_copied: int = 0
    skipped: list[SkippedRecord] = []
    files: list[FileRecord] = []


@dataclass(frozen=True, slots=True)
class MirrorReport:
    """What one copy did."""

    files: tuple[FileRecord, ...]
    skipped: tuple[Skipped, ...]
    truncated: bool

    def record(self, run_id: str | None, prior: MirrorRecord | None = None) -> MirrorRecord:
        """The ``mirror.json`` of this copy, after the skips of an earlier copy (``prior``)."""
        skipped = [*(prior.skipped if prior else []), *(skipped_record(s) for s in self.skipped)]
        return MirrorRecord(
            run_id=run_id,
            artifacts_truncated=self.truncated or bool(prior and prior.artifacts_truncated),
            files_copied=len(self.files),
            bytes_copied=sum(f.size for f in self.files),
            skipped=skipped,
            files=sorted(self.files, key=lambda f: f.path),
        )


def skipped_record(s: Skipped) -> SkippedRecord:
    """The ``mirror.json`` form of a skipped entry."""
    target = escape_bytes(s.link_target) if s.link_target is not None else None
    return SkippedRecord(
        path=escape_bytes(b"/".join(s.parts)), type=s.type, link_target=target, reason=s.reason
    )


def entry_type(mode: int, nlink: int) -> EntryType:
    """The type of an entry from its ``lstat`` mode and link count."""
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file" if nlink <= 1 else "hardlink"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "char_device"
    if stat.S_ISBLK(mode):
        return "block_device"
    return "unknown"


def file_cap(parts: tuple[bytes, ...], limits: MirrorLimits) -> int:
    """The most bytes of one file copied: :attr:`~MirrorLimits.max_record_bytes` for the run's
    record (:data:`RECORD_FILES`), :attr:`~MirrorLimits.max_file_bytes` for anything else."""
    return limits.max_record_bytes if parts in RECORD_FILES else limits.max_file_bytes


def bad_name(name: bytes, limits: MirrorLimits) -> bool:
    """Whether a component cannot be a name in the mirror (``/``, NUL, ``.``, ``..``, too long)."""
    return (
        name in (b"", b".", b"..")
        or b"/" in name
        or b"\0" in name
        or len(name) > limits.max_name_bytes
    )


def plan_entries(
    entries: Sequence[SourceEntry],
    limits: MirrorLimits = DEFAULT_LIMITS,
    *,
    reserved: frozenset[tuple[bytes, ...]] = MIRROR_RESERVED,
    listing_truncated: bool = False,
) -> MirrorPlan:
    """Decide what to copy from a listing.

    Args:
        entries: The listing, parents before children.
        limits: The caps.
        reserved: Paths the mirror writes itself; the source's own are skipped.
        listing_truncated: The listing stopped early (too many entries).

    Returns:
        The plan: every kept entry's folder is kept before it. The contents of a folder that is
        skipped are not listed again.
    """
    keep: list[SourceEntry] = []
    skipped: list[Skipped] = []
    kept_dirs: set[tuple[bytes, ...]] = {()}
    dropped: set[tuple[bytes, ...]] = set()  # folders skipped and recorded: not their contents
    total = files = 0
    truncated = listing_truncated
    for entry in entries:
        parts = entry.parts
        if not parts or any(parts[:i] in dropped for i in range(1, len(parts))):
            continue
        reason = _skip_reason(entry, limits, reserved)
        if reason is None and parts[:-1] not in kept_dirs:
            reason = "bad_parent"
        if reason is None and entry.type == "file" and parts not in RECORD_FILES:
            if files >= limits.max_files:
                reason = "file_cap"
            elif total + entry.size > limits.max_total_bytes:
                reason = "total_cap"
        if reason is None:
            keep.append(entry)
            if entry.type == "dir":
                kept_dirs.add(parts)
            if entry.type == "file":
                files += 1
                total += entry.size
            continue
        skipped.append(Skipped(parts, entry.type, reason, entry.link_target))
        truncated = truncated or reason in ("too_deep", "too_large", "file_cap", "total_cap")
        if entry.type == "dir":
            dropped.add(parts)
    return MirrorPlan(tuple(keep), tuple(skipped), truncated, total)


def _skip_reason(
    entry: SourceEntry, limits: MirrorLimits, reserved: frozenset[tuple[bytes, ...]]
) -> SkipReason | None:
    """Why an entry is skipped on its own (the caps over all files are applied by the caller)."""
    if any(bad_name(p, limits) for p in entry.parts):
        return "bad_name"
    if entry.parts in reserved:
        return "reserved"
    match entry.type:
        case "symlink":
            return "link"
        case "hardlink":
            return "hardlink"
        case "dir":
            return "too_deep" if len(entry.parts) > limits.max_depth else None
        case "file":
            return "too_large" if entry.size > file_cap(entry.parts, limits) else None
        case _:
            return "special"
