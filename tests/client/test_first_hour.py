"""A newcomer's first hour (issue 13): the command-line rough edges met walking the README."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from client_helpers import play

from srez_client.agent_command import agent_command, parse_option
from srez_client.backends.base import Backend
from srez_client.cli import main
from srez_client.errors import AmbiguousRunError, UsageError
from srez_client.provider_keys import check_provider_keys, missing_credentials
from srez_env.agents.llm_retry import names_missing_credentials

ROOT = Path(__file__).resolve().parents[2]
SREZ = Path(sys.executable).parent / "srez"
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}")
KEY_VARIABLES = ("OPENAI_API_KEY", "SREZ_LLM_API_KEY", "SREZ_LLM_API_BASE")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def one_line(err: str, needle: str) -> str:
    assert err.startswith("srez: error: ") and err.count("\n") == 1, err
    assert needle in err, err
    return err


def finished_runs(results: Path, seeds: int, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Run ids of ``seeds`` finished scripted runs of sre-001, made inline under ``results``."""
    argv = ["eval", "--agent", "scripted", "--tasks", "sre-001", "--seeds", str(seeds)]
    assert main([*argv, "--results", str(results)]) == 0
    capsys.readouterr()
    return sorted(p.name for p in (results / "sre-001" / "none" / "scripted").iterdir())


# ---------------------------------------------------------------- bug 2: attach --plain, finished


def test_attach_plain_prints_a_finished_run_from_its_results_folder(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    (run_id,) = finished_runs(results, 1, capsys)
    assert main(["attach", run_id[:20], "--plain", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"[0] session started: scripted (none) on sre-001, run {run_id}")
    assert "-> declare_root_cause" in out and "session completed" in out
    assert out.endswith("== phase: done\n== grade: reward 1.000, resolved yes, passed yes\n")
    folder = next((results / "sre-001" / "none" / "scripted").iterdir())
    assert main(["attach", str(folder), "--plain"]) == 0  # a results folder, as the viewer takes
    assert capsys.readouterr().out == out


def test_attach_plain_names_what_it_looked_for(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    first, second = finished_runs(results, 2, capsys)
    assert main(["attach", "nope", "--plain", "--results", str(results)]) == 2
    err = one_line(capsys.readouterr().err, f"and no finished run 'nope' under {results}")
    assert err.startswith("srez: error: no local run 'nope'")
    common = os.path.commonprefix([first, second])
    assert main(["attach", common, "--plain", "--results", str(results)]) == 2
    err = one_line(capsys.readouterr().err, "matches 2 finished runs")
    assert first in err and second in err


# ---------------------------------------------------------------- bug 3: export atif by prefix


def test_export_atif_takes_a_unique_prefix_and_lists_an_ambiguous_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    first, second = finished_runs(results, 2, capsys)
    unique = next(first[:n] for n in range(1, len(first)) if not second.startswith(first[:n]))
    assert main(["export", "atif", unique, "--results", str(results)]) == 0
    written = Path(capsys.readouterr().out.strip())
    assert written.name == "trajectory.json" and written.parent.parent.name == first
    common = os.path.commonprefix([first, second])
    assert main(["export", "atif", common, "--results", str(results)]) == 2
    err = one_line(capsys.readouterr().err, f"run prefix {common!r} matches 2 finished runs")
    assert first in err and second in err and "give more of the id" in err


def test_an_ambiguous_prefix_lists_the_first_five_runs_and_counts_the_rest() -> None:
    ids = [f"20250314T10000{i}Z-0123abc{i}" for i in range(8)]
    handles = [SimpleNamespace(run_id=i) for i in ids]

    async def listing(include_exited: bool = False) -> list[SimpleNamespace]:
        return handles

    fake = SimpleNamespace(name="local", list=listing)
    with pytest.raises(AmbiguousRunError) as caught:
        asyncio.run(Backend.get(fake, "2025"))  # type: ignore[arg-type]
    message = str(caught.value)
    assert "matches 8 local runs" in message and ", ".join(ids[:5]) + " and 3 more" in message


# ---------------------------------------------------------------- bug 4: relative agent command


def test_agent_command_paths_resolve_from_the_launch_folder_and_bare_names_stay(
    tmp_path: Path,
) -> None:
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "byo_agent.py").write_text("")
    (tmp_path / "python3").write_text("")  # a file that shadows a program name: still PATH's
    argv = agent_command(
        "cmd:mine", parse_option("python3 examples/byo_agent.py"), {}, cwd=tmp_path
    )
    assert argv == ("python3", str(tmp_path / "examples" / "byo_agent.py"))
    env = {"SREZ_AGENT_CMD": '["python3", "-u", "examples/byo_agent.py"]'}
    argv = agent_command("cmd:mine", None, env, cwd=tmp_path)
    assert argv == ("python3", "-u", str(tmp_path / "examples" / "byo_agent.py"))
    with pytest.raises(UsageError, match="'my_agent.py', which is not a file in"):
        agent_command("cmd:mine", parse_option("python3 my_agent.py"), {}, cwd=tmp_path)
    with pytest.raises(UsageError, match="SREZ_AGENT_CMD names 'gone.py'"):
        agent_command("cmd:mine", None, {"SREZ_AGENT_CMD": '["python3", "gone.py"]'}, cwd=tmp_path)


def _readme_recipe() -> list[str]:
    """The commands of the "Bring your own agent" page's first block, as written."""
    text = (ROOT / "docs" / "agents.md").read_text()
    block = text.split("# Bring your own agent", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_the_documented_bring_your_own_agent_recipe_runs_as_written(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")  # a fresh clone's folder
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # the real interpreter, not a version manager's shim (docs/agents.md: a shim must be named by its
    # real path), as the first python3 on PATH; and srez itself
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    (bin_dir / "srez").symlink_to(SREZ)
    env = {
        **{k: v for k, v in os.environ.items() if k != "SREZ_AGENT_CMD"},
        "SREZ_STATE": str(tmp_path / "state"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    commands = _readme_recipe()
    assert len(commands) == 2 and all("examples/byo_agent.py" in c for c in commands)
    for command in commands:
        done = subprocess.run(
            ["sh", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path,
            timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, (command, done.stdout, done.stderr[-2000:])
        assert "status:   ok, end submit" in done.stdout, done.stdout
    folders = list((tmp_path / "results" / "sre-007" / "none" / "my-agent").iterdir())
    assert len(folders) == 2
    for folder in folders:
        manifest = json.loads((folder / "run.json").read_text())
        assert manifest["agent_cmd"] == ["python3", str(tmp_path / "examples" / "byo_agent.py")]
    assert shlex.split(commands[0])[-1] == "python3 examples/byo_agent.py"


# ---------------------------------------------------------------- bug 5: provider keys


def test_key_check_refuses_a_missing_key_and_an_unknown_provider(no_key: None) -> None:
    with pytest.raises(UsageError, match="its provider key is not set .*OPENAI_API_KEY"):
        check_provider_keys(["openai/gpt-4o-mini"], os.environ)
    with pytest.raises(UsageError, match="litellm knows no provider 'nosuch'"):
        check_provider_keys(["nosuch/model"], os.environ)
    check_provider_keys(["none"], {})  # a baseline: nothing to check
    check_provider_keys(["openai/gpt-4o-mini"], {"SREZ_LLM_API_KEY": "relay-token"})
    assert missing_credentials(["OLLAMA_API_BASE", "GEMINI_API_KEY"]) == ["GEMINI_API_KEY"]


def test_key_check_passes_with_the_key_set(monkeypatch: pytest.MonkeyPatch, no_key: None) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    check_provider_keys(["openai/gpt-4o-mini"], os.environ)  # no UsageError
    # the control: the same check without that one variable refuses, so the key is what passed
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        check_provider_keys(["openai/gpt-4o-mini"], os.environ)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--task", "sre-001", "--agent", "llm", "--model", "openai/gpt-4o-mini"],
        ["eval", "--backend", "local", "--agent", "llm-json", "--model", "openai/gpt-4o-mini",
         "--tasks", "sre-001"],
    ],
)  # fmt: skip
def test_llm_runs_without_a_key_fail_before_they_start(
    tmp_path: Path,
    state: Path,
    no_key: None,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    assert main([*argv, "--results", str(tmp_path / "results")]) == 2
    one_line(capsys.readouterr().err, "'openai/gpt-4o-mini': its provider key is not set")
    assert not (tmp_path / "results").exists() and not (state / "live").exists()


def test_managed_run_checks_the_keys_of_its_llm_targets(
    tmp_path: Path, state: Path, no_key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ["--results", str(tmp_path / "results")]
    create = ["managed", "create", "m", "--baselines", "scripted", "--models", "openai/gpt-4o-mini"]
    assert main([*create, "--tasks", "sre-001", "--backend", "inline", *root]) == 0
    capsys.readouterr()
    assert main(["managed", "run", "m", *root]) == 2
    one_line(capsys.readouterr().err, "its provider key is not set")
    assert main(["managed", "run", "m", "--target", "scripted", *root]) == 0  # no model in it


# litellm's first call imports a provider module that pydantic warns about
@pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")
def test_a_missing_key_reported_as_a_server_error_is_not_retried(no_key: None) -> None:
    """litellm (on the relay) reports a missing OpenAI key as a 500; the agent gives up at once."""
    from srez_client.relay.server import ModelRelay
    from srez_daemon.agent.model_client import HTTPModelClient
    from srez_env.agents.llm import LLMSettings
    from srez_env.agents.llm_retry import RetryPolicy, RetryState, call_with_retries

    relay = ModelRelay("127.0.0.1")
    relay.start_blocking()
    try:
        grant = relay.register("run-a", "openai/gpt-4o-mini", timeout_s=5)
        settings = LLMSettings(
            model="openai/gpt-4o-mini", api_base=grant.base_url, api_key=grant.token
        )
        client = HTTPModelClient(settings)
        waits: list[float] = []
        with pytest.raises(Exception) as caught:
            call_with_retries(
                lambda: client.complete([{"role": "user", "content": "hi"}], None),
                client.classify,
                RetryState(RetryPolicy()),
                sleep=waits.append,
            )
    finally:
        relay.close_blocking()
    gave_up = caught.value
    assert type(gave_up).__name__ == "ProviderGaveUp", gave_up
    assert gave_up.failure.kind == "auth" and not gave_up.failure.retryable  # type: ignore[attr-defined]
    assert gave_up.attempts == 1 and waits == []  # type: ignore[attr-defined]


def test_missing_credentials_wordings() -> None:
    for message in (
        "InternalServerError: OpenAIException - Missing credentials. Please pass an `api_key`",
        "APIConnectionError: Missing Gemini API key. Set the GEMINI_API_KEY",
        "The api_key client option must be set",
        "No API key provided",
    ):
        assert names_missing_credentials(message), message
    assert not names_missing_credentials("InternalServerError: upstream overloaded")


# ---------------------------------------------------------------- bug 6: managed create targets


def _targets(root: Path, name: str) -> list[str]:
    run = json.loads((root / "managed" / name / "run.json").read_text())
    return [t["name"] for t in run["targets"]]


def test_managed_create_with_only_baselines_adds_no_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "results"
    assert (
        main(["managed", "create", "b", "--baselines", "random,scripted", "--results", str(root)])
        == 0
    )
    assert _targets(root, "b") == ["random", "scripted"]
    assert "2 targets (random, scripted)" in capsys.readouterr().out
    assert main(["managed", "create", "m", "--models", "openai/x", "--results", str(root)]) == 0
    assert _targets(root, "m") == ["llm-openai__x"]
    assert main(["managed", "create", "d", "--results", str(root)]) == 0  # neither: the defaults
    assert {"random", "heuristic", "scripted"} <= set(_targets(root, "d"))


# ---------------------------------------------------------------- friction


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert re.fullmatch(r"srez \S+ \(protocol \d+\)\n", capsys.readouterr().out)


def test_schema_without_which_names_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 2
    one_line(capsys.readouterr().err, "srez schema needs which schema to print: one of dialog")


@pytest.mark.parametrize(
    ("argv", "help_of"),
    [
        (["run", "--task", "sre-001", "--agent", "scripted", "--bogus"], "srez run --help"),
        (["runs", "list", "--bogus"], "srez runs list --help"),
        (["managed", "status", "m", "--bogus"], "srez managed status --help"),
        (["tasks", "list", "--bogus"], "srez tasks list --help"),
    ],
)
def test_an_unknown_flag_points_to_the_help_of_its_command(
    capsys: pytest.CaptureFixture[str], argv: list[str], help_of: str
) -> None:
    assert main(argv) == 2
    one_line(capsys.readouterr().err, f"unrecognized arguments: --bogus (see '{help_of}')")


def test_run_help_has_no_any_and_tasks_say_their_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--help"]) == 0
    assert "--any" not in capsys.readouterr().out
    assert main(["runs", "stop", "--help"]) == 0
    assert "--any" in capsys.readouterr().out  # acting on another state's run: it means that
    assert main(["run", "--task", "sre-001", "--agent", "scripted", "--any"]) == 2
    capsys.readouterr()
    for argv in (["eval", "--help"], ["managed", "create", "--help"]):
        assert main(argv) == 0
        assert "'all' (the default)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--agent", "scripted", "--tasks", "sre-001,,sre-002"],
        ["eval", "--agent", "scripted,", "--tasks", "sre-001"],
        ["managed", "create", "m", "--baselines", "scripted", "--tasks", "sre-001,"],
        ["managed", "create", "m", "--baselines", "random,,scripted"],
    ],
)
def test_an_empty_item_of_a_comma_list_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main([*argv, "--results", str(tmp_path / "results")]) == 2
    one_line(capsys.readouterr().err, "has an empty item")
    assert not (tmp_path / "results").exists()


def test_an_empty_replay_file_and_a_replay_without_path_are_refused(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("# nothing but a comment\n\n")
    results = ["--results", str(tmp_path / "results")]
    for argv in (
        ["eval", "--agent", f"replay:{empty}", "--tasks", "sre-001"],
        ["run", "--task", "sre-001", "--agent", f"replay:{empty}"],
    ):
        assert main([*argv, *results]) == 2
        one_line(capsys.readouterr().err, f"{empty}: the replay file holds no action")
    for argv in (
        ["eval", "--agent", "replay:", "--tasks", "sre-001"],
        ["run", "--task", "sre-001", "--agent", "replay:"],
    ):
        assert main([*argv, *results]) == 2
        one_line(capsys.readouterr().err, "replay: needs its file: replay:FILE")
    assert not (tmp_path / "results").exists()


def test_play_takes_values_in_the_order_help_shows_and_prints_json_indented(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = "help\nget_logs payments 5m limit=2\nget_metrics payments\nquit\n"
    out = play(monkeypatch, capsys, "sre-001", lines)
    assert "get_logs service [since] [grep] [limit]" in out
    assert "values in this order, or by name as key=value" in out
    assert "not sent" not in out
    assert "-- showing 2 of" in out  # limit=2 by name after two values in order
    assert '{\n  "metrics": [\n    "rps",' in out  # JSON output, indented
    assert "[step 2, 38 left" in out
