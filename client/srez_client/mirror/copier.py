"""Copy a finished run folder into ``results/`` without trusting anything in it (docs/design.md §7).

The folder was written next to an untrusted agent, so it may hold symlinks to secrets, a folder
symlink that would redirect later writes, hardlinks, FIFOs that hang a reader, devices, sockets,
hostile names and bombs (docs/security.md A5, A6, A10, A11). The mirror:

* lists the tree with ``lstat`` through folder descriptors, never following a link
  (:func:`~srez_client.transfer.fs.scan_tree`), and decides from that listing alone what to copy
  (:func:`~srez_client.transfer.plan.plan_entries`, pure): folders and regular files with one link;
  everything else is skipped and listed in ``mirror.json`` as ``{"path", "type", "link_target",
  "reason"}``;
* caps the copy at 100k files, 1 GiB in all and 100 MiB per file, from the listed sizes, so a
  sparse file is never read (beyond: skipped, ``artifacts_truncated: true``);
* reads a source only when the ``O_PATH`` handle it opened with ``O_NOFOLLOW`` is the regular file
  it listed, so a FIFO or device swapped in meanwhile is never opened for reading
  (:mod:`srez_client.transfer.fs`);
* creates each destination with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under folders it made itself and
  opens the results folders one component at a time without following links, so nothing is
  written outside the run's folder;
* writes into ``.<run-id>.partial-<pid>-<random>`` beside the final folder, fsyncs every file and
  folder, then renames it: a folder under its final name is always complete. An existing final
  folder is never replaced: it is kept, and a warning says so. Partial folders of mirrors whose
  process is gone are removed by the next mirror of the same run.

Names are copied as they are on disk; ``mirror.json`` writes them escaped with
:func:`srez_client.sanitize.escape_bytes` (controls and non-UTF-8 bytes, losslessly). Its lists are
sorted and it carries no time, so mirroring one folder twice gives byte-identical trees.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import stat
from pathlib import Path

from srez_client.errors import MirrorError
from srez_client.layout import run_path
from srez_client.pids import pid_exists
from srez_client.transfer.fs import O_DIR, execute_plan
from srez_client.transfer.plan import (
    DEFAULT_LIMITS,
    MirrorLimits,
)
from srez_client.transfer.tree import plan_mirror, read_record, write_record
from srez_daemon.protocol import RunManifest

logger = logging.getLogger(__name__)


def mirror_run(
    run_dir: Path,
    results_root: Path,
    manifest: RunManifest,
    *,
    limits: MirrorLimits = DEFAULT_LIMITS,
) -> Path:
    """Mirror a finished run folder (a backend's ``copy_out``) into the results layout.

    Writes ``results/<task>/<model>/<agent>/<run-id>/`` through a partial folder and a rename. The
    skips ``copy_out`` recorded in ``run_dir/mirror.json`` are kept in the new ``mirror.json``. If
    the final folder exists, nothing is written and it is kept (a warning is logged).
    Blocking: call it through ``asyncio.to_thread``.

    Args:
        run_dir: The copied-out run folder.
        results_root: The root of the results layout.
        manifest: The run's ``run.json`` (names the task, model, agent and run id).
        limits: The caps.

    Returns:
        The final folder.

    Raises:
        ResultsError: If a name of the manifest cannot be a folder name (``..``, ``/``, controls).
        MirrorError: If ``run_dir`` cannot be read, or a results folder is a link.
        OSError: If writing fails (the partial folder is removed).
    """
    final = run_path(
        results_root, manifest.task_id, manifest.model, manifest.agent, manifest.run_id
    )
    relative = final.relative_to(results_root).parts
    results_root.mkdir(parents=True, exist_ok=True)
    parent_fd = _open_results_parent(results_root, relative[:-1])
    try:
        name = relative[-1]
        if _exists(parent_fd, name):
            logger.warning("kept the existing run folder %s; a run folder is never replaced", final)
            return final
        _remove_stale_partials(parent_fd, name)
        partial = f".{name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            prior = read_record(run_dir)
            plan = plan_mirror(run_dir, limits)
            report = execute_plan(run_dir, parent_fd, partial, plan, limits)
            record = report.record(manifest.run_id, prior)
            write_record(final.with_name(partial), record)
            if _exists(parent_fd, name):
                logger.warning("kept the run folder %s that appeared meanwhile", final)
                shutil.rmtree(partial, dir_fd=parent_fd)
                return final
            os.rename(partial, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except BaseException:
            if _exists(parent_fd, partial):
                shutil.rmtree(partial, dir_fd=parent_fd)
            raise
        os.fsync(parent_fd)
    finally:
        os.close(parent_fd)
    truncated = ", truncated" if record.artifacts_truncated else ""
    logger.info(
        "mirrored %s: %d files, %d skipped%s",
        final,
        record.files_copied,
        len(record.skipped),
        truncated,
    )
    return final


def _open_results_parent(results_root: Path, parts: tuple[str, ...]) -> int:
    """Open (creating) ``results_root/<parts...>`` one component at a time, never via a link."""
    fd = os.open(results_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for part in parts:
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, 0o755, dir_fd=fd)
        try:
            child = os.open(part, O_DIR, dir_fd=fd)
        except OSError as e:
            msg = f"results folder {part!r} under {results_root} is not a folder (or is a link): {e.strerror}"
            raise MirrorError(msg) from e
        finally:
            os.close(fd)
        fd = child
    return fd


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _remove_stale_partials(dir_fd: int, name: str) -> None:
    """Remove the partial folders of ``name`` whose mirror process is gone."""
    prefix = f".{name}.partial-"
    for entry in os.listdir(dir_fd):
        if not entry.startswith(prefix):
            continue
        pid_text = entry[len(prefix) :].split("-", 1)[0]
        if not pid_text.isdigit() or pid_exists(int(pid_text)):
            continue  # another mirror (maybe in this process) is writing it
        st = os.stat(entry, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(entry, dir_fd=dir_fd)
        else:
            os.unlink(entry, dir_fd=dir_fd)
        logger.info("removed %s, left by an interrupted mirror", entry)
