"""The verifiers taskset ``srez-zero``: ``vf-validate`` on the subprocess runtime, the rubric
over every canonical task, and whole rollouts through the real tool server over MCP, offline.

No model provider is involved: verifiers' built-in harnesses fetch their agent program with
``uv`` from the network, so the rollouts here are driven by an MCP client of ours that plays the
scripted oracle (or nothing) against the tool server verifiers launches, with a state channel
that speaks the host's three routes (``GET``/``PUT /state``, ``GET /task``); the rollout is then
scored by the task's own rubric (``Task.score``), as the host scores it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers")
pytest.importorskip("mcp")

import verifiers.v1 as vf  # noqa: E402
from aiohttp import web  # noqa: E402
from mcp.client import Client  # noqa: E402
from pytest_aiohttp import AiohttpServer  # noqa: E402
from rl_kit import leaks  # noqa: E402
from verifiers.v1.mcp.launch import serve_in_runtime  # noqa: E402
from verifiers.v1.runtimes import make_runtime  # noqa: E402

from srez_client.integrations.task_source import resolve  # noqa: E402
from srez_client.integrations.verifiers import (  # noqa: E402
    SrezData,
    SrezState,
    SrezTask,
    SrezTaskset,
    SrezTasksetConfig,
    SrezToolset,
)
from srez_client.integrations.verifiers.scoring import grade_actions  # noqa: E402
from srez_env.actions import TOOLS  # noqa: E402
from srez_env.agents import make_agent  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SECRET = "state-secret"


def _trace(task: SrezTask, state: SrezState) -> Any:
    return vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        state=state,
        agent=vf.AgentInfo(config=vf.AgentConfig(), name="test", trainable=False),
    )


async def _score(task: SrezTask, state: SrezState) -> Any:
    trace = _trace(task, state)
    await task.score(trace)
    return trace


def _pythonpath() -> dict[str, str]:
    paths = [str(ROOT / part) for part in ("env", "daemon", "client")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}


def test_vf_validate_on_the_subprocess_runtime_over_a_generated_set(tmp_path: Path) -> None:
    vf_validate = Path(sys.executable).parent / "vf-validate"
    argv = [str(vf_validate), "srez-zero", "--runtime.type", "subprocess", "--rich", "false"]
    argv += ["--taskset.seed", "7", "--taskset.count", "2", "-o", str(tmp_path)]
    argv += ["--taskset.kinds", '["disk_full", "none"]', "--taskset.difficulties", '["hard"]']
    done = subprocess.run(
        argv, capture_output=True, text=True, env=_pythonpath(), cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (results,) = tmp_path.glob("srez-zero--validate--*/results.jsonl")
    rows = sorted((json.loads(line) for line in results.read_text().splitlines()), key=str)
    assert [r["reason"] for r in rows] == ["valid", "valid"]
    assert all(r["gold"]["valid"] is True for r in rows)
    by_task = {r["name"]: r["noop"]["reward"] for r in rows}
    kinds = {t.id: t.fault_kind for t in (resolve(ref) for ref in _set_refs())}
    assert {kinds[name]: reward for name, reward in by_task.items()} == {
        "disk_full": 0.0,
        "none": 0.6,
    }


def _set_refs() -> list[Any]:
    config = SrezTasksetConfig(
        id="srez-zero", seed=7, count=2, kinds=["disk_full", "none"], difficulties=["hard"]
    )
    return SrezTaskset(config).refs()


async def test_the_rubric_on_every_canonical_task_gold_1_and_untouched_below_1() -> None:
    taskset = SrezTaskset(SrezTasksetConfig(id="srez-zero"))
    tasks = list(taskset)
    assert [t.data.id for t in tasks] == [f"sre-{n:03d}" for n in range(1, 41)]
    for task in tasks:
        srez_task = resolve(task.data.ref)
        assert await task.validate(runtime=None), task.data.id
        untouched = await _score(task, SrezState())
        expected = 0.6 if srez_task.fault_kind == "none" else 0.0
        assert untouched.reward == expected, task.data.id
        assert set(untouched.metrics) == {
            "valid", "func", "safe", "intent", "rca", "resolved", "passed"
        }  # fmt: skip
        grade = grade_actions(srez_task, [])
        assert leaks(srez_task, grade, task.data.model_dump(mode="json")) == [], task.data.id


def test_a_taskset_of_ids_and_stop_on_the_episode_end() -> None:
    taskset = SrezTaskset(SrezTasksetConfig(id="srez-zero", tasks=["sre-007", "sre-039"]))
    assert [t.data.id for t in taskset] == ["sre-007", "sre-039"]
    (stop,) = next(iter(taskset)).hooks("stop")
    assert stop.__name__ == "episode_over"


@pytest.fixture
async def state_channel(aiohttp_server: AiohttpServer) -> dict[str, Any]:
    """The host's side of a rollout's state channel, holding one task's data and state."""
    box: dict[str, Any] = {"state": SrezState(), "data": None}

    def authorised(request: web.Request) -> None:
        if request.headers.get("Authorization") != f"Bearer {SECRET}":
            raise web.HTTPUnauthorized

    async def get_state(request: web.Request) -> web.Response:
        authorised(request)
        return web.Response(body=box["state"].model_dump_json(), content_type="application/json")

    async def put_state(request: web.Request) -> web.Response:
        authorised(request)
        box["state"] = SrezState.model_validate_json(await request.read())
        return web.json_response({"ok": True})

    async def get_task(request: web.Request) -> web.Response:
        authorised(request)
        data: SrezData = box["data"]
        cls = f"{type(data).__module__}:{type(data).__qualname__}"
        return web.json_response({"cls": cls, "task": data.model_dump_json()})

    app = web.Application()
    app.router.add_get("/state", get_state)
    app.router.add_put("/state", put_state)
    app.router.add_get("/task", get_task)
    server = await aiohttp_server(app)
    box["url"] = str(server.make_url("/state"))
    return box


async def test_the_scripted_agent_scores_1_through_the_tool_server_over_mcp(
    state_channel: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole rollout: verifiers launches the tool server, our MCP client plays the oracle,
    the rubric scores the calls the server recorded. (Doing nothing is scored in the rubric
    test above over every task: a rollout without calls leaves the state untouched.)"""
    monkeypatch.setenv("PYTHONPATH", _pythonpath()["PYTHONPATH"])
    (task,) = SrezTaskset(SrezTasksetConfig(id="srez-zero", tasks=["sre-007"]))
    state_channel["data"] = task.data
    runtime = make_runtime(vf.SubprocessConfig(), name="srez-test-rollout")
    await runtime.start()
    try:
        (toolset,) = SrezTask.toolsets(task.config)
        assert isinstance(toolset, SrezToolset)
        port = await serve_in_runtime(
            toolset, runtime, exposed=False, state_url=state_channel["url"], state_secret=SECRET
        )
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == list(TOOLS)
            oracle = make_agent("scripted", resolve(task.data.ref))
            observation: Any = {}
            while not state_channel["state"].done:
                assert not _has_grade(state_channel["state"])
                action = oracle.act(observation)
                result = await client.call_tool(action["tool"], action["args"])
                observation = json.loads(result.content[0].text)
                assert observation["ok"], observation
            after = await client.call_tool("get_alerts", {})
            assert json.loads(after.content[0].text)["error"]["code"] == "ALREADY_SUBMITTED"
    finally:
        await runtime.stop()
    state: SrezState = state_channel["state"]
    trace = await _score(task, state)
    assert state.actions[-2]["tool"] == "submit"  # and the call after the end, refused
    assert trace.reward == 1.0
    assert trace.metrics == dict.fromkeys(trace.metrics, 1.0)
    (stop,) = task.hooks("stop")
    assert await stop(trace) is True


def _has_grade(state: SrezState) -> bool:
    return any(key in state.model_dump() for key in ("grade", "reward", "checks"))


def test_the_plugin_id_resolves_to_the_taskset_and_the_documented_recipe_runs() -> None:
    from verifiers.v1.utils.loaders import taskset_class, taskset_config_type

    assert taskset_class("srez-zero") is SrezTaskset
    assert taskset_config_type("srez-zero") is SrezTasksetConfig
    assert vf.environment_class("srez-zero") is vf.SingleAgentEnv
    page = (ROOT / "docs" / "integrations.md").read_text()
    section = page.split("## verifiers", 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    exec(compile(snippet, "docs/integrations.md:verifiers", "exec"), {})


def test_the_plugin_module_only_re_exports_the_taskset() -> None:
    tree = ast.parse((ROOT / "client" / "srez_zero" / "__init__.py").read_text())
    imports = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imports == ["srez_client.integrations.verifiers"]
    assert [type(n).__name__ for n in tree.body] == ["Expr", "ImportFrom", "Assign"]
