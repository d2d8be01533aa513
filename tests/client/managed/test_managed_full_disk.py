"""A managed queue meets a full disk (docs/security.md test 57): one line that names the full
folder and its free space and says the task runs again; the attempt is ``interrupted`` (a resume
runs it, no ``--retry-failed`` needed) and not counted; the queue stops rather than burn every
task on the same full device; and once there is room the same command finishes the queue.

Both folders a managed run writes are tried on a real tmpfs: the results folder (where the
managed run itself lives: an ``inline`` queue) and ``$SREZ_STATE`` (a ``local`` queue, whose
daemon cannot start). The space is given back by remounting the tmpfs larger, so the managed
run's own files stay where they were.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from managed_kit import Kit, baseline_queue, make_kit

from tmpfs_kit import small_tmpfs

TASKS = "sre-001,sre-002"


def _grow(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=64m", str(folder)], check=True)


def _stopped_on_a_full_disk(kit: Kit, name: str, full: Path) -> None:
    done = kit.srez("managed", "run", name, check=False)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1, done.stderr[-2000:]
    assert last.startswith(f"srez: error: managed run {name} stopped: scripted sre-001: "), last
    assert f"no space left on the device of {full} (" in last and "bytes free)" in last, last
    assert f"'srez managed run {name}' goes on" in last and "runs again" in last, last
    hidden = list(kit.results.resolve().rglob(".*"))
    assert hidden == [], hidden  # no partial folder left behind
    records = kit.output(name, "scripted")
    assert list(records) == ["sre-001"], records  # stopped: sre-002 was never tried
    assert (records["sre-001"]["status"], records["sre-001"]["error_kind"]) == (
        "interrupted",
        "disk_full",
    )


def _goes_on_once_there_is_room(kit: Kit, name: str) -> None:
    done = kit.srez("managed", "run", name)
    assert done.returncode == 0, done.stderr[-2000:]
    records = kit.output(name, "scripted")
    assert {t: r["status"] for t, r in records.items()} == dict.fromkeys(
        TASKS.split(","), "completed"
    )


def test_a_full_results_folder_stops_the_queue_and_loses_no_task(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    with small_tmpfs(tmp_path / "results-disk", "64k") as disk:
        kit.results.rmdir()
        kit.results.symlink_to(disk)
        kit.srez("managed", *baseline_queue("q", TASKS, "inline"))
        _stopped_on_a_full_disk(kit, "q", disk)
        _grow(disk)
        _goes_on_once_there_is_room(kit, "q")


def test_a_full_state_folder_stops_the_queue_and_loses_no_task(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    with small_tmpfs(tmp_path / "state-disk", "24k") as disk:
        kit.env["SREZ_STATE"] = str(disk)
        kit.srez("managed", *baseline_queue("q", TASKS, "local"))
        _stopped_on_a_full_disk(kit, "q", disk)
        _grow(disk)
        _goes_on_once_there_is_room(kit, "q")
