"""A task the host hands the daemon (``SREZ_TASK_FILE``, a held-out set's): the daemon plays it,
the scripted oracle included, and refuses one that is not the task ``run.json`` names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemonkit import RUN_ID, live_daemon

from srez_daemon.errors import RunSetupError, SettingsError
from srez_daemon.protocol import RunManifest
from srez_daemon.run_setup import load_task
from srez_daemon.settings import DaemonSettings
from srez_env.generator.sets import generate
from srez_env.task import Task
from srez_env.tasks import load_tasks


@pytest.fixture(scope="module")
def held_out() -> Task:
    (task,) = generate(seed=3131, count=1)
    return task


def manifest(task_id: str) -> RunManifest:
    return RunManifest(
        run_id=RUN_ID, task_id=task_id, agent="scripted", agent_spec="scripted", model="none",
        backend="local", run_seed=0, srez_version="0", started_at="2026-11-30T00:00:00.000Z",
    )  # fmt: skip


def settings(tmp_path: Path, task_file: Path | None) -> DaemonSettings:
    return DaemonSettings(
        run_dir=tmp_path / "run", token_file=tmp_path / "token", task_file=task_file
    )


def test_the_daemon_plays_the_task_it_is_handed(held_out: Task, tmp_path: Path) -> None:
    task_file = tmp_path / "task.json"
    task_file.write_text(held_out.model_dump_json())
    env = {"SREZ_TASK_FILE": str(task_file)}
    with live_daemon(tmp_path, task_id=held_out.id, env=env) as daemon:
        daemon.wait_phase("done")
        result = json.loads((daemon.run_dir / "result.json").read_text())
    # the oracle was handed this task's ground truth, and the grade is this task's
    assert (result["task_id"], result["passed"], result["reward"]["total"]) == (
        held_out.id,
        True,
        1.0,
    )
    assert result["ground_truth"]["root_cause"] == held_out.ground_truth.root_cause.model_dump()


def test_a_task_file_is_held_to_the_id_run_json_names(held_out: Task, tmp_path: Path) -> None:
    task_file = tmp_path / "task.json"
    task_file.write_text(held_out.model_dump_json())
    assert load_task(manifest(held_out.id), settings(tmp_path, task_file)) == held_out
    with pytest.raises(
        RunSetupError, match=f"holds task {held_out.id}, but run.json names sre-007"
    ):
        load_task(manifest("sre-007"), settings(tmp_path, task_file))
    task_file.write_text('{"schema_version": 1, "id": "sre-007"}')
    with pytest.raises(RunSetupError, match=r"SREZ_TASK_FILE .*task.json: title: Field required"):
        load_task(manifest("sre-007"), settings(tmp_path, task_file))
    with pytest.raises(RunSetupError, match="cannot read SREZ_TASK_FILE"):
        load_task(manifest("sre-007"), settings(tmp_path, tmp_path / "missing.json"))
    # without one, the packaged task of the id
    assert load_task(manifest("sre-007"), settings(tmp_path, None)) == load_tasks(["sre-007"])[0]


def test_the_task_file_setting_must_be_absolute(tmp_path: Path) -> None:
    base = {"SREZ_RUN_DIR": str(tmp_path), "SREZ_TOKEN_FILE": str(tmp_path / "t")}
    with pytest.raises(SettingsError, match="SREZ_TASK_FILE='task.json' must be an absolute path"):
        DaemonSettings.from_env({**base, "SREZ_TASK_FILE": "task.json"})
    made = DaemonSettings.from_env({**base, "SREZ_TASK_FILE": str(tmp_path / "task.json")})
    assert made.task_file == tmp_path / "task.json"
