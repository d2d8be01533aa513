"""``srez export atif``: a run's dialog as an ATIF v1.8 trajectory beside it.

Every exported trajectory here is validated by the ``atif`` package's models (where it is
installed: the dev extras) and checked for what those models let through: the exact version tag,
``llm_call_count`` on every step, the registry's tool definitions, and the step-count identity with
``summary.json`` that :mod:`srez_client.results.atif` documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.expert import expert_replies
from fakes.openai_server import FakeOpenAI, error, text, tool_call
from srez_client.cli import main
from srez_client.results.atif import to_atif
from srez_daemon.protocol.dialog import iter_dialog
from srez_env.actions import TOOLS, openai_tools

RUN_ID = "20260101T000000Z-0123abcd"
TS = "2026-01-01T00:00:00Z"


def entry(seq: int, kind: str, /, **fields: Any) -> str:
    return json.dumps({"seq": seq, "ts": TS, "type": kind, **fields})


def tool_turn(
    seq: int, step: int, name: str, args: dict[str, Any], result: str, duration_ms: float
) -> list[str]:
    """Step ``step`` of 20: a tool call (entry ``seq``) and its successful result (``seq + 1``)."""
    call_id = f"call-{step}"
    return [
        entry(seq, "tool_call", call_id=call_id, name=name, args=args, status="running"),
        entry(
            seq + 1,
            "tool_result",
            call_id=call_id,
            status="success",
            result=result,
            duration_ms=duration_ms,
            step=step,
            steps_left=20 - step,
        ),
    ]


def make_run(root: Path) -> Path:
    run = root / "sre-007" / "openai__fake" / "llm" / RUN_ID
    (run / "archive").mkdir(parents=True)
    lines = [
        entry(
            0, "session_started", agent="llm", model="openai/fake", task_id="sre-007", run_id=RUN_ID
        ),
        entry(1, "task_prompt", text="the brief"),
        entry(
            2, "provider_error", kind="rate_limit", message="busy", retry_in_s=1.5, cooldown=False
        ),
        entry(3, "thinking", text="check alerts"),
        entry(4, "assistant", text="(calls get_alerts)", tokens={"input": 100, "output": 20}),
        entry(5, "usage", tokens={"input": 100, "output": 20}, cost_usd=0.002),
        *tool_turn(6, 1, "get_alerts", {}, "ALERTS", duration_ms=0.5),
        *tool_turn(8, 2, "submit", {"summary": "s"}, "submitted", duration_ms=0.1),
        entry(10, "session_completed", turns=2, duration_s=1.0, tokens_total=120, cost_usd=0.002),
    ]
    (run / "archive" / "dialog.jsonl").write_text("\n".join(lines) + '\n{"seq": 11, "ts"')
    run_json = {
        "run_id": RUN_ID,
        "task_id": "sre-007",
        "agent": "llm",
        "agent_spec": "llm",
        "model": "openai/fake",
        "srez_version": "0.1.0",
    }
    (run / "run.json").write_text(json.dumps(run_json))
    summary = {
        "schema_version": 1, "run_id": RUN_ID, "task_id": "sre-007", "agent": "llm",
        "model": "openai/fake", "status": "ok", "reward": 1.0, "resolved": True, "passed": True,
        "steps": 2, "end_reason": "submit", "duration_s": 1.0, "finished_at": TS,
    }  # fmt: skip
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def validated(trajectory: dict[str, Any]) -> dict[str, Any]:
    """``trajectory``, once the ``atif`` models accept it and it says ATIF v1.8 (which they do
    not check); also the checks every export must pass, whatever the run."""
    atif = pytest.importorskip("atif")
    atif.Trajectory.model_validate(trajectory)
    assert trajectory["schema_version"] == "ATIF-v1.8"
    assert trajectory["agent"]["tool_definitions"] == openai_tools()
    steps = trajectory["steps"]
    assert all(isinstance(s.get("llm_call_count"), int) for s in steps)
    final = trajectory["final_metrics"]
    assert final["extra"]["llm_calls"] == sum(s["llm_call_count"] for s in steps)
    for step in steps:
        assert len(step.get("tool_calls", [])) <= 1
        if step["llm_call_count"] == 0:  # deterministic dispatch: nothing a model produced
            assert "metrics" not in step and "reasoning_content" not in step
    return trajectory


def check_step_counts(trajectory: dict[str, Any], summary: dict[str, Any]) -> None:
    """The identity of the module docstring: the answered tool calls are the episode's steps
    1..N, N is ``summary.json``'s ``steps``, and every other step is a prompt, a provider error or
    an agent step without an answered call."""
    steps = trajectory["steps"]
    answered = [s for s in steps if "observation" in s]
    counted = [s["observation"]["results"][0]["extra"]["step"] for s in answered]
    assert counted == list(range(1, summary["steps"] + 1))
    final = trajectory["final_metrics"]
    assert final["extra"]["episode_steps"] == len(answered) == summary["steps"]
    users = [s for s in steps if s["source"] == "user"]
    systems = [s for s in steps if s["source"] == "system"]
    unanswered = [s for s in steps if s["source"] == "agent" and "observation" not in s]
    assert final["total_steps"] == len(steps)
    assert final["total_steps"] == summary["steps"] + len(users) + len(systems) + len(unanswered)
    assert "notes" not in trajectory or "summary.json counts" not in trajectory["notes"]


def exported(run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's trajectory (validated) and summary."""
    trajectory = json.loads((run / "archive" / "trajectory.json").read_text())
    return validated(trajectory), json.loads((run / "summary.json").read_text())


def test_export_atif_writes_the_trajectory_beside_the_dialog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "results")
    assert main(["export", "atif", str(run)]) == 0
    out = run / "archive" / "trajectory.json"
    assert capsys.readouterr().out.strip() == str(out)
    t = json.loads(out.read_text())
    assert t["session_id"] == t["trajectory_id"] == RUN_ID
    agent = t["agent"]
    assert (agent["name"], agent["version"], agent["model_name"]) == ("llm", "0.1.0", "openai/fake")
    assert [d["function"]["name"] for d in agent["tool_definitions"]] == list(TOOLS)
    assert len(agent["tool_definitions"]) == len(TOOLS) and agent["extra"] == {"agent_spec": "llm"}
    assert [s["source"] for s in t["steps"]] == ["user", "system", "agent", "agent"]
    assert [s["step_id"] for s in t["steps"]] == [1, 2, 3, 4]
    assert [s["llm_call_count"] for s in t["steps"]] == [0, 0, 1, 0]
    user, provider, first, second = t["steps"]
    assert user["message"] == "the brief"
    assert "rate_limit" in provider["message"] and provider["extra"]["retry_in_s"] == 1.5
    assert first["reasoning_content"] == "check alerts"
    assert first["metrics"] == {"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.002}
    assert first["tool_calls"] == [
        {"tool_call_id": "call-1", "function_name": "get_alerts", "arguments": {}}
    ]
    extra = {"status": "success", "step": 1, "steps_left": 19, "duration_ms": 0.5}
    assert first["observation"] == {
        "results": [{"source_call_id": "call-1", "content": "ALERTS", "extra": extra}]
    }
    assert second["tool_calls"][0]["function_name"] == "submit" and "metrics" not in second
    assert t["final_metrics"] == {
        "total_prompt_tokens": 100,
        "total_completion_tokens": 20,
        "total_cost_usd": 0.002,
        "total_steps": 4,
        "extra": {"episode_steps": 2, "llm_calls": 1},
    }
    assert t["extra"]["session_end"]["type"] == "session_completed"
    assert t["notes"] == "1 dialog line(s) could not be read or paired and were skipped"
    check_step_counts(validated(t), json.loads((run / "summary.json").read_text()))


def trajectory_of(*lines: str, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    data = ("\n".join(lines) + "\n").encode()
    run = {"run_id": RUN_ID, "agent": "custom", "model": "none", "srez_version": "0.1.0"}
    return validated(to_atif(iter_dialog(data, final=True), run=run, summary=summary))


def test_each_reply_is_one_agent_step_with_at_most_one_call() -> None:
    t = trajectory_of(
        entry(0, "task_prompt", text="brief"),
        entry(1, "assistant", text="first", tokens={"input": 1, "output": 1}),
        entry(2, "thinking", text="second thoughts"),  # after a reply's text: the next reply
        entry(3, "assistant", text="second", tokens={"input": 2, "output": 2}),
        *tool_turn(4, 1, "get_alerts", {}, "ALERTS", duration_ms=0.5),
        entry(6, "assistant", text="third"),  # no tokens, no thinking: no model call recorded
        entry(7, "assistant", text="fourth"),
    )
    agents = [s for s in t["steps"] if s["source"] == "agent"]
    assert [s["message"] for s in agents] == ["first", "second", "third", "fourth"]
    assert [s["llm_call_count"] for s in agents] == [1, 1, 0, 0]
    assert agents[1]["reasoning_content"] == "second thoughts" and "tool_calls" in agents[1]
    assert "tool_calls" not in agents[0] and "metrics" not in agents[2]
    assert t["final_metrics"]["extra"] == {"episode_steps": 1, "llm_calls": 2}


def test_cost_per_step_is_the_rise_of_the_running_cost_when_known() -> None:
    reply = {"input": 10, "output": 1}
    t = trajectory_of(
        entry(0, "assistant", text="a", tokens=reply),
        entry(1, "usage", tokens=reply, cost_usd=0.5),
        *tool_turn(2, 1, "get_alerts", {}, "ALERTS", duration_ms=0.5),
        entry(4, "assistant", text="b", tokens=reply),
        entry(5, "usage", tokens={"input": 20, "output": 2}, cost_usd=0.75),
        *tool_turn(6, 2, "get_alerts", {}, "ALERTS", duration_ms=0.5),
        entry(8, "assistant", text="c", tokens=reply),
        entry(9, "usage", tokens={"input": 30, "output": 3}),  # unpriced from here on
    )
    assert [s["metrics"].get("cost_usd") for s in t["steps"]] == [0.5, 0.25, None]
    assert "total_cost_usd" not in t["final_metrics"]
    assert t["final_metrics"]["total_prompt_tokens"] == 30


def test_a_dialog_short_of_the_summary_steps_says_so_in_notes() -> None:
    t = trajectory_of(
        *tool_turn(0, 1, "get_alerts", {}, "ALERTS", duration_ms=0.5),
        entry(2, "tool_call", call_id="call-2", name="wait", args={"minutes": 5}),
        entry(
            3,
            "tool_result",
            call_id="call-9",
            status="error",
            result="?",
            duration_ms=0,
            step=2,
            steps_left=18,
        ),  # fmt: skip
        summary={"steps": 2},
    )
    assert [("observation" in s) for s in t["steps"]] == [True, False]
    assert t["final_metrics"]["extra"]["episode_steps"] == 1
    assert "1 dialog line(s)" in t["notes"]  # the result of no call
    assert "summary.json counts 2 episode step(s) but the dialog answers 1" in t["notes"]


def test_baseline_and_replay_runs_export_valid_trajectories(tmp_path: Path) -> None:
    moves = tmp_path / "moves.jsonl"
    moves.write_text(
        '{"tool": "no_such_tool", "args": {}}\n'
        '{"tool": "get_logs", "args": {"service": "nowhere"}}\n'
        '{"tool": "get_alerts", "args": {}}\n'
    )
    results = tmp_path / "results"
    agents = f"scripted,heuristic,random,replay:{moves}"
    assert main(["eval", "--agent", agents, "--tasks", "sre-007", "--results", str(results)]) == 0
    assert main(["export", "atif", "--all", "--results", str(results)]) == 0
    runs = {p.parent.parent.name: p.parent for p in results.glob("sre-007/none/*/*/run.json")}
    assert sorted(runs) == ["heuristic", "random", "replay", "scripted"]
    for run in runs.values():
        t, summary = exported(run)
        assert summary["steps"] > 0
        check_step_counts(t, summary)
        assert all(s["llm_call_count"] == 0 for s in t["steps"])
        assert "model_name" not in t["agent"] and "total_prompt_tokens" not in t["final_metrics"]
    t, summary = exported(runs["replay"])
    calls = [s for s in t["steps"] if "tool_calls" in s]
    names = [s["tool_calls"][0]["function_name"] for s in calls]
    assert names == ["no_such_tool", "get_logs", "get_alerts", "submit"]
    statuses = [s["observation"]["results"][0]["extra"]["status"] for s in calls]
    assert statuses == ["error", "error", "success", "success"]  # the invalid calls used steps


def llm_run(tmp_path: Path, server: FakeOpenAI, **settings: str) -> Path:
    """A headless ``srez-daemon --agent llm`` run of sre-007 against the fake OpenAI server, its
    run folder exported; the folder."""
    out = tmp_path / "out"
    keep = ("PATH", "HOME", "LANG", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        SREZ_PORT="0",
        SREZ_RUN_DIR=str(tmp_path / "run"),
        TMPDIR=str(tmp_path),
        SREZ_MODEL="openai/fake",
        SREZ_LLM_API_BASE=server.base_url,
        SREZ_LLM_BACKOFF_S="0.01",
        SREZ_LLM_BACKOFF_MAX_S="0.05",
        SREZ_LLM_INPUT_COST_PER_TOKEN="0.000001",
        SREZ_LLM_OUTPUT_COST_PER_TOKEN="0.000002",
        OPENAI_API_KEY="sk-fake",
        **settings,
    )
    argv = [sys.executable, "-m", "srez_daemon", "--task", "sre-007", "--agent", "llm"]
    done = subprocess.run(
        [*argv, "--out", str(out)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(["export", "atif", str(out)]) == 0
    return out


def test_llm_run_exports_replies_thinking_usage_and_provider_errors(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    expert = expert_replies("sre-007", usage=(200, 10))
    fake_openai.push(
        error(429, "busy", retry_after=0.05),
        tool_call("get_logs", '{"service": ', reasoning="look at logs"),  # malformed: a step
        text("no call in this reply"),  # not a call either: a step
        *expert,
    )
    t, summary = exported(llm_run(tmp_path, fake_openai))
    check_step_counts(t, summary)
    assert summary["steps"] == len(expert) + 2
    assert t["agent"]["model_name"] == "openai/fake"
    sources = [s["source"] for s in t["steps"]]
    assert sources[:3] == ["user", "system", "agent"] and sources.count("system") == 1
    assert "rate_limit" in t["steps"][1]["message"] and t["steps"][1]["llm_call_count"] == 0
    agents = [s for s in t["steps"] if s["source"] == "agent"]
    assert all(s["llm_call_count"] == 1 and "tool_calls" in s for s in agents)
    malformed, textual = agents[0], agents[1]
    assert malformed["reasoning_content"] == "look at logs"
    assert malformed["metrics"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cost_usd": 0.00014,
    }
    assert malformed["observation"]["results"][0]["extra"]["status"] == "error"
    assert textual["message"] == "no call in this reply"
    assert textual["tool_calls"][0]["function_name"] == "_reply"
    final = t["final_metrics"]
    assert final["extra"]["llm_calls"] == len(expert) + 2 == len(fake_openai.requests) - 1
    tokens = summary["tokens"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"]) == (
        tokens["input"],
        tokens["output"],
    )
    assert final["total_cost_usd"] == pytest.approx(sum(s["metrics"]["cost_usd"] for s in agents))


def test_llm_run_cost_cap_submit_is_an_agent_step_without_a_model_call(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.push(tool_call("get_alerts", {}), tool_call("list_services", {}))
    out = llm_run(tmp_path, fake_openai, SREZ_LLM_COST_CAP_USD="0.0001")
    t, summary = exported(out)
    check_step_counts(t, summary)
    last = t["steps"][-1]
    assert last["tool_calls"][0]["function_name"] == "submit" and "Cost cap" in last["message"]
    assert last["llm_call_count"] == 0 and "metrics" not in last
    assert [s["llm_call_count"] for s in t["steps"]] == [0, 1, 0]


def test_export_atif_by_run_id_and_all(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run = make_run(results)
    assert main(["export", "atif", RUN_ID[:20], "--results", str(results)]) == 0
    (run / "archive" / "trajectory.json").unlink()
    assert main(["export", "atif", "--all", "--results", str(results)]) == 0
    assert (run / "archive" / "trajectory.json").is_file()


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "atif"],
        ["export", "atif", "nope"],
        ["export", "atif", RUN_ID, "--all"],
        ["export", "atif", "20990101T000000Z-00000000"],
        ["export", "atif", "../x"],
    ],
)
def test_export_atif_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main([*argv, "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("srez: error:")
