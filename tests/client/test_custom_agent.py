"""A custom agent command is its own agent: ``srez run --agent cmd:NAME`` (issue 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from client_helpers import one_line_error

from fakes.socket_agent import agent_script
from srez_client.agent_command import agent_command, parse_option
from srez_client.errors import UsageError
from srez_daemon.protocol import iter_dialog

SREZ = Path(sys.executable).parent / "srez"

# Reports what GET /task handed it, then submits.
PROBE = agent_script(
    """
    _, raw = call("GET", "/task")
    task = json.loads(raw)
    seen = {"oracle": task.get("oracle"), "ground_truth": b"ground_truth" in raw,
            "spec": os.environ.get("SREZ_AGENT_SPEC")}
    call("POST", "/dialog", {"type": "assistant", "fields": {"text": json.dumps(seen)}})
    call("POST", "/submit", {"summary": "probe"})
    """
)


def srez(
    state: Path, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {
        **{k: v for k, v in os.environ.items() if k != "SREZ_AGENT_CMD"},
        "SREZ_STATE": str(state),
    }
    return subprocess.run(
        [str(SREZ), *args],
        capture_output=True,
        text=True,
        env={**full, **(env or {})},
        cwd=cwd,
        check=False,
        timeout=120,
    )


def test_cmd_agent_is_recorded_filed_under_its_name_and_never_the_oracle(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROBE)
    state, results = tmp_path / "state", tmp_path / "results"
    proc = srez(
        state,
        "run", "--task", "sre-001", "--agent", "cmd:probe",
        "--agent-cmd", f"{sys.executable} probe.py", "--results", str(results),
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (folder,) = (results / "sre-001" / "none" / "probe").iterdir()
    assert not (results / "sre-001" / "none" / "scripted").exists()
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["agent"] == "probe" and manifest["agent_spec"] == "cmd:probe"
    assert manifest["agent_cmd"] == [sys.executable, str(tmp_path / "probe.py")]  # made absolute
    notes = [e for e in iter_dialog((folder / "archive/dialog.jsonl").read_bytes())]
    (seen,) = [json.loads(e.text) for e in notes if e.type == "assistant"]
    assert seen == {"oracle": None, "ground_truth": False, "spec": "cmd:probe"}
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["agent"] == "probe" and summary["end_reason"] == "submit"


def test_srez_agent_cmd_with_a_builtin_agent_is_refused_in_one_line(tmp_path: Path) -> None:
    env = {"SREZ_AGENT_CMD": json.dumps([sys.executable, "probe.py"])}
    for agent in ("scripted", "heuristic"):
        proc = srez(
            tmp_path / "state", "run", "--task", "sre-001", "--agent", agent,
            "--results", str(tmp_path / "results"), cwd=tmp_path, env=env,
        )  # fmt: skip
        one_line_error(proc, f"SREZ_AGENT_CMD is set but the agent is the built-in {agent!r}")
    assert not (tmp_path / "results").exists()  # nothing ran, nothing was filed
    proc = srez(
        tmp_path / "state", "run", "--task", "sre-001", "--agent", "cmd:scripted",
        "--agent-cmd", "true", cwd=tmp_path,
    )  # fmt: skip
    one_line_error(proc, "is a built-in agent's")


def test_agent_command_sources_and_refusals(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text("")
    env = {"SREZ_AGENT_CMD": '["python3", "mine.py", "--fast"]'}
    assert agent_command("cmd:mine", None, env, cwd=tmp_path) == (
        "python3",
        str(tmp_path / "mine.py"),
        "--fast",
    )
    (tmp_path / "my agent.py").write_text("")
    option = parse_option("python3 'my agent.py'")
    for text, needle in (("python3 'mine.py", "No closing quotation"), ("  ", "is empty")):
        with pytest.raises(UsageError, match=needle):
            parse_option(text)
    assert agent_command("cmd:mine", option, env, cwd=tmp_path) == (
        "python3",
        str(tmp_path / "my agent.py"),
    )
    assert agent_command("scripted", None, {}) is None
    for spec, cmd, environ, needle in (
        ("scripted", None, env, "SREZ_AGENT_CMD is set"),
        ("llm", None, env, "SREZ_AGENT_CMD is set"),
        ("heuristic", ("x",), {}, "--agent-cmd is for custom agents"),
        ("cmd:mine", None, {}, "needs its command"),
        ("cmd:mine", None, {"SREZ_AGENT_CMD": "python3 mine.py"}, "JSON list of strings"),
        ("cmd:Bad/Name", ("x",), {}, "custom agent name"),
        ("cmd:random", ("x",), {}, "built-in agent's"),
    ):
        with pytest.raises(UsageError, match=needle):
            agent_command(spec, cmd, environ)
