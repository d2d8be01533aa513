"""Which members of a run folder's tar stream a copy-out writes, decided one member at a time. Pure.

A container's run folder reaches the host as a tar stream (the engine's ``get_archive``), written
next to an untrusted agent (docs/security.md A5, A6). Every member is judged from its header alone,
before any of its bytes are read, by :class:`TarPlanner`:

* only folders and regular files are written; symlinks, hardlinks, FIFOs, devices and unknown
  types are refused (``link``, ``hardlink``, ``special``) and listed with their link target;
* a name is refused (``bad_name``) when it is absolute, holds ``..``, ``.``, an empty component
  or NUL, has a component over 255 bytes or is over 4096 bytes in all, is not under the requested
  folder, or was seen before (a second member of one name would overwrite the first);
* a member is written only inside a folder that was itself accepted (``bad_parent`` otherwise),
  so a folder symlink ``d -> /`` followed by ``d/tmp/pwned`` writes nothing;
* the caps of :class:`~srez_client.transfer.plan.MirrorLimits` are applied to the sizes in the
  headers, never to a filesystem ``stat``: a 1 TB sparse file is refused (``too_large``) without
  being read; beyond ``max_files`` files (``file_cap``) or ``max_total_bytes`` (``total_cap``)
  members are refused and the copy is marked ``artifacts_truncated``;
* refusals are listed up to :data:`LISTED_FACTOR` × ``max_files`` + 1000 (the directory
  listing's budget); later ones are counted, not listed (:class:`Dropped`), so a stream of a
  million symlinks cannot grow ``mirror.json`` without bound, while the files after them are
  still reached;
* after :data:`MEMBER_BUDGET_FACTOR` × ``max_files`` + 10,000 members the planner says stop.

Refusals are :class:`~srez_client.transfer.plan.Skipped` entries, so ``mirror.json`` lists them as
the directory mirror does.
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from srez_client.transfer.plan import (
    COPY_OUT_RESERVED,
    DEFAULT_LIMITS,
    RECORD_FILES,
    EntryType,
    MirrorLimits,
    Skipped,
    SkipReason,
    bad_name,
    file_cap,
)

MAX_PATH_BYTES: Final = 4096
"""Longest member name accepted (PATH_MAX)."""
LISTED_FACTOR: Final = 2
"""Refusals listed at most: this × ``max_files`` + 1000."""
MEMBER_BUDGET_FACTOR: Final = 10
"""Members read at most: this × ``max_files`` + 10,000 (headers are cheap to read; the stream's
byte cap bounds the time)."""
_KINDS: Final[tuple[tuple[Callable[[tarfile.TarInfo], bool], EntryType], ...]] = (
    (tarfile.TarInfo.isdir, "dir"),
    (tarfile.TarInfo.isreg, "file"),
    (tarfile.TarInfo.issym, "symlink"),
    (tarfile.TarInfo.islnk, "hardlink"),
    (tarfile.TarInfo.isfifo, "fifo"),
    (tarfile.TarInfo.ischr, "char_device"),
    (tarfile.TarInfo.isblk, "block_device"),
)
"""A member's entry type: the first whose test holds its header (any other is ``unknown``)."""
_TRUNCATING: Final[frozenset[SkipReason]] = frozenset(
    {"too_deep", "too_large", "file_cap", "total_cap"}
)


@dataclass(frozen=True, slots=True)
class TarMember:
    """What a tar header says about one member."""

    name: bytes
    """The member's name as stored (``srez/archive/dialog.jsonl``)."""
    type: EntryType
    size: int = 0
    """Size from the header (for files: the bytes that follow)."""
    link_target: bytes | None = None


@dataclass(frozen=True, slots=True)
class Accept:
    """Write this member: a folder, or a file of ``size`` bytes."""

    parts: tuple[bytes, ...]
    """Path components under the requested folder."""
    type: Literal["dir", "file"]
    size: int = 0


@dataclass(frozen=True, slots=True)
class Root:
    """The member is the requested folder itself (nothing to write)."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """Refused, and not listed: the listing of refusals is full (the copy is truncated)."""

    reason: SkipReason


@dataclass(frozen=True, slots=True)
class Stop:
    """Too many members: read no further (the copy is truncated)."""


Decision = Accept | Skipped | Dropped | Root | Stop
"""What to do with one member."""


def _encode(text: str) -> bytes:
    # tarfile decodes names with surrogateescape: this gives the stored bytes back exactly
    return text.encode("utf-8", "surrogateescape")


def member_of(info: tarfile.TarInfo) -> TarMember:
    """The header facts of a ``tarfile`` member (no I/O)."""
    kind: EntryType = next((found for holds, found in _KINDS if holds(info)), "unknown")
    target = _encode(info.linkname) if kind in ("symlink", "hardlink") else None
    return TarMember(_encode(info.name), kind, max(0, info.size), target)


def split_name(name: bytes, limits: MirrorLimits = DEFAULT_LIMITS) -> tuple[bytes, ...] | None:
    """The components of a member name, or None if the name is not acceptable.

    One trailing ``/`` (a folder) is allowed; absolute names, empty, ``.`` and ``..`` components,
    NUL, over-long components and names over :data:`MAX_PATH_BYTES` are not.
    """
    if not name or name.startswith(b"/") or len(name) > MAX_PATH_BYTES:
        return None
    parts = tuple(name.removesuffix(b"/").split(b"/"))
    if any(bad_name(part, limits) for part in parts):
        return None
    return parts


class TarPlanner:
    """Judges the members of one stream, in order; keeps the counts the caps need. Pure.

    Args:
        root: The name of the requested folder, the first component of every member
            (``srez`` for ``/srez``).
        limits: The caps.
        reserved: Paths (under the root) the copy-out writes itself; the stream's own are refused.
    """

    def __init__(
        self,
        root: bytes,
        limits: MirrorLimits = DEFAULT_LIMITS,
        *,
        reserved: frozenset[tuple[bytes, ...]] = COPY_OUT_RESERVED,
    ) -> None:
        self.root = root
        self.limits = limits
        self.reserved = reserved
        self.truncated = False
        """Whether a cap refused something (``artifacts_truncated``)."""
        self.files = 0
        """Files accepted."""
        self.total_bytes = 0
        """Bytes of the files accepted."""
        self._members_left = MEMBER_BUDGET_FACTOR * limits.max_files + 10_000
        self._listed_left = LISTED_FACTOR * limits.max_files + 1000
        self.dropped = 0
        """Refusals not listed."""
        self._root_seen = False
        self._dirs: set[tuple[bytes, ...]] = set()
        self._seen: set[tuple[bytes, ...]] = set()

    def decide(self, member: TarMember) -> Decision:
        """What to do with the next member of the stream."""
        self._members_left -= 1
        if self._members_left < 0:
            self.truncated = True
            return Stop()
        full = split_name(member.name, self.limits)
        if full is None or full[0] != self.root:
            return self._refuse(member, _display_parts(member.name), "bad_name")
        parts = full[1:]
        if not parts:
            return self._root(member)
        if parts in self._seen:
            return self._refuse(member, parts, "bad_name")
        self._seen.add(parts)
        reason = self._reason(member, parts)
        if reason is not None:
            return self._refuse(member, parts, reason)
        if member.type == "dir":
            self._dirs.add(parts)
            return Accept(parts, "dir")
        self.files += 1
        self.total_bytes += member.size
        return Accept(parts, "file", member.size)

    def _root(self, member: TarMember) -> Decision:
        if self._root_seen or member.type != "dir":
            # the folder itself is a link (or repeated): nothing under it is trusted
            return self._refuse(member, (), "link" if member.type == "symlink" else "bad_name")
        self._root_seen = True
        return Root()

    def _reason(self, member: TarMember, parts: tuple[bytes, ...]) -> SkipReason | None:
        """Why a member is refused, or None (the caps over all files included)."""
        if parts in self.reserved:
            return "reserved"
        if not self._root_seen or (len(parts) > 1 and parts[:-1] not in self._dirs):
            return "bad_parent"
        match member.type:
            case "symlink":
                return "link"
            case "hardlink":
                return "hardlink"
            case "dir":
                return "too_deep" if len(parts) > self.limits.max_depth else None
            case "file":
                if member.size > file_cap(parts, self.limits):
                    return "too_large"
                if parts in RECORD_FILES:  # the run's record: whatever the other caps
                    return None
                if self.files >= self.limits.max_files:
                    return "file_cap"
                if self.total_bytes + member.size > self.limits.max_total_bytes:
                    return "total_cap"
                return None
            case _:
                return "special"

    def _refuse(
        self, member: TarMember, parts: tuple[bytes, ...], reason: SkipReason
    ) -> Skipped | Dropped:
        self.truncated = self.truncated or reason in _TRUNCATING
        self._listed_left -= 1
        if self._listed_left < 0:
            self.truncated = True
            self.dropped += 1
            return Dropped(reason)
        return Skipped(
            parts or _display_parts(member.name), member.type, reason, member.link_target
        )


def _display_parts(name: bytes) -> tuple[bytes, ...]:
    """A refused name as one component, so ``mirror.json`` shows it as stored (escaped there)."""
    return (name or b"?",)
