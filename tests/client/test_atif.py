"""``srez export atif``: a run's dialog as an ATIF trajectory beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from srez_client.cli import main

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


def test_export_atif_writes_the_trajectory_beside_the_dialog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "results")
    assert main(["export", "atif", str(run)]) == 0
    out = run / "archive" / "trajectory.json"
    assert capsys.readouterr().out.strip() == str(out)
    t = json.loads(out.read_text())
    assert t["schema_version"] == "ATIF-v1.4" and t["session_id"] == RUN_ID
    assert t["agent"] == {"name": "llm", "version": "0.1.0", "model_name": "openai/fake"}
    assert [s["source"] for s in t["steps"]] == ["user", "system", "agent", "agent"]
    assert [s["step_id"] for s in t["steps"]] == [1, 2, 3, 4]
    user, provider, first, second = t["steps"]
    assert user["message"] == "the brief"
    assert "rate_limit" in provider["message"] and provider["extra"]["retry_in_s"] == 1.5
    assert first["reasoning_content"] == "check alerts"
    assert first["metrics"] == {"prompt_tokens": 100, "completion_tokens": 20}
    assert first["tool_calls"] == [
        {"tool_call_id": "call-1", "function_name": "get_alerts", "arguments": {}}
    ]
    assert first["observation"] == {"results": [{"source_call_id": "call-1", "content": "ALERTS"}]}
    assert second["tool_calls"][0]["function_name"] == "submit"
    assert t["final_metrics"] == {
        "total_prompt_tokens": 100,
        "total_completion_tokens": 20,
        "total_cost_usd": 0.002,
        "total_steps": 4,
    }
    assert t["extra"]["session_end"]["type"] == "session_completed"
    assert "1 dialog line" in t["notes"]  # the torn last line


def test_export_atif_by_run_id_and_all(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run = make_run(results)
    assert main(["export", "atif", RUN_ID, "--results", str(results)]) == 0
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
    ],
)
def test_export_atif_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main([*argv, "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("srez: error:")
