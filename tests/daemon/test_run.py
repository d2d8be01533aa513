"""The run controller with real agent processes over the real agent socket (docs/design.md §2,
§5)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from daemonkit import SLEEPER, prepare, reference_line

from srez_daemon.protocol import iter_dialog
from srez_daemon.protocol.api import PhaseFrame
from srez_daemon.run import RunController
from srez_daemon.settings import DaemonSettings

ROOT = Path(__file__).resolve().parents[2]


def controller(
    tmp_path: Path,
    *,
    spec: str = "scripted",
    task_id: str = "sre-007",
    argv: tuple[str, ...] | None = None,
    limit: float | None = None,
    frames: list[Any] | None = None,
) -> RunController:
    run_dir, token_file = prepare(tmp_path, task_id=task_id, agent_spec=spec)
    settings = DaemonSettings(run_dir=run_dir, token_file=token_file, agent_time_limit_s=limit)
    if argv is not None:
        settings = DaemonSettings(
            run_dir=run_dir, token_file=token_file, agent_argv=argv, agent_time_limit_s=limit
        )
    sink = frames if frames is not None else []
    return RunController(settings, publish=sink.append, environ=dict(os.environ))


async def finish(run: RunController, limit_s: float = 60) -> None:
    async with asyncio.timeout(limit_s):
        await run.finished.wait()
    await run.close()


def entry_types(run: RunController) -> list[str]:
    return [e.type for e in iter_dialog(run.paths.dialog.read_bytes())]


async def test_scripted_run_goes_through_every_phase_and_writes_every_file(tmp_path: Path) -> None:
    frames: list[Any] = []
    run = controller(tmp_path, frames=frames)
    await run.start()
    await finish(run)
    phases = [f.phase for f in frames if isinstance(f, PhaseFrame)]
    assert phases == ["agent", "sealed", "grading", "done"]
    result = json.loads(run.paths.result_json.read_text())
    summary = json.loads(run.paths.summary_json.read_text())
    assert (
        result["reward"]["total"] == 1.0
        and summary["status"] == "ok"
        and summary["end_reason"] == "submit"
    )
    assert run.paths.final_patch.read_text() == run.paths.reference_patch.read_text() != ""
    types = entry_types(run)
    assert types[:2] == ["session_started", "task_prompt"] and types[-1] == "session_completed"
    assert types.count("tool_call") == types.count("tool_result") == 6
    assert len(run.paths.transcript.read_text().splitlines()) == 6
    assert reference_line() in run.paths.conf("payments").read_text()  # the live world file
    assert json.loads(run.paths.state_json.read_text())["phase"] == "done"


async def test_agent_that_exits_early_is_graded_as_it_stands(tmp_path: Path) -> None:
    run = controller(tmp_path, argv=(sys.executable, "-c", "raise SystemExit(3)"))
    await run.start()
    await finish(run)
    summary = json.loads(run.paths.summary_json.read_text())
    assert (summary["status"], summary["end_reason"], summary["reward"]) == (
        "error",
        "agent_exit",
        0.0,
    )
    assert "code 3" in summary["error"] and entry_types(run)[-1] == "session_failed"


@pytest.mark.parametrize(("code", "claim"), [(75, "provider"), (2, "harness")])
async def test_a_custom_agents_exit_claim_is_recorded_but_counts_as_the_agents(
    tmp_path: Path, code: int, claim: str
) -> None:
    run = controller(tmp_path, spec="llm", argv=(sys.executable, "-c", f"raise SystemExit({code})"))
    await run.start()
    await finish(run)
    summary = json.loads(run.paths.summary_json.read_text())
    assert (summary["error_kind"], summary["claimed_error_kind"]) == ("agent", claim)
    assert json.loads(run.paths.result_json.read_text())["error_kind"] == "agent"
    assert f"claimed a {claim} failure: not attested" in run.paths.log("evaluator").read_text()


async def test_time_limit_ends_the_agent_phase_and_kills_the_agent(tmp_path: Path) -> None:
    run = controller(tmp_path, argv=SLEEPER, limit=1.0)
    await run.start()
    assert run.agent is not None and run.agent.pid is not None
    pid = run.agent.pid
    await finish(run, limit_s=20)
    assert json.loads(run.paths.summary_json.read_text())["end_reason"] == "time_limit"
    assert entry_types(run)[-1] == "session_timed_out"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def _socket_session(run: RunController) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.UnixConnector(path=str(run.settings.socket_path))
    )


async def test_agent_socket_executes_records_and_refuses_after_the_phase(tmp_path: Path) -> None:
    run = controller(tmp_path, spec="heuristic", argv=SLEEPER)
    await run.start()
    async with await _socket_session(run) as http:
        async with http.get("http://agent/task") as resp:
            task = await resp.json()
        assert task["oracle"] is None and task["max_steps"] == 40 and "text" in task["prompt"]
        async with http.post("http://agent/tools/kubectl", json={}) as resp:
            bad = await resp.json()
        assert bad["ok"] is False and bad["error"]["code"] == "UNKNOWN_TOOL"
        async with http.post("http://agent/tools/get_logs", data=b"not json") as resp:
            assert resp.status == 400 and (await resp.json())["error"]["code"] == "bad_request"
        async with http.post(
            "http://agent/dialog", json={"type": "assistant", "fields": {"text": "looking"}}
        ) as resp:
            assert resp.status == 204
        async with http.post(
            "http://agent/dialog", json={"type": "tool_call", "fields": {}}
        ) as resp:
            assert resp.status == 400  # the tool record cannot be forged
        async with http.post("http://agent/submit", json={"summary": "done"}) as resp:
            assert (await resp.json())["done"] is True
        await finish(run)
    assert entry_types(run).count("assistant") == 1
    assert run.state.steps_used == 2


async def test_oracle_alone_gets_the_task_file(tmp_path: Path) -> None:
    run = controller(tmp_path / "builtin", spec="scripted")  # the built-in srez-agent
    await run.start()
    task = run.agent_task()
    assert (
        task.oracle is not None
        and task.oracle["ground_truth"]["root_cause"]["service"] == "payments"
    )
    await finish(run)
    # a custom command is never the oracle, even when the run says "scripted"
    custom = controller(tmp_path / "custom", spec="scripted", argv=SLEEPER)
    await custom.start()
    assert custom.agent_task().oracle is None
    await custom.end_agent_phase("agent_exit", "completed")
    await custom.close()


async def test_byo_example_agent_runs_to_a_grade(tmp_path: Path) -> None:
    run = controller(tmp_path, argv=(sys.executable, str(ROOT / "examples" / "byo_agent.py")))
    await run.start()
    await finish(run)
    summary = json.loads(run.paths.summary_json.read_text())
    assert summary["status"] == "ok" and summary["end_reason"] == "submit" and summary["steps"] >= 3
    types = entry_types(run)
    assert types.count("assistant") == 1 and types[-1] == "session_completed"


async def test_sigterm_during_the_agent_phase_still_writes_the_summary(tmp_path: Path) -> None:
    run = controller(tmp_path, argv=SLEEPER)
    await run.start()
    await run.stop()
    await run.close()
    summary = json.loads(run.paths.summary_json.read_text())
    assert summary["status"] == "error" and summary["end_reason"] == "stopped"
    assert "SIGTERM" in summary["error"] and run.paths.result_json.exists()


def test_agent_user_is_resolved_or_refused_in_one_line(tmp_path: Path) -> None:
    from srez_daemon.errors import RunSetupError
    from srez_daemon.supervisor import AgentUser

    nobody = AgentUser.lookup("nobody")
    assert nobody.uid > 0 and nobody.name == "nobody"
    with pytest.raises(RunSetupError, match="names no user"):
        AgentUser.lookup("no-such-user-here")
    run_dir, token = prepare(tmp_path)
    env = {"SREZ_RUN_DIR": str(run_dir), "SREZ_TOKEN_FILE": str(token), "SREZ_AGENT_USER": "agent"}
    assert DaemonSettings.from_env(env).agent_user == "agent"
    assert DaemonSettings.from_env({**env, "SREZ_AGENT_USER": ""}).agent_user is None
