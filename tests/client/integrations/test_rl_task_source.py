"""Task references of the RL integrations: ids, files, Task objects and sets generated on demand,
and the optional extras staying optional."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from srez_client.integrations.task_source import (
    TaskRef,
    TaskSetSpec,
    resolve,
    task_of,
    task_refs,
)
from srez_env.errors import TaskError
from srez_env.generator import sets
from srez_env.generator.render import render
from srez_env.tasks import load_tasks


def test_task_refs_default_to_the_40_packaged_tasks() -> None:
    refs = task_refs()
    assert [r.id for r in refs] == [f"sre-{n:03d}" for n in range(1, 41)]


def test_task_refs_take_ids_tasks_and_refs_in_order() -> None:
    task = load_tasks(["sre-002"])[0]
    refs = task_refs(["sre-007", task, TaskRef(id="sre-001")])
    assert [r.id for r in refs] == ["sre-007", "sre-002", "sre-001"]
    assert refs[1] is task
    assert task_of(refs[0]) == load_tasks(["sre-007"])[0]


def test_task_refs_refuse_bad_selections() -> None:
    with pytest.raises(TaskError, match="unknown task id 'sre-999'"):
        task_refs("sre-999")
    with pytest.raises(ValueError, match="not both"):
        task_refs("sre-001", {"seed": 1, "count": 2})
    with pytest.raises(ValueError, match="names no task"):
        task_refs([])
    with pytest.raises(ValueError, match="unknown fault kind 'nope'"):
        task_refs(task_set={"seed": 1, "count": 2, "kinds": ["nope"]})
    with pytest.raises(ValueError, match="count"):
        task_refs(task_set={"seed": 1, "count": 0})


def test_a_generated_member_is_the_task_the_whole_set_makes() -> None:
    spec = TaskSetSpec(seed=7, count=3, kinds=("disk_full", "memory_leak"))
    refs = spec.refs()
    whole = sets.generate(7, 3, ["disk_full", "memory_leak"])
    assert [r.id for r in refs] == [t.id for t in whole]
    assert resolve(refs[2]) == whole[2]
    assert "ground_truth" not in refs[2].model_dump_json()  # a reference is public


def test_tasks_dir_reads_task_files(tmp_path: Path) -> None:
    task = sets.generate(3, 1)[0]
    (tmp_path / f"{task.id}.yaml").write_text(render(task), encoding="utf-8")
    refs = task_refs(tasks_dir=tmp_path)
    assert [r.id for r in refs] == [task.id]
    assert task_of(refs[0]) == task
    with pytest.raises(ValueError, match="holds no sre-"):
        task_refs(tasks_dir=tmp_path / "empty")


def test_the_integrations_import_no_optional_extra_until_asked() -> None:
    code = (
        "import sys, srez_client.integrations.task_source, srez_client.cli;"
        "print(sorted(m for m in ('gymnasium', 'verifiers', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
