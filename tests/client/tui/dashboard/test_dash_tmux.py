"""The real ``srez tui`` in a real terminal (tmux): create a managed run through the model picker."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

pytestmark = [
    pytest.mark.tmux,
]

CATALOG = """| slug | provider | default | note |
|---|---|---|---|
| openai/m-one | OpenAI | yes | first |
| google/g-one | Google | | other |
| openai/m-two | OpenAI | | second |
| openai/m-three | OpenAI | | third |
| openai/m-four | OpenAI | | fourth |
"""


class Tmux:
    """One private tmux server running one command."""

    def __init__(self, command: str) -> None:
        self.socket = f"srez-dash-{uuid.uuid4().hex[:12]}"
        self.run("new-session", "-d", "-x", "120", "-y", "40", command)

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "0", *keys)

    def text(self, text: str) -> None:
        self.run("send-keys", "-t", "0", "-l", text)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "0")

    def wait_for(self, needle: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if needle in screen:
                return screen
            time.sleep(0.1)
        pytest.fail(f"{needle!r} never appeared; the screen:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


def tui_command(tmp_path: Path) -> str:
    """``srez tui`` on an ``inline`` backend, with its state and results under ``tmp_path``."""
    (tmp_path / "models.md").write_text(CATALOG)
    env = {
        "SREZ_STATE": str(tmp_path / "state"),
        "SREZ_MODELS_FILE": str(tmp_path / "models.md"),
        "SREZ_TUI_BACKENDS": "inline",
        "TERM": "xterm-256color",
    }
    argv = [sys.executable, "-m", "srez_client.cli", "tui", "--results", str(tmp_path / "results")]
    command = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command += " " + shlex.join(argv) + f" 2>{shlex.quote(str(tmp_path / 'stderr'))}"
    return f"cd {shlex.quote(str(Path.cwd()))} && {command}"


@pytest.fixture
def tui(tmp_path: Path) -> Iterator[tuple[Tmux, Path]]:
    tmux = Tmux(tui_command(tmp_path))
    try:
        yield tmux, tmp_path / "results"
    finally:
        tmux.kill()


def test_ctrl_q_quits_with_flow_control_on_and_the_tty_is_restored(tmp_path: Path) -> None:
    """A user's terminal has ``ixon`` on, which turns ctrl q into "resume output" in the tty
    driver: the program must still get the key, and leave ``ixon`` as it found it."""
    after = tmp_path / "stty-after"
    check = f"stty -a > {shlex.quote(str(after))}"
    tmux = Tmux(f"stty ixon && {tui_command(tmp_path)}; {check}; sleep 30")
    try:
        tmux.wait_for("No managed run yet")
        tmux.keys("C-q")
        deadline = time.monotonic() + 10
        while not after.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert after.exists(), f"ctrl q did not quit; the screen:\n{tmux.screen()}"
        modes = after.read_text().split()
        assert "ixon" in modes and "-ixon" not in modes
    finally:
        tmux.kill()


def test_tui_creates_a_managed_run_with_models_from_the_picker(tui: tuple[Tmux, Path]) -> None:
    tmux, results = tui
    tmux.wait_for("No managed run yet")
    tmux.keys("n")
    tmux.wait_for("New managed run")
    tmux.text("tmuxrun")
    tmux.keys("Down", "Down", "Down", "Space", "Down", "Enter")  # scripted; Pick models…
    tmux.wait_for("Pick models")
    tmux.keys("c", "/")
    tmux.text("openai")
    tmux.keys("Enter")
    tmux.wait_for("filter 'openai': 4 shown")
    tmux.keys("Down", "Down", "Down", "Space")  # toggle row 4 (m-four)
    tmux.wait_for("[x] 4. openai/m-four")
    tmux.keys(":")
    tmux.text("select 1-3")
    tmux.keys("Enter")
    screen = tmux.wait_for("selected 3 row(s)")
    assert "[x] 1. openai/m-one" in screen and "[x] 3. openai/m-three" in screen
    tmux.keys("Enter")
    tmux.wait_for("4: openai/m-one, openai/m-two, openai/m-three, openai/m-four")
    tmux.keys("Down")  # tasks
    tmux.text("sre-001,sre-002")
    tmux.keys("Down", "Space")  # backend inline
    for _ in range(5):  # local, docker, budget, cost cap, Create
        tmux.keys("Tab")
    tmux.keys("Enter")
    tmux.wait_for("tmuxrun · inline · 2 tasks · no budget")
    run = orjson.loads((results / "managed" / "tmuxrun" / "run.json").read_bytes())
    assert [(t["agent"], t["model"]) for t in run["targets"]] == [
        ("scripted", "none"),
        ("llm", "openai/m-one"),
        ("llm", "openai/m-two"),
        ("llm", "openai/m-three"),
        ("llm", "openai/m-four"),
    ]
    assert run["tasks"] == ["sre-001", "sre-002"]
