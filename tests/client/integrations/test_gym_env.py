"""The Gymnasium environment ``srez/SREZero-v0``: registration, ``check_env``, the graded reward
on termination, truncation on the step budget, seeding, and no private data before the end."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from rl_kit import leaks  # noqa: E402

from srez_client.integrations.gym import ENV_ID, SREZeroEnv  # noqa: E402
from srez_env.actions import TOOLS  # noqa: E402
from srez_env.agents import make_agent  # noqa: E402
from srez_env.baselines.heuristic import HeuristicAgent  # noqa: E402
from srez_env.grade import grade_episode  # noqa: E402
from srez_env.task import Task  # noqa: E402
from srez_env.tasks import load_tasks  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
PUBLIC_INFO = {"task_id", "run_seed", "prompt", "step", "steps_left", "ok", "tool"}


def _play(env: Any, task: Task, spec: str = "scripted") -> tuple[list[Any], dict[str, Any]]:
    """Plays ``spec`` on ``env`` to the end; returns every step's tuple and the reset info."""
    obs, info = env.reset(seed=5, options={"task_id": task.id})
    agent = make_agent(spec, task) if spec != "heuristic" else HeuristicAgent()
    observation: Any = info["prompt"]
    steps = []
    while True:
        step = env.step(json.dumps(agent.act(observation)))
        steps.append(step)
        observation = json.loads(step[0])
        if step[2] or step[3]:
            return steps, info


def test_make_finds_the_registered_id_and_the_module_form() -> None:
    env = gymnasium.make(ENV_ID, task="sre-007")
    assert isinstance(env.unwrapped, SREZeroEnv)
    assert env.unwrapped.task_ids == ["sre-007"]
    again = gymnasium.make("srez_client.integrations.gym:srez/SREZero-v0", task="sre-001")
    assert again.unwrapped.task_ids == ["sre-001"]


def test_check_env_passes_on_a_task_and_on_a_generated_set() -> None:
    check_env(gymnasium.make(ENV_ID, task="sre-007").unwrapped)
    check_env(gymnasium.make(ENV_ID, task_set={"seed": 7, "count": 3}).unwrapped)


def test_the_scripted_oracle_earns_1_on_termination_and_0_before() -> None:
    task = load_tasks(["sre-007"])[0]
    steps, info = _play(gymnasium.make(ENV_ID, task=task), task)
    assert info["task_id"] == "sre-007" and info["run_seed"] == 5
    assert [s[1] for s in steps[:-1]] == [0.0] * (len(steps) - 1)
    assert all("grade" not in s[4] for s in steps[:-1])
    _, reward, terminated, truncated, last = steps[-1]
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert set(last["grade"]["checks"]) == {"valid", "func", "safe", "intent", "rca"}
    assert last["grade"]["passed"] is True and last["grade"]["end_reason"] == "submit"


def test_the_step_budget_truncates_with_the_grade_as_reward() -> None:
    env = SREZeroEnv("sre-003")
    env.reset(seed=0)
    task = load_tasks(["sre-003"])[0]
    for _ in range(task.max_steps - 1):
        _, reward, terminated, truncated, _ = env.step('{"tool": "get_alerts", "args": {}}')
        assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, info = env.step("not json at all")
    assert (terminated, truncated) == (False, True)
    assert json.loads(obs)["error"]["code"] == "PARSE_ERROR"
    assert info["grade"]["end_reason"] == "step_budget"
    assert reward == info["grade"]["reward"] == 0.0
    with pytest.raises(RuntimeError, match="call reset"):
        env.step('{"tool": "get_alerts", "args": {}}')


def test_reset_seed_is_the_run_seed_and_picks_the_task_reproducibly() -> None:
    env = SREZeroEnv(["sre-001", "sre-002", "sre-003", "sre-004"])
    picks = [env.reset(seed=s)[1]["task_id"] for s in range(12)]
    again = [SREZeroEnv(env.pool).reset(seed=s)[1]["task_id"] for s in range(12)]
    assert picks == again and len(set(picks)) > 1
    assert env.reset(seed=42)[1]["run_seed"] == 42
    env.step('{"tool": "submit", "args": {}}')
    assert grade_episode(env.episode.record()).run_seed == 42  # type: ignore[union-attr]
    assert env.reset(options={"task_id": "sre-004"})[1]["task_id"] == "sre-004"
    with pytest.raises(ValueError, match="not in this environment"):
        env.reset(options={"task_id": "sre-040"})


def test_the_prompt_is_the_observation_and_the_structure_is_in_info() -> None:
    env = SREZeroEnv("sre-007", render_mode="ansi")
    obs, info = env.reset(seed=1)
    assert obs == info["prompt"]["text"] and env.render() == obs
    assert len(info["prompt"]["tools"]) == len(TOOLS)
    obs, *_ = env.step({"tool": "get_status", "args": {"service": "db"}})
    assert json.loads(obs)["tool"] == "get_status" and env.render() == obs


@pytest.mark.parametrize("spec", ["scripted", "heuristic"])
def test_nothing_private_is_shown_before_the_end_on_any_task(spec: str) -> None:
    env = SREZeroEnv()
    for task in load_tasks():
        steps, info = _play(env, task, spec)
        grade = grade_episode(env.episode.record())  # type: ignore[union-attr]
        shown: list[Any] = [info, steps[-1][0]] + [s[0] for s in steps[:-1]]
        shown += [s[4] for s in steps[:-1]]
        assert set(info) | {k for s in steps[:-1] for k in s[4]} <= PUBLIC_INFO, task.id
        assert [leak for item in shown for leak in leaks(task, grade, item)] == [], task.id
    assert leaks(task, grade, grade.model_dump(mode="json")) != []  # the detector can fire
    assert leaks(task, grade, task.model_dump(mode="json")) != []


def test_the_extra_declares_gymnasium_and_the_documented_recipe_runs() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(dep.startswith("gymnasium") for dep in extras["gym"])
    page = (ROOT / "docs" / "integrations.md").read_text()
    section = page.split("## Gymnasium", 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    exec(compile(snippet, "docs/integrations.md:Gymnasium", "exec"), {})
