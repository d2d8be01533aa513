"""The dashboard's source on the real managed API: the runner starts detached in its own
process group and session, with the TUI's state folder, and is reaped when it ends."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from dash_kit import make_run

from srez_client.errors import UsageError
from srez_client.tui.dashboard.managed_source import ManagedApiSource
from srez_client.tui.dashboard.source import EndedLaunch


def wait_ended(source: ManagedApiSource, timeout: float = 20.0) -> list[EndedLaunch]:
    deadline = time.monotonic() + timeout
    messages: list[EndedLaunch] = []
    while source._launched and time.monotonic() < deadline:
        messages += source.ended_launches()
        time.sleep(0.05)
    assert not source._launched, "the runner did not end"
    return messages


def test_start_runs_the_target_detached_with_the_tui_state(tmp_path: Path) -> None:
    source = ManagedApiSource(tmp_path / "results", tmp_path / "state")
    folder = make_run(source.results_root, tasks=("sre-001",), models=(), budget=None)
    pid = source.start("demo", "scripted")
    assert os.getpgid(pid) == pid and os.getsid(pid) == pid  # its own group and session
    assert os.getsid(pid) != os.getsid(0)
    [ended] = wait_ended(source)
    assert (ended.failed, ended.line()) == (False, "runner of demo/scripted ended (done)")
    with pytest.raises(ChildProcessError):  # already reaped: no zombie left behind
        os.waitpid(pid, os.WNOHANG)
    status = source.status("demo")
    assert status.summary("scripted") is not None
    assert status.summary("scripted").completed == 1  # type: ignore[union-attr]
    assert "sre-001 attempt 1: completed" in (folder / "targets/scripted/console.log").read_text()
    assert (tmp_path / "state" / "tui" / "launch-demo-scripted.log").is_file()


def test_start_reports_a_runner_that_fails(tmp_path: Path) -> None:
    source = ManagedApiSource(tmp_path / "results", tmp_path / "state")
    make_run(source.results_root, models=())
    source.start("demo", "no-such-target")
    [ended] = wait_ended(source)
    message = ended.line()
    assert ended.failed
    assert message.startswith("runner of demo/no-such-target exited 2: srez: error:")
    assert "\x1b" not in message


def test_start_refuses_a_model_target_without_its_key_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "SREZ_LLM_API_KEY", "SREZ_LLM_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    source = ManagedApiSource(tmp_path / "results", tmp_path / "state")
    make_run(source.results_root, models=("openai/gpt-4o",))
    with pytest.raises(UsageError, match=r"'openai/gpt-4o': its provider key is not set"):
        source.start("demo", "llm-openai__gpt-4o")
    assert not source._launched
    assert not (tmp_path / "state" / "tui").exists()  # no runner, not even its launch log

    monkeypatch.setenv("OPENAI_API_KEY", "sk-set")  # with the key, the same start goes ahead
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")  # and reaches no provider
    source.start("demo", "llm-openai__gpt-4o")
    assert source._launched
    [(proc, _log)] = source._launched.values()
    deadline = time.monotonic() + 60  # a stop before the runner holds its lock finds none
    while source.status("demo").runner is None and proc.poll() is None:
        assert time.monotonic() < deadline, "the runner never started"
        time.sleep(0.05)
    source.stop("demo")
    wait_ended(source)
