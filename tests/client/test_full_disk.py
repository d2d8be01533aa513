"""A full disk as ``SREZ_STATE`` (a real 24 KiB tmpfs): a launch that cannot get going says so
in one line that names the state folder and its free space, and leaves nothing behind that no
command would ever see or sweep (no ``live/<id>`` folder, no ``owned/<id>.json``); the same
state works once there is room; as the results folder: the mirror says where, keeps the run
and hides nothing (docs/security.md, test 57)."""

from __future__ import annotations

from pathlib import Path

from client_helpers import srez_command

from tmpfs_kit import small_tmpfs


def test_a_launch_on_a_full_state_folder_says_where_and_leaves_nothing(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "state", "24k") as state:
        done = srez_command(
            state, "run", "--task", "sre-001", "--agent", "heuristic",
            "--results", str(tmp_path / "results"), timeout=120,
        )  # fmt: skip
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert (
            lines[-1].startswith("srez: error: run ") and "nothing of the run was kept" in lines[-1]
        )
        assert f"the state folder {state} has" in lines[-1] and "free space there" in lines[-1]
        assert list((state / "live").iterdir()) == []
        assert not (state / "owned").exists() or list((state / "owned").iterdir()) == []
        listed = srez_command(state, "runs", "list", "--all", timeout=60)
        assert listed.returncode == 0 and "sre-001" not in listed.stdout


def test_a_full_results_folder_says_where_keeps_the_run_and_hides_nothing(tmp_path: Path) -> None:
    """The run ends, its mirror finds no space: one line names the results folder and says the
    run is kept; no hidden partial folder stays in ``results/``; once there is room, ``srez runs
    list`` mirrors the run whole."""
    state, results = tmp_path / "state", tmp_path / "results"
    with small_tmpfs(results, "16k"):
        done = srez_command(
            state, "run", "--task", "sre-001", "--agent", "heuristic", "--results", str(results),
            timeout=120,
        )  # fmt: skip
        last = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 2, done.stderr
        assert last.startswith("srez: error: cannot mirror run ") and f"into {results}:" in last
        assert "the run is kept" in last and "srez runs list" in last
        hidden = [p for p in results.rglob(".*")]
        assert hidden == [], hidden
    # unmounted: the folder below it has room
    listed = srez_command(state, "runs", "list", "--all", timeout=120)
    assert listed.returncode == 0, listed.stderr
    (folder,) = results.glob("sre-001/none/heuristic/*")
    assert (folder / "summary.json").is_file() and (folder / "result.json").is_file()
