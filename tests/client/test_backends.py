"""The backend conformance suite against every backend of the registry, plus what each adds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from backend_contract import CASES, ContractCase, run_contract, spec_for

from srez_client.agent_command import absolute_replay
from srez_client.backends.base import Backend, LaunchSpec
from srez_client.backends.config import BackendSettings
from srez_client.backends.local.backend import LocalBackend
from srez_client.backends.local.environment import passed_environment
from srez_client.backends.registry import get_backend
from srez_client.errors import BackendError, NoDaemonError, RunNotFoundError, UsageError
from srez_client.lifecycle.recovery import WatchOptions, recover_unmirrored, watch_stopped
from srez_client.lifecycle.run import run_to_results
from srez_env.errors import EnvError


def proc_file(pid: int, name: str) -> bytes:
    return Path(f"/proc/{pid}/{name}").read_bytes()


def make(name: str, tmp_path: Path) -> Backend:
    return get_backend(name, BackendSettings(tmp_path / "state"))


@pytest.fixture(params=[case.param() for case in CASES])
def case(request: pytest.FixtureRequest) -> ContractCase:
    """Each backend of the registry in turn."""
    found: ContractCase = request.param
    return found


@pytest.fixture
def under_test(
    case: ContractCase, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Backend]:
    """The backend of ``case``, made through the registry, with a fresh state folder."""
    made = case.make(request, tmp_path / "state")
    try:
        yield made
    finally:
        made.close()


async def test_backend_passes_the_conformance_suite(
    case: ContractCase, under_test: Backend, tmp_path: Path
) -> None:
    report = await run_contract(under_test, spec_for(tmp_path / "results"), tmp_path / "scratch")
    expected_na = set(case.not_applicable) & set(report)
    assert {k for k, v in report.items() if v.startswith("n/a")} == expected_na
    assert all(v == "ok" for k, v in report.items() if k not in expected_na), report
    assert "mirror" in report and "gone" in report


async def test_backend_refuses_an_unknown_task_or_agent_before_starting(
    under_test: Backend, tmp_path: Path
) -> None:
    with pytest.raises(EnvError):
        await under_test.launch(spec_for(tmp_path / "results", task_id="sre-999"))
    with pytest.raises(EnvError):
        await under_test.launch(spec_for(tmp_path / "results", agent="nobody"))
    # nothing was started: this state owns no run (an engine may list other states' containers)
    assert [r for r in await under_test.list(include_exited=True) if r.owned] == []


async def test_backend_run_to_results_mirrors_one_complete_folder(
    under_test: Backend, tmp_path: Path
) -> None:
    spec = LaunchSpec(task_id="sre-003", agent_spec="heuristic", results_root=tmp_path / "res")
    outcome = await run_to_results(under_test, spec, tmp_path / "scratch")
    assert outcome.summary is not None and outcome.summary.run_id == outcome.handle.run_id
    folder = outcome.results_dir
    assert folder.parent.parent.parent.parent == tmp_path / "res"
    assert folder.parts[-4:-1] == ("sre-003", "none", "heuristic")
    for name_ in ("run.json", "result.json", "summary.json", "archive/dialog.jsonl"):
        assert (folder / name_).is_file()
    if not under_test.writes_results:  # mirrored from the run's own process
        assert (folder / "logs" / "container.log").stat().st_size > 0
        assert (folder / "mirror.json").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]
    await under_test.remove(outcome.handle)


async def test_the_host_lifecycle_has_nothing_to_do_on_an_empty_state(
    under_test: Backend, tmp_path: Path
) -> None:
    assert await recover_unmirrored(under_test, tmp_path / "scratch") == []
    if not under_test.follows_stops:
        watched = await watch_stopped(under_test, tmp_path / "scratch", WatchOptions(tmp_path))
        assert watched == []


def test_get_backend_names_the_available_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="inline, local, docker, ray"):
        get_backend("kubernetes", BackendSettings(tmp_path))


def test_settings_default_state_dir_follows_the_environment(tmp_path: Path) -> None:
    assert BackendSettings.from_env({"SREZ_STATE": str(tmp_path)}).state_dir == tmp_path
    home = BackendSettings.from_env({"HOME": "/home/x"}).state_dir
    assert home == Path("/home/x/.local/state/srez")


def test_settings_keep_only_the_srez_variables() -> None:
    settings = BackendSettings.from_env(
        {"HOME": "/h", "SREZ_SANDBOX": "none", "OPENAI_API_KEY": "k"}
    )
    assert settings.variables == {"SREZ_SANDBOX": "none"}


async def test_inline_has_no_daemon(tmp_path: Path) -> None:
    backend = make("inline", tmp_path)
    handle = await backend.launch(spec_for(tmp_path / "results"))
    with pytest.raises(NoDaemonError, match="inline runs have no daemon"):
        await backend.endpoint(handle)
    with pytest.raises(NoDaemonError):
        await backend.token(handle)


async def test_get_refuses_an_ambiguous_or_unknown_prefix(tmp_path: Path) -> None:
    backend = make("inline", tmp_path)
    first = await backend.launch(spec_for(tmp_path / "results"))
    await backend.launch(spec_for(tmp_path / "results"))
    with pytest.raises(RunNotFoundError, match="matches 2"):
        await backend.get(first.run_id[:4])
    with pytest.raises(RunNotFoundError, match="no inline run"):
        await backend.get("zzz")


async def test_local_daemon_gets_no_token_and_no_provider_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    backend = LocalBackend(tmp_path / "state")
    handle = await backend.launch(spec_for(tmp_path / "results"))
    try:
        token = await backend.token(handle)
        record = backend._record(handle.run_id)
        assert record is not None and record.pid is not None
        environ = proc_file(record.pid, "environ")
        cmdline = proc_file(record.pid, "cmdline")
        for secret in (b"sk-must-not-leak", b"sk-ant-must-not-leak", token.encode()):
            assert secret not in environ
            assert secret not in cmdline
        names = {line.split(b"=", 1)[0].decode() for line in environ.split(b"\0") if line}
        allowed = set(passed_environment(os.environ)) | {
            "SREZ_RUN_DIR",
            "SREZ_TOKEN_FILE",
            "SREZ_HOST",
            "SREZ_PORT",
            "SREZ_ENDPOINT_FILE",
            "SREZ_AGENT_SOCKET",
            "SREZ_SANDBOX",  # the agent's sandbox: bubblewrap or none,
            "SREZ_BWRAP",  # the bwrap program,
            "SREZ_SANDBOX_HIDE",  # and $SREZ_STATE, hidden from the agent
        }
        assert names <= allowed
        token_file = tmp_path / "state" / "live" / handle.run_id / "token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert not list((tmp_path / "state" / "live" / handle.run_id / "run").rglob("token"))
        assert token not in str(handle.labels)
    finally:
        await backend.remove(handle)


async def test_local_launch_reports_a_daemon_that_dies_at_start(tmp_path: Path) -> None:
    argv = ["/bin/sh", "-c", "echo 'cannot bind: boom' >&2; exit 2"]
    backend = LocalBackend(tmp_path / "state", daemon_argv=argv)
    with pytest.raises(BackendError, match="exited during start-up.*cannot bind: boom"):
        await backend.launch(spec_for(tmp_path / "results"))
    (run,) = await backend.list(include_exited=True)
    assert run.status == "exited"


async def test_local_launch_gives_up_on_a_silent_daemon_and_stops_it(tmp_path: Path) -> None:
    argv = ["/bin/sh", "-c", "echo starting; exec sleep 60"]
    backend = LocalBackend(tmp_path / "state", daemon_argv=argv, ready_timeout_s=0.5)
    pattern = r"did not answer /api/health within 0.5 s; nothing of the run was kept.*starting"
    with pytest.raises(BackendError, match=pattern):
        await backend.launch(spec_for(tmp_path / "results"))
    # stopped, and gone with its state: it never began an episode, nothing is left to sweep
    assert await backend.list(include_exited=True) == []
    assert list((tmp_path / "state" / "live").iterdir()) == []


def test_local_replay_path_is_made_absolute(tmp_path: Path) -> None:
    assert absolute_replay("replay:x.jsonl") == f"replay:{Path('x.jsonl').resolve()}"
    assert absolute_replay("scripted") == "scripted"
