"""The group commit of finished run folders (srez_client.commit_queue): a folder is final only
after a flush that began once it was handed over; folders that finish during a flush share the
next one; an error or Ctrl-C loses no folder that finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from srez_client import commit_queue
from srez_client.commit_queue import CommitQueue
from srez_client.errors import ResultsError
from srez_client.layout import RunFolder
from srez_client.results.finder import find_results
from srez_core import atomic

SREZ = Path(sys.executable).parent / "srez"


def written(root: Path, name: str) -> RunFolder:
    folder = RunFolder.create(root / name, sync=False)
    folder.write_bytes("summary.json", b"{}")
    return folder


class GatedFlush:
    """fsync_tree that logs each flush with the partial folders it covers, and holds the first
    one until released."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.flushes: list[set[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, path: Path) -> bool:
        self.flushes.append({p.name for p in self.root.iterdir() if p.name.endswith(".partial")})
        self.entered.set()
        assert self.release.wait(10)
        return atomic.fsync_tree(path)


def test_folders_finished_during_a_flush_share_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flush = GatedFlush(tmp_path)
    monkeypatch.setattr(commit_queue, "fsync_tree", flush)
    with CommitQueue() as commits:
        first = written(tmp_path, "r1")
        commits.submit(first)
        assert flush.entered.wait(10)
        later = [written(tmp_path, f"r{i}") for i in (2, 3, 4)]
        for folder in later:
            commits.submit(folder)
        time.sleep(0.05)
        # nothing is renamed before its flush ended
        assert not any(f.final_dir.exists() for f in [first, *later])
        flush.release.set()
    assert len(flush.flushes) == 2
    assert flush.flushes[0] >= {".r1.partial"}
    assert flush.flushes[1] == {".r2.partial", ".r3.partial", ".r4.partial"}
    for folder in [first, *later]:
        assert (folder.final_dir / "summary.json").read_bytes() == b"{}"
        assert not folder.partial_dir.exists()


def test_an_error_is_raised_once_the_other_folders_are_final(tmp_path: Path) -> None:
    taken, fine = written(tmp_path, "taken"), written(tmp_path, "fine")
    (tmp_path / "taken").mkdir()  # the final name appeared meanwhile: it is never replaced
    commits = CommitQueue()
    commits.submit(taken)
    commits.submit(fine)
    with pytest.raises(ResultsError, match="appeared while the run was written"):
        commits.close()
    assert (fine.final_dir / "summary.json").exists()
    assert (taken.partial_dir / "summary.json").exists()  # kept, not lost
    with pytest.raises(RuntimeError, match="closed"):
        commits.submit(written(tmp_path, "late"))


def test_leaving_on_ctrl_c_completes_what_was_handed_over(tmp_path: Path) -> None:
    folders = [written(tmp_path, f"r{i}") for i in range(5)]

    def interrupted_loop() -> None:
        with CommitQueue() as commits:
            for folder in folders:
                commits.submit(folder)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_loop()
    assert all((f.final_dir / "summary.json").exists() for f in folders)


def test_a_folder_discarded_after_it_was_handed_over_stays_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C right after ``submit`` (run_inline's handler discards an unfinished run) used to
    delete the folder's files while the queue renamed it: an empty folder under its final
    name. The flush is held so that the discard lands while the folder is still partial."""
    gate = GatedFlush(tmp_path)
    monkeypatch.setattr(commit_queue, "fsync_tree", gate)
    folder = written(tmp_path, "r0")
    with CommitQueue() as commits:
        commits.submit(folder)
        assert gate.entered.wait(10)
        folder.discard()  # what the interrupted run's handler does
        gate.release.set()
    assert (folder.final_dir / "summary.json").read_bytes() == b"{}"
    assert not folder.partial_dir.exists()


def test_without_syncfs_every_folder_is_flushed_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed: list[str] = []
    real = atomic.fsync_tree

    def tree(path: Path) -> bool:
        flushed.append(path.name)
        real(path)
        return False  # as where there is no syncfs: only this folder was flushed

    monkeypatch.setattr(commit_queue, "fsync_tree", tree)
    commits = CommitQueue()
    folders = [written(tmp_path, f"r{i}") for i in range(3)]
    for folder in folders:
        commits.submit(folder)
    commits.close()
    assert sorted(flushed) == [".r0.partial", ".r1.partial", ".r2.partial"]


def test_eval_killed_mid_way_leaves_only_whole_runs_and_resume_finishes(tmp_path: Path) -> None:
    """kill -9 of ``srez eval --backend inline`` while its runs go: every folder under a final
    name is whole (its summary, grade and dialog), and ``--resume`` plays exactly the rest."""
    results = tmp_path / "results"
    argv = [str(SREZ), "eval", "--agent", "scripted,random", "--tasks", "all"]
    argv += ["--backend", "inline", "--results", str(results)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def finals() -> list[Path]:  # folders under their final name (a partial one starts with .)
        return [p for p in results.glob("*/*/*/*") if not p.name.startswith(".")]

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(finals()) < 5:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = finals()
    assert 5 <= len(kept) < 80, "kill the evaluation while its runs go"
    for run in kept:
        for name in ("run.json", "summary.json", "result.json", "archive/dialog.jsonl"):
            assert (run / name).stat().st_size > 0, f"{run}/{name}"
    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{len(kept)} of 80 runs already complete" in done.stderr
    assert len(find_results(results)) == 80
