"""The real ``srez tui`` in a real terminal (tmux): create a managed run through the model picker."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from srez_client.backends.registry import BACKEND_NAMES

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

    def styled(self) -> list[str]:
        """The screen's lines with their colour escapes (``capture-pane -e``)."""
        return self.run("capture-pane", "-e", "-p", "-t", "0").splitlines()

    def wait_for(self, needle: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if needle in screen:
                return self.settled(screen, needle)
            time.sleep(0.1)
        pytest.fail(f"{needle!r} never appeared; the screen:\n{self.screen()}")

    def settled(self, screen: str, needle: str, limit_s: float = 2.0) -> str:
        """The screen once two captures 50 ms apart agree: on a loaded machine a capture can
        land mid-redraw, with the first lines of a box drawn and the rest still the old screen.
        A screen that keeps changing (a clock) is returned as last seen after ``limit_s``; one
        that lost ``needle`` meanwhile (a passing message) is not taken."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            time.sleep(0.05)
            again = self.screen()
            if again == screen or needle not in again:
                break
            screen = again
        return screen

    def wait_gone(self, needle: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if needle not in screen:
                return screen
            time.sleep(0.1)
        pytest.fail(f"{needle!r} never went away; the screen:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


def tui_command(tmp_path: Path, **extra_env: str) -> str:
    """``srez tui`` on an ``inline`` backend, with its state and results under ``tmp_path``."""
    (tmp_path / "models.md").write_text(CATALOG)
    env = {
        "SREZ_STATE": str(tmp_path / "state"),
        "SREZ_MODELS_FILE": str(tmp_path / "models.md"),
        "SREZ_TUI_BACKENDS": "inline",
        "TERM": "xterm-256color",
        **extra_env,
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
        # stty creates the file before it writes it: wait for its whole output
        while time.monotonic() < deadline and not (
            after.exists() and after.read_text().endswith("\n")
        ):
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
    for _ in range(len(BACKEND_NAMES) - 1 + 3):  # the other backends, budget, cost cap, Create
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


# -- managed runs as a user drives them (issue 17) ---------------------------------------------


def srez_create(tmp_path: Path, name: str, tasks: str) -> Path:
    """``srez managed create`` of a scripted-baseline queue on ``inline``; the run's folder."""
    results = tmp_path / "results"
    argv = [sys.executable, "-m", "srez_client.cli", "managed", "create", name]
    argv += ["--baselines", "scripted", "--models", "none", "--tasks", tasks]
    argv += ["--backend", "inline", "--results", str(results)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SREZ_")}
    env["SREZ_STATE"] = str(tmp_path / "state")
    subprocess.run(argv, env=env, check=True, capture_output=True, timeout=120)
    return results / "managed" / name


def user_tui(tmp_path: Path, **extra_env: str) -> Tmux:
    """``srez tui`` in a terminal set up as a user's is (flow control on)."""
    return Tmux(f"stty ixon && {tui_command(tmp_path, **extra_env)}")


HOLD = """\
import pathlib, time
from srez_env.baselines import scripted
_folder = pathlib.Path({folder!r})
_policy = scripted.ScriptedAgent.policy
def _held(self, prompt):
    while not (_folder / ("release-" + self.task.id)).exists():
        time.sleep(0.02)
    yield from _policy(self, prompt)
scripted.ScriptedAgent.policy = _held
"""


def held_tasks(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder of release files and the environment under which the scripted agent does not
    act on a task until ``release-<task>`` exists in it: a task stays in flight for as long as
    a test needs (a ``sitecustomize`` module; inline runs the agent in the runner, which the TUI
    starts with its own environment)."""
    site = tmp_path / "hold_site"
    site.mkdir()
    folder = tmp_path / "hold"
    folder.mkdir()
    (site / "sitecustomize.py").write_text(HOLD.format(folder=str(folder)))
    return folder, {
        "PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    }


def release(folder: Path, *tasks: str) -> None:
    for task in tasks:
        (folder / f"release-{task}").touch()


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def zombies_under(pid: int) -> list[str]:
    """``pid STAT`` of every zombie among the descendants of ``pid``."""
    table = subprocess.run(
        ["ps", "-e", "-o", "pid=,ppid=,stat="], capture_output=True, text=True, check=True
    ).stdout
    rows = [line.split() for line in table.splitlines() if len(line.split()) == 3]
    children: dict[str, list[tuple[str, str]]] = {}
    for child, parent, stat in rows:
        children.setdefault(parent, []).append((child, stat))
    found, todo = [], [str(pid)]
    while todo:
        for child, stat in children.get(todo.pop(), []):
            todo.append(child)
            if stat.startswith("Z"):
                found.append(f"{child} {stat}")
    return found


def records(folder: Path) -> dict[str, dict[str, object]]:
    tasks: dict[str, dict[str, object]] = orjson.loads(
        (folder / "targets" / "scripted" / "output.json").read_bytes()
    )["tasks"]
    return tasks


def test_monitor_follows_a_runner_to_its_end_and_reaps_it(tmp_path: Path) -> None:
    """r on a target: the monitor never shows every task completed while the state still names
    a task in flight; when the runner exits the monitor reaps it (no zombie while it is open)
    and says how it ended, in place of the dashboard's "runner started for …"."""
    srez_create(tmp_path, "demo", "sre-001,sre-002,sre-003")
    tmux = user_tui(tmp_path)
    try:
        tmux.wait_for("demo · inline · 3 tasks")
        tmux.keys("Down", "r")
        tmux.wait_for("state     ")
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            seen.append(tmux.screen())
            if "runner of demo/scripted ended (done)" in seen[-1]:
                break
            time.sleep(0.05)
        final = seen[-1]
        assert "runner of demo/scripted ended (done)" in final, final
        mixed = [s for s in seen if "3/3 completed" in s and "running (task" in s]
        assert mixed == [], mixed[0] if mixed else ""
        assert "runner started for" not in final  # the status bar moved on
        assert "state     done" in final and "None" not in final
        pane = int(tmux.run("display", "-p", "-t", "0", "#{pane_pid}").strip())
        assert zombies_under(pane) == []  # reaped by the monitor, still on screen
        assert "demo / scripted" in tmux.screen()
    finally:
        tmux.kill()


def test_monitor_s_stops_the_in_flight_task_and_leaves_the_run_paused_and_resumable(
    tmp_path: Path,
) -> None:
    """On the live monitor ``s`` pauses and stops the in-flight run now, as ``S`` does (and as
    both do on the dashboard, whose summaries moved to ``b``); the help and the footers say so.
    The stop lands while a task is in flight, after another was graded: the run is left paused,
    what was graded is kept, and after ``c`` it resumes without running a completed task again.
    Each task is held in flight until the test releases it, so the stop lands where the test
    says, however loaded the machine."""
    tasks = [f"sre-00{i}" for i in range(1, 7)]
    folder = srez_create(tmp_path, "demo", ",".join(tasks))
    hold, env = held_tasks(tmp_path)
    tmux = user_tui(tmp_path, **env)
    launch_log = tmp_path / "state" / "tui" / "launch-demo-scripted.log"
    try:
        tmux.wait_for("demo · inline · 6 tasks")
        assert "s/S stop now" in tmux.screen() and "b summaries" in tmux.screen()
        tmux.keys("?")
        help_screen = tmux.wait_for("dashboard:")
        assert "s          stop now: pause, then end the runner" in help_screen
        assert "b          rebuild the run's summaries" in help_screen
        tmux.keys("Escape")
        tmux.wait_gone("esc: close")  # the help box is gone
        tmux.keys("Down", "r")  # run the target: the monitor follows it
        tmux.wait_for("p pause after this task · s/S stop now")
        tmux.keys("?")
        help_screen = tmux.wait_for("monitor:")
        monitor_keys = help_screen.split("monitor:")[1].split("global:")[0]
        assert "s          stop now: pause, then end the in-flight run" in monitor_keys
        assert "S          stop now (as s)" in monitor_keys
        assert "p          pause (cooperative)" in monitor_keys
        assert "c          clear the pause flag" in monitor_keys
        assert "q          back to the run list" in monitor_keys
        tmux.keys("Escape")
        tmux.wait_gone("esc: close")  # the help box is gone

        tmux.wait_for("running (task sre-001", timeout=60)
        release(hold, "sre-001")
        wait_until(
            lambda: records(folder).get("sre-001", {}).get("status") == "completed",
            "sre-001 was not recorded as completed",
        )
        tmux.wait_for("running (task sre-002", timeout=60)  # held in flight
        graded = records(folder)["sre-001"]
        tmux.keys("s")
        wait_until(lambda: (folder / "PAUSE").exists(), "s did not pause")  # s pauses, then stops
        wait_until(
            lambda: launch_log.exists() and "stop requested" in launch_log.read_text(),
            "the runner was not asked to stop",
        )
        release(hold, *tasks)  # the held task may now end, before or after its stop's grace
        screen = tmux.wait_for("runner of demo/scripted ended (", timeout=60)
        ending = screen.split("runner of demo/scripted ended (")[1].split(")")[0]
        assert ending == "stopped", screen
        assert "None" not in screen
        stopped = records(folder)
        assert stopped["sre-001"] == graded  # the graded task is kept as it was recorded
        assert stopped["sre-002"]["status"] in ("completed", "interrupted"), stopped["sre-002"]
        if stopped["sre-002"]["status"] == "interrupted":
            assert stopped["sre-002"]["error_kind"] == "stopped", stopped["sre-002"]
        assert set(stopped) == {"sre-001", "sre-002"}  # nothing started after the stop
        assert (folder / "PAUSE").exists()  # left paused

        tmux.keys("q")
        tmux.wait_for("b summaries")
        tmux.keys("c")
        tmux.wait_for("pause flag cleared")
        tmux.keys("r")
        tmux.wait_for("runner of demo/scripted ended (done)", timeout=120)
        final = records(folder)
        assert [r["status"] for r in final.values()] == ["completed"] * len(tasks)
        for task, record in stopped.items():
            if record["status"] == "completed":  # kept, never run again
                assert final[task]["attempt"] == 1 and final[task]["run_id"] == record["run_id"]
    finally:
        release(hold, *tasks)
        tmux.kill()


def test_create_form_focus_is_visible_and_down_past_the_last_field_is_create(
    tmp_path: Path,
) -> None:
    """Down from the last field lands on Create, never on Cancel: Down…Enter creates the run;
    the focused field and button are drawn highlighted (the palette's focus: black on grey)."""
    tmux = user_tui(tmp_path)
    try:
        tmux.wait_for("No managed run yet")
        tmux.keys("n")
        tmux.wait_for("New managed run")
        tmux.text("downrun")
        tmux.wait_for("downrun")
        focused = "\x1b[30m\x1b[47m"
        name_line = next(line for line in tmux.styled() if "Name:" in line)
        assert name_line.startswith(focused), repr(name_line)
        for _ in range(40):
            tmux.keys("Down")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            create = next((ln for ln in tmux.styled() if "< Create" in ln), "")
            if create.startswith(focused):
                break
            time.sleep(0.1)
        assert create.startswith(focused + "< Create"), repr(create)
        assert focused + "< Cancel" not in create
        tmux.keys("Enter")
        tmux.wait_for("downrun · ")  # created: the dashboard lists it
        assert (tmp_path / "results" / "managed" / "downrun" / "run.json").is_file()
    finally:
        tmux.kill()


def test_picker_help_lists_every_key_of_the_picker(tui: tuple[Tmux, Path]) -> None:
    """``?`` in the model picker lists each of its keys with what it does."""
    tmux, _results = tui
    tmux.wait_for("No managed run yet")
    tmux.keys("n")
    tmux.wait_for("New managed run")
    tmux.keys("Down", "Down", "Down", "Down", "Enter")  # Pick models…
    tmux.wait_for("Esc cancel · ? all keys")  # the picker's footer
    tmux.keys("?")
    screen = tmux.wait_for("model picker:")
    section = screen.split("model picker:")[1].split("global:")[0]
    keys = {line.split("│")[1].split()[0] for line in section.splitlines() if "│  " in line}
    assert keys >= {"/", "f", "a", "u", "c", "d", "m", ":", "space", "enter", "left", "right"}
    assert keys >= {"up", "down", "esc"}
