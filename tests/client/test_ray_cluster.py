"""The ray backend on a real multi-node cluster: a head and two worker nodes on 127.0.0.1.

One cluster per module (``ray.cluster_utils.Cluster``), its files in a short folder of its own
(unix socket paths are limited to about 107 characters), authentication and the dashboard off,
shut down by the fixture that made it. ``srez`` runs as a subprocess pointed at the cluster
(``--ray-address``), as a user would run it; this process connects too, to watch the run registry
and to take a node away. Skips only where Ray is not importable.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bench.llama_server import MODEL, LlamaServer
from client_helpers import held_out_set

from srez_client.backends.ray.actor import ACTOR_NAME
from srez_client.backends.ray.connect import import_ray

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install 'srez[ray]')"
)

SRE_TASKS = "sre-001,sre-002,sre-003"
"""The quick subset (all 40 run behind the ``slow`` marker)."""
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}


@dataclass
class RayCluster:
    cluster: Any
    address: str
    env: dict[str, str]
    workers: list[Any]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    """A head (no CPU: runs go to the workers) and two worker nodes of one CPU each."""
    folder = tempfile.mkdtemp(prefix="r", dir="/tmp")  # noqa: S108
    env = {
        "RAY_TMPDIR": folder,
        "RAY_AUTH_MODE": "disabled",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        ray = import_ray("127.0.0.1:0")  # imported with Ray's addresses pinned to loopback
        cluster_utils = importlib.import_module("ray.cluster_utils")
        made = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "node_ip_address": "127.0.0.1",
                "include_dashboard": False,
            },
            shutdown_at_exit=False,
        )
        try:
            workers = [made.add_node(**NODE) for _ in range(2)]
            made.wait_for_nodes()
            ray.init(address=made.address, namespace="srez", log_to_driver=False)
            yield RayCluster(made, made.address, {**os.environ, **env}, workers)
        finally:
            ray.shutdown()
            made.shutdown()
            shutil.rmtree(folder, ignore_errors=True)


def srez(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "srez_client.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def grades(results: Path) -> dict[tuple[str, str], tuple[float, bool, bool]]:
    """(task, agent) -> (reward, resolved, passed) of every run under a results root."""
    found = {}
    for summary_path in sorted(results.glob("*/*/*/*/summary.json")):
        summary = json.loads(summary_path.read_bytes())
        key = (summary["task_id"], summary["agent"])
        assert key not in found, f"two runs of {key}"
        found[key] = (summary["reward"], summary["resolved"], summary["passed"])
    return found


def manifests(results: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_bytes()) for p in sorted(results.glob("*/*/*/*/run.json"))]


def eval_args(tasks: str, results: Path) -> list[str]:
    return ["eval", "--agent", "scripted,heuristic", "--tasks", tasks, "--results", str(results)]


def ray_env(cluster: RayCluster, state: Path) -> dict[str, str]:
    return {**cluster.env, "SREZ_STATE": str(state), "SREZ_RAY_ADDRESS": cluster.address}


def inline_grades(tmp_path: Path, tasks: str) -> dict[tuple[str, str], tuple[float, bool, bool]]:
    results = tmp_path / "inline"
    env = {**os.environ, "SREZ_STATE": str(tmp_path / "inline-state")}
    done = srez([*eval_args(tasks, results), "--backend", "inline"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    return grades(results)


def check_eval_on_ray(cluster: RayCluster, tmp_path: Path, tasks: str) -> None:
    results, state = tmp_path / "ray", tmp_path / "ray-state"
    args = [*eval_args(tasks, results), "--backend", "ray", "--parallel", "2"]
    args += ["--ray-address", cluster.address]
    env = {**cluster.env, "SREZ_STATE": str(state)}
    done = srez(args, env, tmp_path, timeout=1800)
    assert done.returncode == 0, done.stderr
    on_ray = grades(results)
    assert len(on_ray) == 2 * len(tasks.split(",")) if tasks != "all" else 80
    assert on_ray == inline_grades(tmp_path, tasks)
    for manifest in manifests(results):
        assert manifest["backend"] == "ray"
        assert manifest["attempt"] == manifest["attempts"][-1]["attempt"]
    assert not list(results.rglob("*.partial*"))


def test_eval_on_ray_gives_the_inline_scores(cluster: RayCluster, tmp_path: Path) -> None:
    check_eval_on_ray(cluster, tmp_path, SRE_TASKS)


@pytest.mark.slow
def test_eval_on_ray_of_all_40_tasks_gives_the_inline_scores(
    cluster: RayCluster, tmp_path: Path
) -> None:
    check_eval_on_ray(cluster, tmp_path, "all")


def test_a_held_out_set_on_ray_gives_the_inline_scores_and_names_the_set(
    cluster: RayCluster, tmp_path: Path
) -> None:
    held = held_out_set(tmp_path / "set", 6161, 2)
    args = [*eval_args("all", tmp_path / "ray"), "--tasks-dir", str(held.folder)]
    args += ["--backend", "ray", "--parallel", "2", "--ray-address", cluster.address]
    done = srez(args, {**cluster.env, "SREZ_STATE": str(tmp_path / "ray-state")}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"set {held.digest})" in done.stdout  # the leaderboard's provenance line
    inline = tmp_path / "inline"
    env = {**os.environ, "SREZ_STATE": str(tmp_path / "inline-state")}
    baseline = srez([*eval_args("all", inline), "--tasks-dir", str(held.folder)], env, tmp_path)
    assert baseline.returncode == 0, baseline.stderr
    on_ray = grades(tmp_path / "ray")
    assert on_ray == grades(inline) and len(on_ray) == 4
    assert {k[0] for k in on_ray} == set(held.tasks)
    for manifest in manifests(tmp_path / "ray"):
        assert (manifest["backend"], manifest["task_set_digest"]) == ("ray", held.digest)
        assert manifest["isolation"] in ("bubblewrap", "none")  # the node's local backend's
    assert list((tmp_path / "ray").rglob("task.json")) == []


def start_srez(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """``srez ARGS`` started in the background (its outputs piped), for a test to act meanwhile."""
    return subprocess.Popen(
        [sys.executable, "-m", "srez_client.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def lose_node(cluster: RayCluster, lost: Any) -> None:
    """Kills the worker node ``lost`` at once (no grace), and the cluster heals with a new one."""
    cluster.cluster.remove_node(lost, allow_graceful=False)
    cluster.workers.remove(lost)
    cluster.workers.append(cluster.cluster.add_node(**NODE))


def registry() -> Any:
    return import_ray(None).get_actor(ACTOR_NAME, namespace="srez")


def wait_for(what: str, probe: Any, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_losing_a_worker_node_mid_eval_loses_no_run_and_duplicates_none(
    cluster: RayCluster, tmp_path: Path
) -> None:
    results, state = tmp_path / "ray", tmp_path / "ray-state"
    tasks = "sre-004,sre-005,sre-006"
    args = [*eval_args(tasks, results), "--backend", "ray", "--parallel", "2"]
    env = ray_env(cluster, state)
    eval_proc = start_srez(args, env, tmp_path)
    try:
        by_node = {w.node_id: w for w in cluster.workers}

        def running_on_a_worker() -> Any:
            try:
                runs = import_ray(None).get(registry().runs.remote())
            except ValueError:  # no registry yet: nothing submitted
                return None
            for run in runs:
                if run["phase"] in ("starting", "agent") and run["node"] in by_node:
                    return run
            return None

        victim = wait_for("a run in flight", running_on_a_worker)
        lost = by_node[victim["node"]]
        lose_node(cluster, lost)
        out, err = eval_proc.communicate(timeout=600)
    finally:
        if eval_proc.poll() is None:
            eval_proc.kill()
            eval_proc.wait()
    assert eval_proc.returncode == 0, err
    assert len(grades(results)) == 6  # none lost, none twice (grades() checks)
    retried = {m["run_id"]: m for m in manifests(results) if len(m["attempts"]) > 1}
    assert victim["run_id"] in retried, manifests(results)
    attempts = retried[victim["run_id"]]["attempts"]
    assert attempts[0]["node"] == lost.node_id != attempts[-1]["node"]
    assert retried[victim["run_id"]]["attempt"] == attempts[-1]["attempt"]
    assert grades(results) == inline_grades(tmp_path, tasks)


def managed_scores(results: Path, name: str) -> dict[str, dict[str, object]]:
    keys = ("completed", "mean_reward", "resolved_rate", "passed_rate")
    summary = json.loads((results / "managed" / name / "summary.json").read_text())
    return {t["target"]: {k: t[k] for k in keys} for t in summary["targets"]}


@pytest.mark.slow  # 25 s; the fast ones of this module take about 40 s with the cluster's start
def test_a_managed_run_on_ray_survives_kill_9_of_its_runner_and_resumes(
    cluster: RayCluster, tmp_path: Path
) -> None:
    results, state = tmp_path / "results", tmp_path / "state"
    env = ray_env(cluster, state)
    tasks = "sre-007,sre-008,sre-009"

    def queue(name: str, backend: str) -> list[str]:
        return ["managed", "create", name, "--baselines", "scripted,heuristic", "--models", "none",
                "--tasks", tasks, "--backend", backend, "--results", str(results)]  # fmt: skip

    for name, backend in (("on-ray", "ray"), ("ref", "inline")):
        assert srez(queue(name, backend), env, tmp_path).returncode == 0
    assert srez(["managed", "run", "ref", "--results", str(results)], env, tmp_path).returncode == 0
    err_path = tmp_path / "runner.err"
    with err_path.open("w") as err:
        runner = subprocess.Popen(
            [sys.executable, "-m", "srez_client.cli", "managed", "run", "on-ray"]
            + ["--results", str(results)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:

        def a_later_run_in_flight() -> bool:
            assert runner.poll() is None, err_path.read_text()[-3000:]
            if "completed" not in err_path.read_text():
                return False  # kill it once a task is checkpointed, with the next one in flight
            try:
                runs = import_ray(None).get(registry().runs.remote())
            except ValueError:  # no registry yet: the runner has not submitted a run
                return False
            mine = [r for r in runs if r["labels"].get("srez.results", "").startswith(str(results))]
            return any(r["phase"] in ("starting", "agent") for r in mine)

        wait_for("a run in flight after a completed one", a_later_run_in_flight)
        runner.kill()  # SIGKILL
        runner.wait()
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert "completed" in err_path.read_text()
    resumed = srez(["managed", "run", "on-ray", "--results", str(results)], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "recovered as" in resumed.stderr  # the killed runner's task in flight was dealt with
    assert managed_scores(results, "on-ray") == managed_scores(results, "ref")
    on_ray = [m for m in manifests(results) if m["backend"] == "ray"]
    assert len({(m["task_id"], m["agent"], m["run_id"]) for m in on_ray}) == len(on_ray)


async def test_attach_follows_a_remote_run_live_through_the_registry(
    cluster: RayCluster, tmp_path: Path
) -> None:
    from srez_client.backends.base import LaunchSpec
    from srez_client.backends.config import BackendSettings
    from srez_client.backends.registry import get_backend
    from srez_daemon.protocol import SessionStarted, iter_dialog

    settings = BackendSettings(tmp_path / "state", variables={"SREZ_RAY_ADDRESS": cluster.address})
    launcher, watcher = get_backend("ray", settings), get_backend("ray", settings)
    try:
        spec = LaunchSpec(task_id="sre-010", agent_spec="heuristic", results_root=tmp_path / "r")
        handle = await launcher.launch(spec)
        seen: list[bytes] = []
        live = 0
        async for line in watcher.relayed_dialog(await watcher.get(handle.run_id)):
            seen.append(line)
            # what the other command sees meanwhile: the run in flight, listed by the registry
            if not live and (await watcher.get(handle.run_id)).status == "running":
                live = len(seen)
        assert live, "no line arrived while the run was in flight"
        entries = list(iter_dialog(b"\n".join(line for line in seen if line) + b"\n", final=True))
        assert isinstance(entries[0], SessionStarted)
        assert entries[0].run_id == handle.run_id
        env = ray_env(cluster, tmp_path / "state")
        listed = srez(["runs", "list", "--all", "--backend", "ray"], env, tmp_path, timeout=120)
        assert listed.returncode == 0, listed.stderr
        assert handle.run_id in listed.stdout  # the other command finds it (ended, not yet back)
        assert "failed" not in listed.stderr  # and mirrors nothing that has not come back
        done = await launcher.wait(handle, timeout_s=120)
        assert done.finished
        copy = await launcher.copy_out(done, tmp_path / "copy")
        archived = (copy / "archive" / "dialog.jsonl").read_bytes()
        assert [e.model_dump() for e in iter_dialog(archived, final=True)] == [
            e.model_dump() for e in entries
        ]
        await launcher.remove(done)
    finally:
        launcher.close()
        watcher.close()


async def test_stop_asks_the_node_to_stop_its_run_which_comes_back_graded(
    cluster: RayCluster, tmp_path: Path
) -> None:
    from srez_client.backends.base import LaunchSpec
    from srez_client.backends.config import BackendSettings
    from srez_client.backends.registry import get_backend

    settings = BackendSettings(tmp_path / "state", variables={"SREZ_RAY_ADDRESS": cluster.address})
    backend = get_backend("ray", settings)
    try:
        spec = LaunchSpec(task_id="sre-011", agent_spec="random", results_root=tmp_path / "r")
        handle = await backend.launch(spec)
        await backend.stop(handle)
        await backend.stop(handle)  # idempotent
        after = await backend.get(handle.run_id)
        assert after.status == "exited"
        assert after.finished  # the node stopped its daemon, which wrote summary.json
        await backend.remove(after)
    finally:
        backend.close()


# ---------------------------------------------------------------------- LLM runs on ray


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama.cpp's server with SmolLM2 (bench/llama_server.py), on this machine's loopback."""
    with LlamaServer(n_ctx=8192, log=tmp_path_factory.mktemp("llama") / "server.log") as server:
        yield server


def test_an_llm_run_on_ray_reaches_the_launchers_relay_and_no_key_reaches_the_node(
    cluster: RayCluster, llama: LlamaServer, tmp_path: Path
) -> None:
    """The node's run calls the launcher's model relay with its scoped token; a price and a cost
    cap make the agent submit after a few calls, so the episode ends within a minute."""
    results, state = tmp_path / "ray", tmp_path / "ray-state"
    host_key = "sk-host-key-that-stays-on-the-launcher"
    env = {
        **ray_env(cluster, state),
        "OPENAI_API_KEY": host_key,
        "SREZ_LLM_API_BASE": llama.base_url,
        "SREZ_LLM_API_KEY": "unused",
        "SREZ_LLM_MAX_TOKENS": "256",
        "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.001",
        "SREZ_LLM_COST_CAP_USD": "3",
    }
    args = ["eval", "--backend", "ray", "--agent", "llm-json", "--model", MODEL]
    args += ["--tasks", "sre-001", "--no-floors", "--json", "--results", str(results)]
    done = srez(args, env, tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (manifest,) = manifests(results)
    assert (manifest["backend"], manifest["agent"]) == ("ray", "llm-json")
    (summary_path,) = results.glob("*/*/*/*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert (summary["status"], summary["end_reason"]) == ("ok", "submit"), summary
    dialog = (summary_path.parent / "archive" / "dialog.jsonl").read_text()
    replies = [json.loads(line) for line in dialog.splitlines()]
    assert (
        sum(e["type"] == "assistant" and (e["tokens"] or {}).get("input", 0) > 0 for e in replies)
        >= 2
    )
    for path in summary_path.parent.rglob("*"):
        if path.is_file():
            assert host_key.encode() not in path.read_bytes(), path


def completions(server: LlamaServer) -> int:
    """Completions the server has finished: llama.cpp logs one ``total time`` line for each."""
    assert server.log is not None
    return sum("total time" in line for line in server.log.read_text().splitlines())


def test_a_node_lost_mid_llm_run_loses_no_run_and_pays_no_answered_call_twice(
    cluster: RayCluster, llama: LlamaServer, tmp_path: Path
) -> None:
    """The node of an LLM run is lost after its agent had two replies; the run starts again on
    another node, and its new attempt asks the same requests, which the launcher's relay answers
    from what it sent the lost one: the server does only the new work (and at most the one call
    in flight at the loss, whose reply had nowhere to go)."""
    results, state = tmp_path / "ray", tmp_path / "ray-state"
    env = {
        **ray_env(cluster, state),
        "SREZ_LLM_API_BASE": llama.base_url,
        "SREZ_LLM_API_KEY": "unused",
        "SREZ_LLM_MAX_TOKENS": "64",
        "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.001",
        "SREZ_LLM_COST_CAP_USD": "9",  # some six calls, then the agent submits
    }
    args = ["eval", "--backend", "ray", "--agent", "llm-json", "--model", MODEL]
    args += ["--tasks", "sre-001", "--no-floors", "--json", "--results", str(results)]
    before = completions(llama)
    eval_proc = start_srez(args, env, tmp_path)
    try:
        by_node = {w.node_id: w for w in cluster.workers}
        wait_for("two answered calls", lambda: completions(llama) - before >= 2, timeout=300)
        (run,) = [r for r in import_ray(None).get(registry().runs.remote()) if r["node"] in by_node]
        lost = by_node[run["node"]]
        answered_before_loss = completions(llama) - before
        lose_node(cluster, lost)
        out, err = eval_proc.communicate(timeout=900)
    finally:
        if eval_proc.poll() is None:
            eval_proc.kill()
            eval_proc.wait()
    assert eval_proc.returncode == 0, err[-3000:]
    (manifest,) = manifests(results)
    assert [a["node"] == lost.node_id for a in manifest["attempts"]] == [True, False]
    (summary_path,) = results.glob("*/*/*/*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert (summary["status"], summary["end_reason"]) == ("ok", "submit"), summary
    lines = (summary_path.parent / "archive" / "dialog.jsonl").read_text().splitlines()
    calls = sum(json.loads(line)["type"] == "usage" for line in lines)
    spent = completions(llama) - before
    assert calls >= answered_before_loss >= 2
    # without the relay's replies the server would have done the lost attempt's calls again
    assert spent <= calls + 1, (spent, calls, answered_before_loss)
