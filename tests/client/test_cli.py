"""The ``srez`` command line, through ``main`` and through the installed console script."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from client_helpers import expert_actions, play

from srez_client.cli import main
from srez_client.cli.play import INT_ARGS
from srez_client.layout import RUN_ID_RE
from srez_daemon.protocol import (
    ErrorEntry,
    SessionCompleted,
    SessionStarted,
    TaskPrompt,
    ToolCall,
    ToolResult,
    iter_dialog,
)
from srez_env.tasks import load_tasks

SREZ = Path(sys.executable).parent / "srez"
RUN_FILES = [
    "archive/dialog.jsonl",
    "archive/transcript.jsonl",
    "final.patch",
    "reference.patch",
    "result.json",
    "run.json",
    "summary.json",
    *(f"world/{s}/{s}.conf" for s in ("auth", "cache", "db", "gateway", "payments")),
]


def run_srez(
    *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SREZ), *args], input=stdin, capture_output=True, text=True, cwd=cwd, check=False
    )


def assert_one_line_error(err: str, *needles: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("srez: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0]


def typed_lines(task_id: str) -> str:
    """The expert's actions as a person types them (key=value, or JSON when that cannot say it)."""
    (task,) = load_tasks([task_id])
    lines = []
    for action in expert_actions(task):
        args = action["args"]
        assert isinstance(args, dict)
        if any(isinstance(v, int) and k not in INT_ARGS for k, v in args.items()):
            lines.append(json.dumps(action))
        else:
            pairs = [f"{k}={shlex.quote(str(v))}" for k, v in args.items()]
            lines.append(" ".join([str(action["tool"]), *pairs]))
    return "\n".join(["help", *lines]) + "\n"


def test_tasks_list_has_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "kind", "root", "service", "difficulty", "max", "steps"]
    rows = lines[2:]
    assert len(rows) == 40
    assert rows[6].split()[:4] == ["sre-007", "conn_pool_exhaustion", "payments", "easy"]


def test_tasks_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 40
    assert rows[6]["id"] == "sre-007"
    assert rows[6]["root_service"] == "payments"


def test_console_script_tasks_list() -> None:
    done = run_srez("tasks", "list")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2 + 40
    assert done.stderr == ""


def test_tasks_show_is_public_only(capsys: pytest.CaptureFixture[str]) -> None:
    (task,) = load_tasks(["sre-007"])
    assert main(["tasks", "show", "sre-007"]) == 0
    captured = capsys.readouterr()
    assert " ".join(task.incident.brief.split()) in " ".join(captured.out.split())
    assert "sre-007" in captured.out
    assert "max steps:  40" in captured.out
    assert "conn_pool_exhaustion" not in captured.out
    assert "pool_max" not in captured.out
    assert captured.err == ""


def test_tasks_show_private_warns_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "show", "sre-007", "--private"]) == 0
    captured = capsys.readouterr()
    assert "conn_pool_exhaustion" in captured.out
    assert "db.pool_max" in captured.out  # the reference fix
    assert "heuristic_expected" in captured.out
    assert captured.err.startswith("srez: warning: ")


def test_eval_scripted_writes_the_full_layout(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_srez(
        "eval", "--agent", "scripted", "--tasks", "sre-007,sre-025", "--seeds", "1",
        "--results", str(results), "--detail",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress bar when stderr is not a terminal
    assert "sre-007" in done.stdout
    assert "sre-025" in done.stdout
    assert "aggregates: scripted" in done.stdout
    for task_id in ("sre-007", "sre-025"):
        agent_dir = results / task_id / "none" / "scripted"
        (run_dir,) = agent_dir.iterdir()
        assert RUN_ID_RE.match(run_dir.name)
        files = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
        assert files == RUN_FILES
        grade = json.loads((run_dir / "result.json").read_text())
        assert grade["reward"]["total"] == 1.0
        assert all(c["pass"] for c in grade["checks"].values())
        assert (run_dir / "final.patch").read_text() == grade["diff"]
        assert (run_dir / "reference.patch").read_text() == grade["reference_patch"]
        assert (run_dir / "final.patch").read_text() == grade["reference_patch"]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status"] == "ok"
        assert summary["reward"] == 1.0
        assert summary["steps"] == grade["steps"]
        run = json.loads((run_dir / "run.json").read_text())
        assert (run["task_id"], run["agent"], run["backend"]) == (task_id, "scripted", "inline")
        assert run["run_id"] == run_dir.name
        check_dialog(run_dir / "archive" / "dialog.jsonl", steps=grade["steps"])
    assert not list(results.rglob("*.partial"))


def check_dialog(path: Path, *, steps: int) -> None:
    entries = list(iter_dialog(path.read_bytes()))
    assert not [e for e in entries if isinstance(e, ErrorEntry)]
    assert [e.seq for e in entries] == list(range(len(entries)))
    assert isinstance(entries[0], SessionStarted)
    assert isinstance(entries[1], TaskPrompt)
    assert "Step budget" in entries[1].text
    assert isinstance(entries[-1], SessionCompleted)
    pairs = entries[2:-1]
    assert len(pairs) == 2 * steps
    for n, (call, result) in enumerate(zip(pairs[::2], pairs[1::2], strict=True), start=1):
        assert isinstance(call, ToolCall)
        assert isinstance(result, ToolResult)
        assert call.call_id == result.call_id
        assert result.step == n
        assert result.status == "success"
    last_call = pairs[-2]
    assert isinstance(last_call, ToolCall)
    assert last_call.name == "submit"


def test_eval_json_output_parses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--agent", "scripted,random", "--tasks", "sre-007", "--seeds", "3"]
    assert main([*argv, "--results", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # the floors not asked for are reported beside the agents, never among the runs
    assert [a["agent"] for a in data["agents"]] == ["noop", "random", "restart-all", "scripted"]
    assert data["leaderboard"][0] == "scripted"
    by_agent = {a["agent"]: a["overall"] for a in data["agents"]}
    scripted = by_agent["scripted"]
    assert scripted["n"] == 3
    assert scripted["mean_reward"] == 1.0
    assert scripted["pass_hat_k"] == {"1": 1.0, "3": 1.0}
    assert scripted["ci"] == {
        k: [1.0, 1.0] for k in ("mean_reward", "resolved_at_1", "passed_at_1", "pass^1", "pass^3")
    }
    random = by_agent["random"]
    lo, hi = random["ci"]["mean_reward"]
    assert lo <= random["mean_reward"] <= hi < 1.0
    assert len(data["comparisons"]) == 3  # each agent with the next one down
    versus = data["comparisons"][0]
    assert (versus["a"], versus["tasks"]) == ("scripted", 1)
    assert versus["lo"] > 0
    assert not versus["within_noise"]
    assert len(data["runs"]) == 6


def test_eval_several_agents_prints_a_leaderboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--agent", "scripted,heuristic", "--tasks", "sre-007", "--results"]
    assert main([*argv, str(tmp_path), "--detail"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("leaderboard ")
    assert "aggregates: heuristic" in out
    board = out.splitlines()[1:]
    assert board[0].split()[:5] == ["rank", "agent", "vs", "next", "n"]
    assert board[2].split()[:2] == ["1", "scripted"]
    assert "1.000 [1.00, 1.00]" in board[2]


def test_eval_prints_a_screenful_leaderboard_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five agents on the 40 tasks: the leaderboard, the provenance, one line per agent by
    difficulty and what was done, in at most 25 lines; --detail adds each run and each kind."""
    agents = "scripted,heuristic,random,noop,restart-all"
    argv = ["eval", "--agent", agents, "--tasks", "all", "--results", str(tmp_path)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 25
    assert lines[0].startswith("leaderboard ")
    assert lines[1].split()[:2] == ["rank", "agent"]
    assert [line.split()[1] for line in lines[3:8]][0] == "scripted"
    assert lines[8].startswith("provenance: ")
    by_difficulty = lines[lines.index("") + 1 :]
    assert by_difficulty[0].split()[:4] == ["mean", "reward", "by", "difficulty"]
    assert {line.split()[0] for line in by_difficulty[2:7]} == set(agents.split(","))
    assert "200 runs written" in lines[-1] and "--detail" in lines[-1]
    assert not any(line.startswith("kind ") for line in lines)
    assert main([*argv[:-1], str(tmp_path / "again"), "--detail"]) == 0
    detail = capsys.readouterr().out.splitlines()
    assert detail[: len(lines) - 1] == lines[:-1]  # the same screenful first
    assert len(detail) > 200
    assert any(line.startswith("kind conn_pool_exhaustion") for line in detail)


def test_eval_replay_agent_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (task,) = load_tasks(["sre-007"])
    replay = tmp_path / "moves.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in expert_actions(task)))
    argv = ["eval", "--agent", f"replay:{replay}", "--tasks", "sre-007", "--json"]
    assert main([*argv, "--results", str(tmp_path / "results")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"][0]["reward"] == 1.0


def test_eval_malformed_replay_names_the_line(tmp_path: Path) -> None:
    replay = tmp_path / "moves.jsonl"
    replay.write_text('{"tool": "get_alerts", "args": {}}\n{"tool": oops\n')
    done = run_srez(
        "eval", "--agent", f"replay:{replay}", "--tasks", "sre-007", "--results", str(tmp_path)
    )
    assert done.returncode == 2
    assert_one_line_error(done.stderr, ":2")
    assert not (tmp_path / "sre-007").exists()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["eval", "--agent", "scripted", "--tasks", "sre-999"], "sre-999"),
        (["eval", "--agent", "telepath", "--tasks", "sre-007"], "telepath"),
        (["eval", "--agent", "scripted", "--seeds", "0"], "--seeds"),
        (["eval", "--agent", "scripted", "--backend", "kubernetes"], "inline"),
        (["tasks", "show", "sre-999"], "sre-999"),
        (["play", "nope"], "nope"),
        (["tasks", "frobnicate"], "frobnicate"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, *(["--results", str(tmp_path)] if argv[0] == "eval" else [])]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, needle)
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_console_script_unknown_task_is_one_line() -> None:
    done = run_srez("tasks", "show", "sre-999")
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "sre-999")


def test_invalid_task_file_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (task,) = load_tasks(["sre-007"])
    data = task.model_dump(mode="json")
    data["max_steps"] = 500
    (tmp_path / "sre-007.yaml").write_text(json.dumps(data))  # JSON is YAML
    assert main(["tasks", "list", "--tasks-dir", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "sre-007.yaml", "max_steps")


def test_tasks_dir_with_a_valid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (task,) = load_tasks(["sre-007"])
    (tmp_path / "sre-007.yaml").write_text(json.dumps(task.model_dump(mode="json")))
    assert main(["tasks", "list", "--tasks-dir", str(tmp_path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_play_expert_lines_pass_every_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = play(monkeypatch, capsys, "sre-007", typed_lines("sre-007"))
    assert "declare_root_cause" in out  # from help
    for check in ("valid", "func", "safe", "intent", "rca"):
        assert f"  {check:<7}PASS" in out
    assert "FAIL" not in out
    assert "reward 1.000000" in out


def test_console_script_play_from_stdin() -> None:
    done = run_srez("play", "sre-025", stdin=typed_lines("sre-025"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("PASS") == 5
    assert "reward 1.000000" in done.stdout


def test_play_bad_lines_are_not_sent_and_quit_grades(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    moves = 'get_logs payments 5m x 3 extra\n{"tool": \nget_alerts\nquit\nget_alerts\n'
    out = play(monkeypatch, capsys, "sre-007", moves)
    assert out.count("not sent:") == 2
    assert "[step 1, 39 left" in out
    assert "[step 2," not in out
    assert "rca    FAIL" in out


def test_schema_dialog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "dialog"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["discriminator"]["propertyName"] == "type"


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "eval" in capsys.readouterr().out


def test_eval_progress_bar_only_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["eval", "--agent", "scripted", "--tasks", "sre-007,sre-025", "--json"]
    assert main([*argv, "--results", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "2/2" in captured.err
    assert json.loads(captured.out)["agents"][0]["overall"]["n"] == 2
