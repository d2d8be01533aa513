"""Held-out task sets (``--tasks-dir DIR``, ``--task-seed N``) on every backend: the set's digest
names every run, ``--resume`` and the leaderboard never mix two sets, a Python agent is refused
on ``inline`` (where it could read the ground truth from this process), and on ``local`` an agent
that hunts for its task's file and ground truth finds nothing (docs/security.md §4.8 test 49).

The docker and ray halves are in ``test_heldout_docker.py`` and ``test_ray_cluster.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from client_helpers import HeldOut, held_out_set, one_line_error, srez_command

from fakes.expert import expert_replies
from fakes.openai_server import FakeOpenAI
from srez_client import task_sets
from srez_client.cli import main
from srez_client.results.finder import find_results
from srez_client.results.provenance import IncompatibleResults, Scored, check_mergeable
from srez_client.task_sets import CACHE, MANIFEST, folder_set
from srez_env.generator.worlds import GENERATOR
from srez_env.provenance import packaged_set_digest, task_set_digest

THIEF = Path(__file__).resolve().parents[1] / "fakes" / "heldout_thief.py"
SET_SEED = 4242
"""The held-out set of these tests (three tasks: easy, medium, hard)."""


@pytest.fixture(scope="module")
def held_out(tmp_path_factory: pytest.TempPathFactory) -> HeldOut:
    return held_out_set(tmp_path_factory.mktemp("held-out") / "set", SET_SEED, 3)


srez = srez_command


def manifests(results: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_bytes()) for p in sorted(results.glob("*/*/*/*/run.json"))]


# ---------------------------------------------------------------------- the set's digest


def test_every_run_names_the_whole_set_it_was_chosen_from(
    held_out: HeldOut, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    argv = ["eval", "--agent", "heuristic", "--tasks-dir", str(held_out.folder), "--no-floors"]
    assert main([*argv, "--tasks", held_out.first.id, "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert held_out.digest == task_set_digest(held_out.tasks.values()) != packaged_set_digest()
    (manifest,) = manifests(results)
    assert manifest["task_set_digest"] == held_out.digest  # all three tasks, though one ran
    assert (manifest["task_set"], manifest["task_set_seed"]) == ("generated", SET_SEED)
    (found,) = find_results(results)
    assert found.summary.provenance is not None
    assert found.summary.provenance.task_set_digest == held_out.digest
    (line,) = [x for x in out.splitlines() if x.startswith("provenance:")]
    assert f"generated ({GENERATOR}, seed {SET_SEED}, 1 tasks, set {held_out.digest})" in line


def test_resume_keeps_only_the_runs_of_its_own_set(
    held_out: HeldOut, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    # set B: set A with one task's title changed: the same ids, another set
    other = tmp_path / "other"
    shutil.copytree(held_out.folder, other)
    edited = other / f"{held_out.first.id}.yaml"
    edited.write_text(edited.read_text().replace("title: ", "title: B ", 1))
    b = folder_set(other)
    assert b.digest != held_out.digest and b.tasks.keys() == held_out.tasks.keys()

    def eval_(folder: Path, *more: str) -> dict[str, Any]:
        argv = ["eval", "--agent", "heuristic", "--tasks-dir", str(folder), "--no-floors"]
        assert main([*argv, "--results", str(results), "--json", *more]) == 0
        return dict(json.loads(capsys.readouterr().out))

    first = eval_(held_out.folder)
    assert {r["provenance"]["task_set_digest"] for r in first["runs"]} == {held_out.digest}
    again = eval_(other, "--resume")
    assert [r.get("resumed") for r in again["runs"]] == [None] * 3  # none of set A's is kept
    assert {r["provenance"]["task_set_digest"] for r in again["runs"]} == {b.digest}
    assert len(list(find_results(results))) == 6  # set A's runs are left where they are
    kept = eval_(other, "--resume")
    assert [r.get("resumed") for r in kept["runs"]] == [True] * 3
    subset = eval_(held_out.folder, "--resume", "--tasks", held_out.first.id)
    assert [r.get("resumed") for r in subset["runs"]] == [True]  # a subset is of the same set
    assert subset["provenance"]["task_sets"][0]["set_digest"] == held_out.digest
    mixed = [
        Scored(r["run_dir"], r["task_id"], _provenance(r)) for r in [*first["runs"], *kept["runs"]]
    ]
    with pytest.raises(IncompatibleResults, match="ran on different task sets"):
        check_mergeable(mixed)


def test_resume_says_which_runs_are_of_another_set(
    held_out: HeldOut, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    argv = ["eval", "--agent", "heuristic", "--no-floors", "--results", str(results)]
    assert main([*argv, "--tasks-dir", str(held_out.folder), "--tasks", held_out.first.id]) == 0
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(held_out.folder / f"{held_out.first.id}.yaml", other)  # a set of that one task
    capsys.readouterr()
    assert main([*argv, "--tasks-dir", str(other), "--resume"]) == 0
    captured = capsys.readouterr()
    assert "1 runs complete under" in captured.err and "only on another task set" in captured.err
    assert "1 complete only on another task set there (run again, not merged)" in captured.out


def _provenance(row: dict[str, Any]) -> Any:
    from srez_daemon.protocol import Provenance

    return Provenance.model_validate(row["provenance"])


# ---------------------------------------------------------------------- --task-seed


def test_task_seed_draws_the_set_once_into_a_private_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("SREZ_STATE", str(state))
    # a set of 4, not 40: drawing 40 tasks twice costs half a minute here, and the count is data
    monkeypatch.setattr(task_sets, "SEED_SET_COUNT", 4)
    seed = 909
    cached = state / CACHE / f"{GENERATOR.replace('/', '-')}-seed-{seed}"
    argv = ["eval", "--agent", "scripted", "--task-seed", str(seed), "--no-floors"]
    first_id = f"sre-{_tag(seed)}-001"
    assert main([*argv, "--tasks", first_id, "--results", str(tmp_path / "r")]) == 0
    assert "generating the task set of seed 909" in capsys.readouterr().err
    assert stat.S_IMODE(cached.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / CACHE).stat().st_mode) == 0o700
    manifest = json.loads((cached / MANIFEST).read_text())
    assert (manifest["generator"], manifest["seed"], manifest["count"]) == (GENERATOR, seed, 4)
    digest = folder_set(cached).digest
    (run,) = manifests(tmp_path / "r")
    assert (run["task_set_digest"], run["task_set_seed"]) == (digest, seed)
    written = (cached / MANIFEST).stat().st_mtime_ns

    assert main([*argv, "--tasks", first_id, "--results", str(tmp_path / "r2")]) == 0
    assert "generating" not in capsys.readouterr().err  # read from the cache
    assert (cached / MANIFEST).stat().st_mtime_ns == written

    (cached / f"sre-{_tag(seed)}-003.yaml").unlink()  # a set that is not whole is drawn again
    assert main([*argv, "--tasks", first_id, "--results", str(tmp_path / "r3")]) == 0
    assert "generating the task set of seed 909" in capsys.readouterr().err
    assert folder_set(cached).digest == digest  # the same set: (generator, seed) reproduce it
    assert not [p for p in (state / CACHE).iterdir() if p.name.startswith(".")]  # no leftovers


def _tag(seed: int) -> str:
    from srez_env.generator.sets import set_tag

    return set_tag(seed)


def test_tasks_dir_and_task_seed_together_are_refused(tmp_path: Path) -> None:
    one_line_error(
        srez(tmp_path / "state", "eval", "--agent", "scripted", "--tasks-dir", str(tmp_path),
             "--task-seed", "3"),
        "not both",
    )  # fmt: skip
    one_line_error(
        srez(tmp_path / "state", "eval", "--agent", "scripted", "--task-seed", "-1"),
        "is not a seed",
    )


# ---------------------------------------------------------------------- a Python agent

AGENT = """
import json, sys
from pathlib import Path

SET = Path(__file__).parent / "set"


class Peeker:
    name = "peeker"

    def __init__(self, run_seed=0, task_id=""):
        self.task_id = task_id

    def act(self, observation):
        found = {}
        for path in sorted(SET.glob("*.yaml")):
            try:
                found[path.name] = "ground_truth" in path.read_text()
            except OSError as e:
                found[path.name] = e.strerror
        print("PEEK " + json.dumps({"listed": SET.exists(), "read": found}), file=sys.stderr)
        return {"tool": "submit", "args": {}}
"""


@dataclass(frozen=True)
class PythonAgent:
    spec: str
    """``module:Peeker``."""
    folder: Path
    """Its module's folder, on ``PYTHONPATH``, with a copy of the held-out set in ``set/``."""

    @property
    def env(self) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(self.folder), os.environ.get("PYTHONPATH")) if p)
        return {"PYTHONPATH": path}


@pytest.fixture
def python_agent(held_out: HeldOut, tmp_path: Path) -> Iterator[PythonAgent]:
    """A module of one agent in a folder on ``PYTHONPATH`` (so the sandbox shows that folder,
    as it shows every folder of the interpreter's path), beside a copy of the held-out set: it
    knows where the set is."""
    folder = tmp_path / "agents"
    folder.mkdir()
    name = f"peek_{os.getpid()}_{tmp_path.name.replace('-', '_')}"
    (folder / f"{name}.py").write_text(AGENT)
    shutil.copytree(held_out.folder, folder / "set")
    yield PythonAgent(f"{name}:Peeker", folder)
    sys.modules.pop(name, None)


def test_a_python_agent_on_inline_is_refused_on_a_held_out_set(
    held_out: HeldOut, python_agent: PythonAgent, tmp_path: Path
) -> None:
    state, spec = tmp_path / "state", python_agent.spec
    set_dir = str(python_agent.folder / "set")
    for args in (
        ["eval", "--agent", f"heuristic,{spec}", "--tasks-dir", set_dir],
        ["run", "--backend", "inline", "--agent", spec, "--tasks-dir", set_dir,
         "--task", held_out.first.id],
        ["eval", "--agent", spec, "--task-seed", "5"],
    ):  # fmt: skip
        done = srez(state, *args, "--results", str(tmp_path / "r"), **python_agent.env)
        one_line_error(done, f"--agent {spec}: a Python agent on --backend inline")
        assert "--backend local" in done.stderr and "ground truth" in done.stderr
    assert not (tmp_path / "r").exists()  # nothing ran
    assert not (state / CACHE).exists()  # refused before a set was drawn
    # on the packaged tasks it runs inline as before
    done = srez(state, "eval", "--agent", spec, "--tasks", "sre-001", "--results",
                str(tmp_path / "r"), **python_agent.env)  # fmt: skip
    assert done.returncode == 0, done.stderr


def peek_of(run: Path) -> dict[str, Any]:
    """What the peeking agent printed on its stderr (``logs/agent.log``)."""
    (peek,) = [
        json.loads(line.removeprefix("PEEK "))
        for line in (run / "logs" / "agent.log").read_text().splitlines()
        if line.startswith("PEEK ")
    ]
    return dict(peek)


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_a_python_agent_on_local_plays_a_held_out_task_and_cannot_read_its_set(
    held_out: HeldOut,
    python_agent: PythonAgent,
    tmp_path: Path,
    sandbox: str,
    request: pytest.FixtureRequest,
) -> None:
    """In the sandbox the set is an empty folder though its parent is shown; without it (the
    control, ``isolation: none``) the same agent reads every task's ground truth."""
    if sandbox == "bubblewrap":
        request.getfixturevalue("bwrap")
    results = tmp_path / "results"
    done = srez(
        tmp_path / "state", "eval", "--backend", "local", "--agent", python_agent.spec,
        "--tasks-dir", str(python_agent.folder / "set"), "--tasks", held_out.first.id,
        "--no-floors", "--results", str(results), SREZ_SANDBOX=sandbox, **python_agent.env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = (results / held_out.first.id / "none" / "peeker").iterdir()
    manifest = json.loads((run / "run.json").read_text())
    assert (manifest["isolation"], manifest["task_set_digest"]) == (sandbox, held_out.digest)
    peek = peek_of(run)
    if sandbox == "bubblewrap":
        assert peek == {"listed": True, "read": {}}  # shown with its module: an empty folder
    else:
        assert peek == {"listed": True, "read": {f"{t}.yaml": True for t in held_out.tasks}}


# ---------------------------------------------------------------------- an LLM on local


def test_an_llm_evaluates_a_held_out_set_on_local(
    held_out: HeldOut, tmp_path: Path, fake_openai: FakeOpenAI, bwrap: None
) -> None:
    task = held_out.first
    fake_openai.push(*expert_replies(task))
    state, results = tmp_path / "state", tmp_path / "results"
    done = srez(
        state, "eval", "--backend", "local", "--agent", "llm", "--model", "openai/fake-model",
        "--tasks-dir", str(held_out.folder), "--tasks", task.id, "--no-floors", "--json",
        "--results", str(results),
        OPENAI_API_KEY="sk-fake-host-key", SREZ_LLM_API_BASE=fake_openai.base_url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["runs"]
    assert (row["status"], row["resolved"], row["reward"]) == ("ok", True, 1.0), row
    assert row["provenance"]["task_set_digest"] == held_out.digest
    (manifest,) = manifests(results)
    assert manifest["isolation"] == "bubblewrap" and manifest["task_id"] == task.id
    assert manifest["task_set_digest"] == held_out.digest
    # the model was shown this held-out task's brief, not a packaged task's
    first = json.dumps(fake_openai.requests[0].messages)
    assert task.incident.brief.split("\n")[0][:60] in first
    assert fake_openai.pending == 0
    # the task went from the host to the run and no further: not in results, not left in state
    assert list(results.rglob("task.json")) == [] and not list((state / "live").iterdir())


# ---------------------------------------------------------------------- a thief on local


def thief_run(
    held_out: HeldOut, tmp_path: Path, sandbox: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """A ``cmd:`` agent that hunts for its task's file, told where the set and the state are."""
    state, results = tmp_path / "state", tmp_path / "results"
    cmd = f"{sys.executable} {THIEF} agent {held_out.folder} {state}"
    done = srez(
        state, "run", "--task", held_out.first.id, "--tasks-dir", str(held_out.folder),
        "--agent", "cmd:thief", "--agent-cmd", cmd, "--results", str(results),
        SREZ_SANDBOX=sandbox,
    )  # fmt: skip
    (run,) = (results / held_out.first.id / "none" / "thief").iterdir()
    report: dict[str, Any] = {}
    for line in (run / "archive" / "dialog.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["type"] == "assistant":
            report = json.loads(entry["text"])
    assert report, (run / "logs" / "agent.log").read_text()[-2000:]
    return done, report


def test_a_thief_agent_on_local_finds_no_task_file_and_no_ground_truth(
    held_out: HeldOut, tmp_path: Path, bwrap: None
) -> None:
    done, report = thief_run(held_out, tmp_path, "bubblewrap")
    assert done.returncode in (0, 1), done.stderr
    assert report["task_id"] == held_out.first.id and report["oracle"] is False
    assert report["files_walked"] > 1000  # it looked everywhere it could see
    told = [p for p in report["probes"] if str(held_out.folder) in p["path"]]
    assert told  # it tried the set's folder, by name
    assert report["readable"] == []
    assert not any(p.get("secret") for p in report["probes"])


def test_the_thief_finds_the_set_without_the_sandbox(held_out: HeldOut, tmp_path: Path) -> None:
    """The control: the same agent with no sandbox reads the held-out set's ground truth, so the
    test above can fail (``isolation: none`` says as much on every such run)."""
    done, report = thief_run(held_out, tmp_path, "none")
    assert "not isolated" in done.stderr
    stolen = [p for p in report["readable"] if p.get("secret")]
    assert {Path(p["path"]).name for p in stolen} >= {f"{t}.yaml" for t in held_out.tasks}
    assert any(p["path"].endswith("task.json") for p in stolen)  # the copy handed to the daemon


def test_a_launch_carries_its_task_only_when_it_is_not_packaged(held_out: HeldOut) -> None:
    from srez_client.backends.base import LaunchSpec
    from srez_client.task_sets import packaged_set
    from srez_env.errors import TaskError

    packaged = packaged_set()
    (sre007,) = packaged.select(["sre-007"])
    assert packaged.task_file(sre007) is None and packaged.digest == packaged_set_digest()
    held = folder_set(held_out.folder)
    file = held.task_file(held_out.first)
    assert file is not None and (file.set_digest, file.set_folder) == (held.digest, held.folder)
    spec = LaunchSpec(task_id=held_out.first.id, agent_spec="scripted", results_root=Path("r"))
    assert spec.model_copy(update={"task_file": file}).task() == held_out.first
    with pytest.raises(TaskError, match=f"holds task {held_out.first.id}"):
        spec.model_copy(update={"task_id": "sre-007", "task_file": file}).task()
    assert spec.model_copy(update={"task_id": "sre-007"}).task() == sre007
