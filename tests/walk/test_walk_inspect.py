"""The README walk: the Inspect AI task, ``inspect eval srez/sre_zero`` against a scripted
Anthropic Messages API on loopback (``ANTHROPIC_BASE_URL``), and ``inspect view``.

The task is found through the ``inspect_ai`` entry point. An environment installed before the
entry point existed (an editable install from an older ``pyproject.toml``; ``make setup``
reinstalls when it changes) does not list it: the walk then installs the entry point as
pyproject declares it, as a distribution of its own on ``PYTHONPATH``, beside the clone's
``client/`` folder, and leaves the environment's install alone."""

from __future__ import annotations

import os
import socket
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from walk_kit import Step, Walker
from walk_steps import INSPECT, expert_moves

pytest.importorskip("inspect_ai")

from fakes.anthropic_server import FakeAnthropic, tool_use  # noqa: E402
from fakes.openai_server import Scripted  # noqa: E402


def _entry_point_env(walker: Walker) -> dict[str, str]:
    if entry_points(group="inspect_ai", name="srez"):
        return {}
    pyproject = tomllib.loads((walker.clone / "pyproject.toml").read_text())
    points = pyproject["project"]["entry-points"]["inspect_ai"]
    info = walker.home / "entry-point" / "srez_entry_point-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: srez-entry-point\nVersion: 0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in points.items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    path = [str(info.parent), str(walker.clone / "client"), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(filter(None, path))}


def _expert(task_id: str, times: int = 1) -> list[Scripted]:
    moves = expert_moves(task_id)
    return [
        tool_use(str(m["tool"]), m["args"]) for m in moves if isinstance(m["args"], dict)
    ] * times


def test_walk_inspect_eval_and_view(walker: Walker) -> None:
    env = _entry_point_env(walker)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        walker.context["view_port"] = str(probe.getsockname()[1])
    with FakeAnthropic() as server:
        env |= {"ANTHROPIC_BASE_URL": server.root_url, "ANTHROPIC_API_KEY": "sk-walk"}
        scripts: list[list[Scripted]] = [
            _expert("sre-001") + _expert("sre-007"),
            _expert("sre-025", 3),
            [tool_use("submit", {})],
            [tool_use("submit", {})],
            [],
        ]
        for (line, steps), script in zip(INSPECT, scripts, strict=True):
            server.push(*script)
            walker.walk(line, [Step(s.command, s.expect, s.status, env=env) for s in steps])
            assert server.pending == 0, line
    assert len(list((walker.clone / "logs").glob("*.eval"))) == 4
    assert Path(walker.clone / "sets" / "s1234").is_dir()
