"""The real program in a real terminal (tmux): ``srez attach`` on a live ``local`` run.

The run's agent is the heuristic expert slowed to one action per 0.4 s (a wrapper run as the
custom agent ``cmd:slow-heuristic``), launched with ``keep`` so its daemon serves after the run.
Its first action waits for the test's go-ahead (:func:`release`, once the viewer shows the run
live): on a loaded machine the terminal program can take longer to start than the whole episode. The test watches
entries arrive live, opens Changes (the reference appears by itself) and Evaluation Result once
the run ends, then detaches with "Detach + Stop" and checks the run stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from srez_client.backends.base import LaunchSpec, RunHandle
from srez_client.backends.local.backend import LocalBackend

pytestmark = [
    pytest.mark.tmux,
]
SREZ = Path(sys.executable).parent / "srez"
SLOW_AGENT = """
import pathlib
import time
import srez_daemon.agent.__main__ as main

build = main.build_agent

import sys
GATE = pathlib.Path(sys.argv[1])  # named on the command line: the sandbox shows it, read-only

class Slow:
    def __init__(self, agent):
        self.agent = agent
    def act(self, observation):
        deadline = time.monotonic() + 60  # a test that never releases still ends
        while not GATE.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.4)
        return self.agent.act(observation)

import os
os.environ["SREZ_AGENT_SPEC"] = "heuristic"  # the daemon says cmd:slow-heuristic
main.build_agent = lambda *a, **k: Slow(build(*a, **k))
main.main()
"""


class Tmux:
    def __init__(self) -> None:
        self.socket = f"srez-test-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return out.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tui")

    async def wait(self, pattern: str, limit_s: float = 15.0) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        while True:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            if loop.time() > deadline:
                raise AssertionError(f"{pattern!r} not on screen:\n{screen}")
            await asyncio.sleep(0.05)


async def launch_slow_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task_id: str
) -> tuple[LocalBackend, RunHandle]:
    """A live local run of the heuristic agent (``cmd:slow-heuristic``), slowed down so a viewer sees entries arrive;
    its state in ``tmp_path/state`` (also ``$SREZ_STATE``), kept serving after it finishes."""
    agent = tmp_path / "slow_agent.py"
    agent.write_text(SLOW_AGENT)
    (tmp_path / "gate").write_text("")
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    backend = LocalBackend(tmp_path / "state")
    spec = LaunchSpec(
        task_id=task_id,
        agent_spec="cmd:slow-heuristic",
        agent_cmd=(sys.executable, str(agent), str(tmp_path / "gate")),
        keep=True,
        results_root=tmp_path / "results",
    )
    return backend, await backend.launch(spec)


def release(tmp_path: Path) -> None:
    """Lets the slow agent start acting (written in place: the sandbox binds the file itself)."""
    (tmp_path / "gate").write_text("go")


@contextlib.asynccontextmanager
async def tui_running(
    command: str, backend: LocalBackend, handle: RunHandle
) -> AsyncIterator[Tmux]:
    """``command`` in a 120x40 tmux session named ``tui``; the server and the run go after."""
    tmux = Tmux()
    try:
        tmux("new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", command)
        yield tmux
    finally:
        tmux("kill-server")
        await backend.remove(handle)


async def detach_and_stop(tmux: Tmux, backend: LocalBackend, handle: RunHandle) -> None:
    """``q``, then "Detach + Stop": returns once the run has stopped."""
    tmux("send-keys", "-t", "tui", "q")
    await tmux.wait(r"Detach \+ Stop")
    tmux("send-keys", "-t", "tui", "Down", "Enter")
    async with asyncio.timeout(10):
        while (await backend.get(handle.run_id)).status == "running":  # noqa: ASYNC110
            await asyncio.sleep(0.1)


async def test_attach_watches_a_live_run_then_detach_and_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    backend, handle = await launch_slow_run(tmp_path, monkeypatch, "sre-001")
    command = f"SREZ_STATE={state} SREZ_TERMINAL=0 {SREZ} attach {handle.run_id} --backend local"
    async with tui_running(command, backend, handle) as tmux:
        first = await tmux.wait(r"Live · entry #\d+")
        release(tmp_path)
        seen = int(re.search(r"Live · entry #(\d+)", first).group(1))  # type: ignore[union-attr]
        later = await tmux.wait(r"Tool call: get_\w+")
        assert "sre-001 (easy)" in later and "agent slow-heuristic" in later
        await tmux.wait(r"Session complete", limit_s=15)
        final = int(re.search(r"entry #(\d+)", tmux.screen()).group(1))  # type: ignore[union-attr]
        assert final > seen  # entries arrived while we watched
        await tmux.wait(r"t Truth")  # the reference buttons appeared with no key pressed
        assert "Similarity: " in tmux.screen()
        tmux("send-keys", "-t", "tui", "3")
        await tmux.wait(r"Reward \d\.\d{3}")
        assert "PASS" in tmux.screen()
        await detach_and_stop(tmux, backend, handle)
        async with asyncio.timeout(10):
            while "tui" in tmux("list-sessions"):  # noqa: ASYNC110
                await asyncio.sleep(0.1)  # the program quit after its last run was detached


async def test_srez_tui_attaches_the_running_run_then_changes_evaluation_detach_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``srez tui`` opens the dashboard with the user's running run attached behind it."""
    state = tmp_path / "state"
    backend, handle = await launch_slow_run(tmp_path, monkeypatch, "sre-002")
    results = tmp_path / "results"
    command = f"SREZ_STATE={state} SREZ_TERMINAL=0 {SREZ} tui --results {results}"
    async with tui_running(command, backend, handle) as tmux:
        await tmux.wait(r"Managed runs")
        await tmux.wait(r"ctrl r runs")
        tmux("send-keys", "-t", "tui", "C-v")  # the run attached at start, behind the dashboard
        first = await tmux.wait(r"Live · entry #\d+")
        release(tmp_path)
        assert "sre-002" in first and "agent slow-heuristic" in first and "Run viewer" in first
        await tmux.wait(r"Session complete", limit_s=20)
        tmux("send-keys", "-t", "tui", "1")
        changes = await tmux.wait(r"Similarity: \d+% of changed lines")
        assert "Changes" in changes
        tmux("send-keys", "-t", "tui", "3")
        await tmux.wait(r"Reward \d\.\d{3}")
        await detach_and_stop(tmux, backend, handle)
        tmux("send-keys", "-t", "tui", "C-r")  # the attach list still has it, as finished
        # The list fills in when its first refresh answers: wait for the run, not the tabs.
        listing = await tmux.wait(r"Finished \(1\)", limit_s=15)
        assert "sre-002" in listing


async def test_a_kept_run_reads_finished_everywhere_once_its_episode_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``keep`` run still serves after its episode: the sidebar says ``running`` then
    ``finished`` and nothing else (it said ``exited``, and flipped), the attach list files it
    under Finished with the same word, and the Evaluation tab says what ``valid`` checks."""
    state = tmp_path / "state"
    backend, handle = await launch_slow_run(tmp_path, monkeypatch, "sre-001")
    command = f"SREZ_STATE={state} SREZ_TERMINAL=0 {SREZ} attach {handle.run_id} --backend local"
    label = re.compile(r"^│ (running|finished|exited)\s+│", re.MULTILINE)
    async with tui_running(command, backend, handle) as tmux:
        await tmux.wait(r"Live · entry #\d+")
        release(tmp_path)
        seen: list[str] = []
        loop = asyncio.get_running_loop()
        settled: float | None = None
        async with asyncio.timeout(40):
            while settled is None or loop.time() < settled:
                screen = tmux.screen()
                if (found := label.search(screen)) and (not seen or seen[-1] != found[1]):
                    seen.append(found[1])
                if settled is None and "Session complete" in screen:
                    settled = loop.time() + 3  # and watch a while after the episode ended
                await asyncio.sleep(0.05)
        assert seen == ["running", "finished"]
        assert (await backend.get(handle.run_id)).status == "running"  # kept: still serving
        tmux("send-keys", "-t", "tui", "3")
        evaluation = await tmux.wait(r"Reward \d\.\d{3}")
        assert "valid (the final config files parse" in evaluation
        assert "well-formed actions" not in evaluation
        tmux("send-keys", "-t", "tui", "C-r")
        for _ in range(3):  # the same word on every refresh of the list
            listing = await tmux.wait(r"Finished \(1\)")
            assert "Exited (0)" in listing and "Running (0)" in listing
            assert re.search(r"sre-001 .* finished +local", listing), listing
            tmux("send-keys", "-t", "tui", "F5")
            await asyncio.sleep(0.3)
