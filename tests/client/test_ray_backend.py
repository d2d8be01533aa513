"""The ray backend without a cluster: its config, its lazy import, its run registry."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from backend_contract import NO_RAY

from srez_client.backends.config import BackendSettings
from srez_client.backends.ray.actor import RunRegistry
from srez_client.backends.ray.connect import INSTALL_HINT, import_ray, is_loopback
from srez_client.backends.registry import config_for
from srez_client.cli.main import main
from srez_client.errors import BackendError


def test_importing_the_client_and_its_cli_imports_no_ray() -> None:
    code = (
        "import sys, srez_client, srez_client.cli.main, srez_client.backends.registry as r\n"
        "r.backend_class('ray')\n"
        "print(','.join(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""


def test_without_ray_the_backend_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(BackendError, match=r"pip install 'srez\[ray\]'"):
        import_ray(None)
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    status = main(["run", "--backend", "ray", "--task", "sre-001", "--agent", "scripted"])
    err = capsys.readouterr().err
    assert status != 0
    assert INSTALL_HINT in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err


def test_the_address_comes_from_the_variable_or_the_option(tmp_path: Path) -> None:
    settings = BackendSettings(tmp_path, variables={"SREZ_RAY_ADDRESS": "10.0.0.5:6379"})
    assert config_for("ray", settings).model_dump()["ray_address"] == "10.0.0.5:6379"
    assert config_for("ray", BackendSettings(tmp_path)).model_dump()["ray_address"] is None
    assert is_loopback(None) and is_loopback("127.0.0.1:6379") and not is_loopback("10.0.0.5:1")


def test_listing_without_a_cluster_starts_no_ray(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from srez_client.backends.config import BackendSettings\n"
        "from srez_client.backends.registry import get_backend\n"
        f"backend = get_backend('ray', BackendSettings(Path({str(tmp_path)!r})))\n"
        "print(asyncio.run(backend.list(include_exited=True)), 'ray' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[] False"


def test_registry_keeps_only_the_latest_attempt_and_its_lines() -> None:
    registry = RunRegistry()
    registry.register("r1", {"srez.run": "r1"})
    assert registry.attempt_started("r1", "a1", "n1", "t1")
    assert not registry.report("r1", "a1", "agent", 2, ["x", "y"])
    assert registry.lines("r1", "", 0) == ("a1", 0, ["x", "y"], "agent")
    assert registry.lines("r1", "a1", 1) == ("a1", 1, ["y"], "agent")
    # the node is lost: the task runs again elsewhere, its lines start over
    assert registry.attempt_started("r1", "a2", "n2", "t2")
    assert registry.report("r1", "a1", "agent", 5, ["stale"])  # the old attempt is told to stop
    assert not registry.report("r1", "a2", "agent", 1, ["z"])
    assert registry.lines("r1", "a1", 2) == ("a2", 0, ["z"], "agent")
    assert registry.attempts("r1") == [("a1", "n1", "t1"), ("a2", "n2", "t2")]
    registry.request_stop("r1")
    assert registry.report("r1", "a2", "agent", -1, [])
    assert registry.runs()[0]["steps"] == 1
    registry.forget("r1")
    assert registry.runs() == []
    assert registry.lines("r1", "a2", 0)[3] == "forgotten"


def test_a_relayed_run_keeps_its_id_and_records_its_attempt_on_docker(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from srez_client.backends.base import LaunchSpec, RelayedRun
    from srez_client.backends.docker.state import plan_launch

    relayed = RelayedRun(run_id="20261202T000000Z-0123abcd", backend="ray", attempt="feedbeef")
    spec = LaunchSpec(
        task_id="sre-001", agent_spec="scripted", results_root=tmp_path, relayed=relayed
    )
    plan = plan_launch(
        spec,
        task_id="sre-001",
        agent="scripted",
        agent_spec="scripted",
        image="srez-run:test",
        version="0",
        uid=1000,
        now=datetime.now(UTC),
    )
    assert plan.manifest.run_id == relayed.run_id
    assert (plan.manifest.backend, plan.manifest.attempt) == ("ray", "feedbeef")


@NO_RAY
def test_srez_run_on_a_ray_instance_of_its_own_writes_a_results_folder(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # noqa: S108
    try:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SREZ_")},
            "SREZ_STATE": str(tmp_path / "state"),
            "SREZ_RAY_TEMP_DIR": str(folder),
        }
        done = subprocess.run(
            [sys.executable, "-m", "srez_client.cli", "run", "--backend", "ray"]
            + ["--task", "sre-001", "--agent", "scripted", "--results", str(tmp_path / "r")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        (run_json,) = (tmp_path / "r").glob("sre-001/none/scripted/*/run.json")
        manifest = json.loads(run_json.read_bytes())
        assert manifest["backend"] == "ray"
        assert [a["attempt"] for a in manifest["attempts"]] == [manifest["attempt"]]
        assert (run_json.parent / "summary.json").is_file()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
