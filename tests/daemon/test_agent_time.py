"""Attested agent time (docs/design.md §13.3): provider waits are capped, observed, and only the
built-in LLM agents' count; a hard wall-clock cap ends any agent phase."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

import aiohttp
import pytest
from daemonkit import RUN_ID, SLEEPER, live_daemon, prepare

from fakes.socket_agent import agent_script
from srez_daemon.agent_clock import AgentClock
from srez_daemon.attest import provider_waits_attested
from srez_daemon.protocol import iter_dialog
from srez_daemon.protocol.api import PhaseFrame
from srez_daemon.run import RunController
from srez_daemon.settings import DaemonSettings, SettingsError

ENDLESS = {"kind": "rate_limit", "message": "429", "retry_in_s": 1e300, "cooldown": True}

# A custom agent that claims an endless cooldown, then keeps acting as if its clock had stopped.
CLAIMING_AGENT = agent_script(
    """
    note = {"kind": "rate_limit", "message": "429", "retry_in_s": 1e300, "cooldown": True}
    call("POST", "/dialog", {"type": "provider_error", "fields": note})
    while call("POST", "/tools/get_alerts", {})[0] == 200:
        time.sleep(0.5)
    """
)


# ---------------------------------------------------------------------- the clock (pure)


def test_clock_of_an_unattested_agent_excludes_nothing() -> None:
    clock = AgentClock(attested=False, note_cap_s=120, run_cap_s=600)
    clock.note(1e300, now=0.0)
    assert clock.excluded_s(now=50.0) == 0.0
    clock.activity(now=60.0)
    assert clock.excluded_s(now=60.0) == 0.0


def test_clock_takes_the_smaller_of_the_claim_and_the_observation() -> None:
    clock = AgentClock(attested=True, note_cap_s=120, run_cap_s=600)
    clock.note(1e300, now=10.0)
    assert clock.excluded_s(now=12.5) == 2.5  # open: what has passed so far
    clock.activity(now=13.0)  # the next request closes it at what was observed
    assert clock.excluded_s(now=100.0) == 3.0
    clock.note(2.0, now=100.0)
    clock.activity(now=109.0)  # the agent took longer than it claimed: the claim counts
    assert clock.excluded_s(now=109.0) == 5.0
    clock.note(4.0, now=110.0)
    clock.note(4.0, now=111.0)  # a note is a request: it closes the wait before it
    clock.activity(now=120.0)
    assert clock.excluded_s(now=120.0) == 5.0 + 1.0 + 4.0


def test_clock_caps_each_note_and_the_run() -> None:
    clock = AgentClock(attested=True, note_cap_s=120, run_cap_s=200)
    clock.note(float("inf"), now=0.0)
    assert clock.excluded_s(now=1000.0) == 120.0  # an open wait counts up to the note cap
    clock.activity(now=1000.0)
    clock.note(1e300, now=1000.0)
    clock.activity(now=2000.0)
    assert clock.excluded_s(now=2000.0) == 200.0  # and the run's waits up to the run cap
    for bad in (None, "600", -5, float("nan"), True):
        fresh = AgentClock(attested=True, note_cap_s=120, run_cap_s=600)
        fresh.note(bad, now=0.0)
        assert fresh.excluded_s(now=30.0) == 0.0, bad


def test_only_the_builtin_llm_agents_waits_are_attested() -> None:
    assert provider_waits_attested(builtin_agent=True, agent_spec="llm")
    assert provider_waits_attested(builtin_agent=True, agent_spec="llm-json")
    assert not provider_waits_attested(builtin_agent=False, agent_spec="llm")
    assert not provider_waits_attested(builtin_agent=True, agent_spec="heuristic")
    assert not provider_waits_attested(builtin_agent=False, agent_spec="cmd:mine")


def test_settings_caps_and_the_default_wall_cap() -> None:
    base = {"SREZ_RUN_DIR": "/tmp/r", "SREZ_TOKEN_FILE": "/tmp/t"}
    plain = DaemonSettings.from_env(base)
    assert (plain.provider_wait_cap_s, plain.provider_wait_run_cap_s) == (120.0, 600.0)
    assert plain.wall_cap_s is None  # no time limit, no cap unless set
    limited = DaemonSettings.from_env({**base, "SREZ_AGENT_TIME_LIMIT_S": "5"})
    assert limited.wall_cap_s == 3 * 5 + 600
    tuned = DaemonSettings.from_env(
        {
            **base,
            "SREZ_AGENT_TIME_LIMIT_S": "5",
            "SREZ_PROVIDER_WAIT_CAP_S": "10",
            "SREZ_PROVIDER_WAIT_RUN_CAP_S": "20",
        }
    )
    assert (tuned.provider_wait_cap_s, tuned.wall_cap_s) == (10.0, 35.0)
    assert DaemonSettings.from_env({**base, "SREZ_AGENT_WALL_CAP_S": "7"}).wall_cap_s == 7.0
    for bad in ("inf", "nan", "-1", "x"):
        with pytest.raises(SettingsError, match="SREZ_PROVIDER_WAIT_CAP_S"):
            DaemonSettings.from_env({**base, "SREZ_PROVIDER_WAIT_CAP_S": bad})


# ---------------------------------------------------------------------- the run controller


SEALED_AT: dict[str, float] = {}


def sealed(frame: object) -> None:
    if isinstance(frame, PhaseFrame) and frame.phase == "sealed":
        SEALED_AT[RUN_ID] = time.monotonic()


def controller(
    tmp_path: Path, *, spec: str, limit: float | None, wall: float | None = None
) -> RunController:
    SEALED_AT.clear()
    run_dir, token_file = prepare(tmp_path, agent_spec=spec)
    settings = DaemonSettings(
        run_dir=run_dir,
        token_file=token_file,
        agent_argv=SLEEPER,
        agent_time_limit_s=limit,
        agent_wall_cap_s=wall,
    )
    return RunController(settings, publish=sealed, environ=dict(os.environ))


async def post(run: RunController, path: str, body: object) -> int:
    connector = aiohttp.UnixConnector(path=str(run.settings.socket_path))
    async with (
        aiohttp.ClientSession(connector=connector) as http,
        http.post(f"http://agent{path}", json=body) as resp,
    ):
        return resp.status


async def agent_phase_s(run: RunController, within_s: float) -> float:
    """Seconds from now to the end of the agent phase (the run must end within_s)."""
    start = time.monotonic()
    async with asyncio.timeout(within_s):
        await run.finished.wait()
    await run.close()
    return SEALED_AT[RUN_ID] - start


async def test_a_custom_agents_provider_note_excludes_nothing(tmp_path: Path) -> None:
    run = controller(tmp_path, spec="llm", limit=1.0)  # an LLM spec, but not the built-in agent
    await run.start()
    assert not run.agent_clock.attested
    assert await post(run, "/dialog", {"type": "provider_error", "fields": ENDLESS}) == 204
    took = await agent_phase_s(run, within_s=5)
    assert took < 2.0 and run.state.end_reason == "time_limit" and run.state.cooldown_s == 0.0


async def test_an_attested_claim_is_capped_to_what_the_daemon_observed(tmp_path: Path) -> None:
    run = controller(tmp_path, spec="llm", limit=1.0)
    # the built-in LLM agent's notes are attested; this run's agent only stands in for it
    run.agent_clock = AgentClock(attested=True, note_cap_s=120, run_cap_s=600)
    await run.start()
    assert await post(run, "/dialog", {"type": "provider_error", "fields": ENDLESS}) == 204
    await asyncio.sleep(1.5)
    assert run.phase == "agent"  # 1.5 s passed, all of it an (open) provider wait
    assert await post(run, "/tools/get_alerts", {}) == 200  # the wait ends: ~1.5 s observed
    took = await agent_phase_s(run, within_s=5)
    summary = json.loads(run.paths.summary_json.read_text())
    assert summary["end_reason"] == "time_limit"
    assert 1.4 <= run.state.cooldown_s <= 2.0, run.state.cooldown_s  # not 1e300
    print(f"claimed 1e300 s, excluded {run.state.cooldown_s} s; phase ended {took + 1.5:.2f} s in")


async def test_the_hard_wall_cap_ends_the_phase_whatever_was_claimed(tmp_path: Path) -> None:
    run = controller(tmp_path, spec="llm", limit=1.0, wall=2.0)
    run.agent_clock = AgentClock(attested=True, note_cap_s=120, run_cap_s=600)
    await run.start()
    assert await post(run, "/dialog", {"type": "provider_error", "fields": ENDLESS}) == 204
    took = await agent_phase_s(run, within_s=5)  # without the cap: 1 s + a 120 s open wait
    summary = json.loads(run.paths.summary_json.read_text())
    assert 1.8 <= took < 3.0 and summary["end_reason"] == "time_limit"
    assert "hard wall-clock cap of 2 s" in summary["error"]


async def test_the_wall_cap_holds_without_a_time_limit(tmp_path: Path) -> None:
    run = controller(tmp_path, spec="heuristic", limit=None, wall=1.0)
    await run.start()
    took = await agent_phase_s(run, within_s=5)
    assert took < 2.0 and run.state.end_reason == "time_limit"


# ---------------------------------------------------------------------- a real daemon


def test_a_5s_limit_ends_a_run_whose_custom_agent_claims_an_endless_cooldown(
    tmp_path: Path,
) -> None:
    """Issue 11 item 3: one ``retry_in_s: 1e300`` note let an agent act at 15 s under a 5 s
    limit. The claim is a custom command's: it excludes nothing."""
    script = tmp_path / "claiming_agent.py"
    script.write_text(CLAIMING_AGENT)
    with live_daemon(
        tmp_path,
        agent_spec="llm",
        agent_cmd=(sys.executable, str(script)),
        keep=True,
        env={"SREZ_AGENT_TIME_LIMIT_S": "5"},
    ) as daemon:
        started = time.monotonic()
        daemon.wait_phase("done", "error", timeout_s=15)
        took = time.monotonic() - started
        run = daemon.json("/api/run")
    entries = list(iter_dialog((daemon.run_dir / "archive" / "dialog.jsonl").read_bytes()))
    first = datetime.fromisoformat(entries[0].ts)
    calls = [
        (datetime.fromisoformat(e.ts) - first).total_seconds()
        for e in entries
        if e.type == "tool_call"
    ]
    assert run["end_reason"] == "time_limit", run
    assert calls and max(calls) < 6.0, calls  # no action after the limit
    assert took < 8.0
    print(
        f"5 s limit, 1e300 s claimed: ended {took:.2f} s after start, last call {max(calls):.2f} s"
    )
