"""The Inspect AI task, run for real in-process with ``mockllm`` replaying known trajectories:
each sample's grade is the one ``srez eval`` gives the same actions inline (``replay:FILE``), the
five checks and the reward come back as one multi-value score, epochs are run seeds, and the log
is an ordinary Inspect eval log.

Offline: every scripted reply carries its usage, so ``mockllm`` never counts tokens, and the
tokenizer is made unloadable for the whole run (a fetch would fail the test, not hang on the
network).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import re
import subprocess
import sys
import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import EvalLog, read_eval_log  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.tool import ToolChoice, ToolInfo  # noqa: E402
from inspect_ai.util._json import json_schema_dump  # noqa: E402

from fakes.anthropic_server import FakeAnthropic, tool_use  # noqa: E402
from srez_client.backends.inline.host import run_inline  # noqa: E402
from srez_client.integrations.inspect import (  # noqa: E402
    GRADE_KEY,
    SCORE_KEYS,
    SampleEpisode,
    TaskSelection,
    episode_tools,
    inspect_schema,
    sre_zero_task,
)
from srez_env.actions import openai_tools  # noqa: E402
from srez_env.agents import make_agent  # noqa: E402
from srez_env.env import SREEnv  # noqa: E402
from srez_env.grade import Grade  # noqa: E402
from srez_env.tasks import load_tasks  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
USAGE = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
# Inspect's own noise, not ours: it builds its retry policy with a tenacity argument newer tenacity
# deprecates, and its per-sample hook emitter leaves an anyio receive stream unclosed.
pytestmark = [
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Unclosed <MemoryObjectReceiveStream:ResourceWarning"),
]

Action = dict[str, Any] | str
"""A tool call ``{"tool", "args"}``, or the text of a reply with no tool call."""


def _expert(task_id: str) -> list[Action]:
    task = load_tasks([task_id])[0]
    env = SREEnv(task)
    observation: Any = env.reset()
    oracle = make_agent("scripted", task)
    actions: list[Action] = []
    while not env.done:
        action = dict(oracle.act(observation))
        actions.append(action)
        observation = env.step(action).observation
    return actions


def _call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args}


# One trajectory per task: the oracle's, a wrong one (an unneeded restart, arguments the schema
# refuses, an unknown tool, a wrong root cause), doing nothing, and a reply with no tool call.
TRAJECTORIES: dict[str, list[Action]] = {
    "sre-007": _expert("sre-007"),
    "sre-001": [
        _call("get_alerts"),
        _call("get_logs", service="nowhere"),
        _call("reboot_everything"),
        _call("restart", service="cache"),
        _call("declare_root_cause", service="cache", fault="memory_leak"),
        _call("submit", summary="restarted the cache"),
    ],
    "sre-025": [_call("submit")],
    "sre-002": ["I think the database is fine.", _call("submit")],
}
REPLAYABLE = ("sre-007", "sre-001", "sre-025")
"""Trajectories ``replay:FILE`` can write (a reply with no call is not a replay line)."""
EPOCHS = 2


def _scripted_reply(
    messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice, config: GenerateConfig
) -> ModelOutput:
    prompt = str(messages[1].content)
    # the prompt names no task (docs/environment.md §6.17): the scripted model knows its task
    # by the page, as a person on call would
    found = [task.id for task in load_tasks(list(TRAJECTORIES)) if task.incident.brief in prompt]
    assert len(found) == 1, prompt[:200]
    turn = sum(isinstance(m, ChatMessageAssistant) for m in messages)
    action = TRAJECTORIES[found[0]][turn]
    if isinstance(action, str):
        output = ModelOutput.from_content("mockllm", action)
    else:
        output = ModelOutput.for_tool_call("mockllm", action["tool"], action["args"])
    output.usage = USAGE  # with usage given, mockllm counts no tokens (no tokenizer is fetched)
    return output


@contextlib.contextmanager
def _quiet_inspect() -> Iterator[None]:
    """Runs an in-process eval with Inspect's own noise filtered (see ``pytestmark``) and without
    cyclic garbage collection: Inspect imports large pydantic modules lazily during its first
    eval, and pydantic reads their field docstrings with ``ast.parse``; a collection at that
    moment may run another test's leftover ``__del__`` (an unclosed socket's ResourceWarning), whose
    traceback formatting calls ``ast.parse`` again, which CPython 3.11.7 reports as ``SystemError:
    AST constructor recursion depth mismatch``. Reference counting still frees everything.

    An event loop that earlier code left current on this thread and never closed (litellm's sync
    logging makes one) is closed first: Inspect's run replaces it, and it would otherwise be
    collected, warning about its unclosed self-pipe, in whichever test comes next."""
    try:
        leftover = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # no current loop: nothing left over
        leftover = None
    if leftover is not None and not leftover.is_running() and not leftover.is_closed():
        leftover.close()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The 'initial' parameter", DeprecationWarning)
        warnings.filterwarnings("ignore", "Unclosed <MemoryObjectReceiveStream", ResourceWarning)
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if enabled:
                gc.enable()


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    import tiktoken

    log_dir = tmp_path_factory.mktemp("inspect-logs")
    with pytest.MonkeyPatch.context() as patch:

        def no_tokenizer(*args: object, **kwargs: object) -> None:
            msg = "the replay counted tokens: a tokenizer would be fetched"
            raise AssertionError(msg)

        patch.setattr(tiktoken, "get_encoding", no_tokenizer)
        model = get_model("mockllm/model", custom_outputs=_scripted_reply)
        with _quiet_inspect():
            logs = inspect_eval(
                sre_zero_task(tasks=",".join(TRAJECTORIES)),
                model=model,
                epochs=EPOCHS,
                log_dir=str(log_dir),
                display="none",
            )
    assert len(logs) == 1
    return logs[0]


def _grades(log: EvalLog) -> dict[tuple[str, int], Grade]:
    assert log.samples is not None
    return {(str(s.id), s.epoch): Grade.model_validate(s.store[GRADE_KEY]) for s in log.samples}


def _inline_grade(task_id: str, run_seed: int, tmp_path: Path) -> Grade:
    tmp_path.mkdir()
    replay = tmp_path / f"{task_id}.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in TRAJECTORIES[task_id]))
    task = load_tasks([task_id])[0]
    return run_inline(task, f"replay:{replay}", run_seed, tmp_path / "results").grade


def _comparable(grade: Grade) -> dict[str, Any]:
    # who played is the only difference: agent "inspect" and the Inspect model vs replay / none
    return grade.model_dump(mode="json", exclude={"agent", "model"})


def test_inspect_eval_grades_equal_srez_eval_for_the_same_actions(
    eval_log: EvalLog, tmp_path: Path
) -> None:
    assert eval_log.status == "success", eval_log.error
    grades = _grades(eval_log)
    assert sorted(grades) == sorted((t, e) for t in TRAJECTORIES for e in range(1, EPOCHS + 1))
    for task_id in REPLAYABLE:
        for epoch in range(1, EPOCHS + 1):
            ours = grades[task_id, epoch]
            assert (ours.agent, ours.model) == ("inspect", "mockllm/model")
            inline = _inline_grade(task_id, epoch - 1, tmp_path / f"{task_id}-{epoch}")
            assert _comparable(ours) == _comparable(inline), (task_id, epoch)
    assert grades["sre-007", 1].reward.total == 1.0
    assert grades["sre-007", 1].passed
    wrong, idle = grades["sre-001", 1], grades["sre-025", 1]
    assert not wrong.passed and not wrong.checks["rca"].passed
    assert wrong.metrics.invalid_actions == 2  # both refused by Inspect, both counted
    assert wrong.steps == len(TRAJECTORIES["sre-001"])
    assert idle.steps == 1 and not idle.resolved
    assert wrong.reward.components["minimal"] < idle.reward.components["minimal"]  # the restart


def test_a_reply_without_a_tool_call_costs_a_step(eval_log: EvalLog) -> None:
    grade = _grades(eval_log)["sre-002", 1]
    assert grade.steps == 2
    assert grade.metrics.invalid_actions == 1
    assert grade.metrics.end_reason == "submit"


def test_epochs_are_run_seeds(eval_log: EvalLog) -> None:
    for (_, epoch), grade in _grades(eval_log).items():
        assert grade.run_seed == epoch - 1


def test_the_score_holds_the_reward_and_the_five_checks_with_their_reasons(
    eval_log: EvalLog,
) -> None:
    assert eval_log.samples is not None
    for sample in eval_log.samples:
        grade = Grade.model_validate(sample.store[GRADE_KEY])
        assert sample.scores is not None
        score = sample.scores["srez_scorer"]
        assert isinstance(score.value, dict)
        assert tuple(score.value) == SCORE_KEYS
        assert score.value["reward"] == grade.reward.total
        for check in ("valid", "func", "safe", "intent", "rca"):
            assert score.value[check] == float(grade.checks[check].passed)
            for reason in grade.checks[check].reasons:
                assert reason in (score.explanation or "")
    failing = next(s for s in eval_log.samples if s.id == "sre-001")
    assert failing.scores is not None
    assert "rca: FAIL" in (failing.scores["srez_scorer"].explanation or "")
    assert failing.scores["srez_scorer"].answer == "cache/memory_leak"


def test_the_log_is_an_ordinary_eval_log_with_a_metric_per_value(eval_log: EvalLog) -> None:
    read = read_eval_log(eval_log.location)
    assert read.status == "success"
    assert read.results is not None
    metrics = {score.name: score.metrics for score in read.results.scores}
    assert set(metrics) == set(SCORE_KEYS)
    rewards = [g.reward.total for g in _grades(eval_log).values()]
    assert metrics["reward"]["mean"].value == pytest.approx(sum(rewards) / len(rewards))


# ---------------------------------------------------------------------- tools and selection
def test_the_tools_carry_the_projects_schemas() -> None:
    episode = SampleEpisode(load_tasks(["sre-007"])[0], run_seed=0, model="m")
    tools = episode_tools(episode)
    specs = [spec["function"] for spec in openai_tools()]
    assert [t.name for t in tools] == [f["name"] for f in specs]
    for tool, function in zip(tools, specs, strict=True):
        assert tool.description == function["description"]
        dumped = json_schema_dump(tool.parameters)
        expected = inspect_schema(function["parameters"])
        expected.setdefault("required", [])
        assert json.dumps(dumped, sort_keys=True) == json.dumps(expected, sort_keys=True)
        assert tool.parallel is False
    declare = next(f for f in specs if f["name"] == "declare_root_cause")
    # the one rewrite that is not a plain copy: const "none" becomes the one-value enum
    service = inspect_schema(declare["parameters"])["properties"]["service"]
    assert {"enum": ["none"], "type": "string"} in service["anyOf"]


def test_selection_by_ids_difficulty_folder_and_generated_set(tmp_path: Path) -> None:
    assert [t.id for t in TaskSelection.of(tasks="sre-007,sre-001").load()] == [
        "sre-007",
        "sre-001",
    ]
    hard = TaskSelection.of(difficulty="hard").load()
    assert hard and {t.difficulty for t in hard} == {"hard"}
    generated = TaskSelection.of(seed=7, count=3).load()
    assert len(generated) == 3 and all(
        re.fullmatch(r"sre-[0-9a-f]{6}-00\d", t.id) for t in generated
    )
    source = ROOT / "env" / "srez_env" / "tasks" / "sre-007.yaml"
    (tmp_path / "sre-007.yaml").write_text(source.read_text())
    assert [t.id for t in TaskSelection.of(tasks_dir=tmp_path).load()] == ["sre-007"]
    for bad, message in [
        ({"tasks": "sre-001,,sre-002"}, "empty item"),
        ({"tasks": "sre-999"}, "unknown task id 'sre-999'"),
        ({"difficulty": "extreme"}, "not one of easy"),
        ({"seed": 1, "tasks_dir": tmp_path}, "not both"),
        ({"count": 3}, "give its seed"),
        ({"tasks_dir": tmp_path / "empty"}, "no task files"),
    ]:
        with pytest.raises(ValueError, match=message):
            TaskSelection.of(**bad).load()


def _no_stray_egg_info() -> None:
    # An egg-info beside the sources shadows the install's dist-info for any interpreter with the
    # checkout on its path, and Inspect then names the task plain sre_zero.
    if (ROOT / "srez.egg-info").exists():
        pytest.fail(
            "srez.egg-info in the checkout shadows the installed metadata (make setup removes it)"
        )


def _entry_point_path(tmp_path: Path) -> str:
    """A ``PYTHONPATH`` on which the entry point as pyproject declares it is installed, as a
    distribution of its own (the shared install is not re-pointed), before this one's path."""
    _no_stray_egg_info()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    points = pyproject["project"]["entry-points"]["inspect_ai"]
    info = tmp_path / "srez_entry_point-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: srez-entry-point\nVersion: 0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in points.items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    return os.pathsep.join([str(tmp_path), *sys.path])


def test_inspect_finds_srez_sre_zero_through_the_entry_point(tmp_path: Path) -> None:
    # Inspect's own lookup of the name ``inspect eval srez/sre_zero`` takes, in a fresh
    # interpreter: it must load the module through the entry point and find the task.
    probe = (
        "import sys\n"
        "from inspect_ai._util.registry import registry_info, registry_lookup\n"
        "assert 'srez._inspect' not in sys.modules\n"
        "task = registry_lookup('task', 'srez/sre_zero')\n"
        "print(registry_info(task).name, sys.modules['srez._inspect'].__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": _entry_point_path(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    name, module_file = done.stdout.split()
    assert name == "srez/sre_zero"
    assert Path(module_file) == ROOT / "client" / "srez" / "_inspect.py"


def test_inspect_eval_on_the_command_line_against_a_provider(tmp_path: Path) -> None:
    # ``inspect eval srez/sre_zero`` as typed, with a real provider client (Anthropic's SDK)
    # talking to a scripted Messages API on loopback: the model receives the project's schemas,
    # and the expert's actions get the grade ``srez eval`` gives them.
    logs = tmp_path / "logs"
    command = [sys.executable, "-m", "inspect_ai", "eval", "srez/sre_zero"]
    command += ["--model", "anthropic/claude-sonnet-4-5", "-M", "streaming=false"]
    command += ["--max-tokens", "4096", "-T", "tasks=sre-007", "--epochs", "2"]
    command += ["--max-samples", "1"]  # one sample at a time: the script is answered in order
    command += ["--log-dir", str(logs), "--display", "none"]
    with FakeAnthropic() as server:
        replies = [
            tool_use(a["tool"], a["args"]) for a in TRAJECTORIES["sre-007"] if isinstance(a, dict)
        ]
        server.push(*replies, *replies)
        done = subprocess.run(
            command,
            env={
                **os.environ,
                "PYTHONPATH": _entry_point_path(tmp_path),
                "ANTHROPIC_BASE_URL": server.root_url,
                "ANTHROPIC_API_KEY": "sk-fake",
            },
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        requests = list(server.requests)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    (path,) = logs.glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.task == "srez/sre_zero"
    for (task_id, epoch), grade in _grades(log).items():
        inline = _inline_grade(task_id, epoch - 1, tmp_path / f"inline-{epoch}")
        assert _comparable(grade) == _comparable(inline)
        assert grade.model == "anthropic/claude-sonnet-4-5" and grade.reward.total == 1.0
    sent = {tool["name"]: tool for tool in requests[0].tools or []}
    for spec in openai_tools():
        function = spec["function"]
        expected = inspect_schema(function["parameters"])
        expected.setdefault("required", [])
        assert sent[function["name"]]["description"] == function["description"]
        got = sent[function["name"]]["input_schema"]
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_the_entry_point_registers_srez_sre_zero() -> None:
    _no_stray_egg_info()
    from inspect_ai._util.registry import registry_info, registry_lookup

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module = pyproject["project"]["entry-points"]["inspect_ai"]["srez"]
    registry = __import__(module, fromlist=["sre_zero"])
    assert registry_info(registry.sre_zero).name == "srez/sre_zero"
    assert registry_lookup("task", "srez/sre_zero") is registry.sre_zero
    task = registry.sre_zero(tasks="sre-007")
    assert [s.id for s in task.dataset] == ["sre-007"]


def test_an_inspect_limit_ends_the_episode_and_the_sample_is_still_graded(tmp_path: Path) -> None:
    model = get_model("mockllm/model", custom_outputs=_scripted_reply)
    with _quiet_inspect():
        # system + prompt + 2 assistant/tool pairs: the third reply would exceed the limit
        (log,) = inspect_eval(
            sre_zero_task(tasks="sre-007"),
            model=model,
            message_limit=6,
            log_dir=str(tmp_path),
            display="none",
        )
    assert log.status == "success", log.error
    assert log.samples is not None
    (sample,) = log.samples
    grade = Grade.model_validate(sample.store[GRADE_KEY])
    assert grade.metrics.end_reason == "agent_exit"
    assert grade.steps == 2 and not grade.resolved
    assert sample.scores is not None
    assert sample.scores["srez_scorer"].value == _score_value(grade)


def _score_value(grade: Grade) -> dict[str, float]:
    checks = {name: float(grade.checks[name].passed) for name in ("valid", "func", "safe")}
    checks |= {name: float(grade.checks[name].passed) for name in ("intent", "rca")}
    return {
        "reward": grade.reward.total,
        **checks,
        "resolved": float(grade.resolved),
        "passed": float(grade.passed),
    }
