"""Copy an untrusted run folder into a new folder safely: list it without following a link, plan the
copy from the listing alone (:func:`~srez_client.transfer.plan.plan_entries`), copy regular files
and folders only, and record what was skipped in ``mirror.json``.

What a backend's ``copy_out`` does with a run folder it can read directly, and what the mirror into
``results/`` builds on (:mod:`srez_client.mirror.copier`).
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from srez_client.transfer.fs import O_DIR, execute_plan, read_small_model, scan_tree
from srez_client.transfer.plan import (
    COPY_OUT_RESERVED,
    DEFAULT_LIMITS,
    MIRROR_JSON,
    MIRROR_RESERVED,
    MirrorLimits,
    MirrorPlan,
    MirrorRecord,
    MirrorReport,
    plan_entries,
)


def plan_mirror(
    src_root: Path,
    limits: MirrorLimits = DEFAULT_LIMITS,
    *,
    reserved: frozenset[tuple[bytes, ...]] = MIRROR_RESERVED,
) -> MirrorPlan:
    """List ``src_root`` without following links and plan its copy.

    Raises:
        MirrorError: If ``src_root`` is not a readable folder (or is a link).
    """
    entries, listing_truncated = scan_tree(src_root, limits)
    return plan_entries(entries, limits, reserved=reserved, listing_truncated=listing_truncated)


def copy_tree(
    src_root: Path,
    dest: Path,
    limits: MirrorLimits = DEFAULT_LIMITS,
    *,
    reserved: frozenset[tuple[bytes, ...]] = COPY_OUT_RESERVED,
    run_id: str | None = None,
) -> MirrorReport:
    """Copy ``src_root`` into the new folder ``dest`` safely and write ``dest/mirror.json``.

    What a backend's ``copy_out`` does with a run folder it can read directly. Blocking: run it
    through ``asyncio.to_thread``.

    Raises:
        MirrorError: If ``src_root`` cannot be listed.
        FileExistsError: If ``dest`` exists (its parents are created).
    """
    plan = plan_mirror(src_root, limits, reserved=reserved)
    dest.parent.mkdir(parents=True, exist_ok=True)
    parent = os.open(dest.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        report = execute_plan(src_root, parent, dest.name, plan, limits)
    finally:
        os.close(parent)
    write_record(dest, report.record(run_id))
    return report


def read_record(run_dir: Path) -> MirrorRecord | None:
    """The ``mirror.json`` of a folder, if it is a valid regular file."""
    return read_small_model(run_dir, MIRROR_JSON, MirrorRecord, 256 << 20)


def write_record(folder: Path, record: MirrorRecord) -> None:
    """Write ``mirror.json`` as a new file in ``folder`` (never through a link), fsynced."""
    data = orjson.dumps(record.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
    fd = os.open(folder, O_DIR)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(MIRROR_JSON, flags, 0o644, dir_fd=fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
            os.fsync(out)
        finally:
            os.close(out)
        os.fsync(fd)
    finally:
        os.close(fd)
