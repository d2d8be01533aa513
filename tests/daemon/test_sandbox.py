"""The agent's bubblewrap sandbox (:mod:`srez_daemon.sandbox`): its command line, the settings that
ask for it, and killing it (every process inside dies, ``setsid`` + double-fork escapees too)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from srez_daemon.errors import SettingsError
from srez_daemon.sandbox import SCRATCH, SOCKET, Sandbox, build_sandbox, task_secret_paths
from srez_daemon.settings import DaemonSettings
from srez_daemon.supervisor import AgentProcess

BWRAP = Path("/usr/bin/bwrap")


def _pairs(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == option]


def test_sandbox_argv_namespaces_masks_and_network(tmp_path: Path) -> None:
    code = tmp_path / "code"
    (code / "srez_env" / "tasks").mkdir(parents=True)
    (code / "state").mkdir()
    secret_file = code / "token"
    secret_file.write_text("t")
    script = tmp_path / "agent.py"
    script.write_text("")
    hidden_script = code / "state" / "x.py"
    hidden_script.write_text("")
    box = Sandbox(
        bwrap=BWRAP,
        socket=tmp_path / "agent.sock",
        read_only=(code, script, hidden_script, code / "srez_env", Path("/")),
        hidden=(code / "srez_env" / "tasks", code / "state", secret_file, tmp_path / "elsewhere"),
    )
    argv = box.argv(["python3", "agent.py"])
    head = argv[: argv.index("--hostname")]
    assert head == [str(BWRAP), "--unshare-all", "--unshare-user", "--disable-userns"] + [
        "--cap-drop", "ALL", "--die-with-parent", "--new-session"
    ]  # fmt: skip
    assert _pairs(argv, "--ro-bind").count(str(code)) == 1
    assert str(script) in _pairs(argv, "--ro-bind")
    assert str(hidden_script) not in argv  # inside a hidden folder: never bound
    assert str(code / "srez_env") not in _pairs(argv, "--ro-bind")  # inside one already shown
    assert "/" not in _pairs(argv, "--ro-bind")
    masks = _pairs(argv, "--tmpfs")
    assert str(code / "srez_env" / "tasks") in masks and str(code / "state") in masks
    assert _pairs(argv, "--remount-ro") == [str(code / "srez_env" / "tasks"), str(code / "state")]
    assert argv[argv.index("/dev/null") + 1] == str(secret_file)
    assert str(tmp_path / "elsewhere") not in argv  # not under anything shown: nothing to hide
    assert masks.index(str(SCRATCH)) < masks.index(str(code / "state"))
    assert argv[argv.index("--bind") + 1 : argv.index("--bind") + 3] == [
        str(tmp_path / "agent.sock"), str(SOCKET)
    ]  # fmt: skip
    assert argv[-3:] == ["--", "python3", "agent.py"] and "--share-net" not in argv
    with_model = Sandbox(bwrap=BWRAP, socket=tmp_path / "s", network=True).argv(["x"])
    assert "--share-net" in with_model


def test_sandbox_environment_points_at_the_socket_and_scratch(tmp_path: Path) -> None:
    env = Sandbox(bwrap=BWRAP, socket=tmp_path / "s").environment(
        {"HOME": "/root", "TMPDIR": "/var/tmp", "SREZ_AGENT_SOCKET": "/x", "PATH": "/usr/bin"}
    )
    assert env == {
        "HOME": str(SCRATCH), "TMPDIR": str(SCRATCH), "PWD": str(SCRATCH),
        "SREZ_AGENT_SOCKET": str(SOCKET), "PATH": "/usr/bin",
    }  # fmt: skip


def test_build_sandbox_hides_task_files_run_and_launcher_paths(tmp_path: Path) -> None:
    box = build_sandbox(
        BWRAP,
        socket=tmp_path / "live" / "agent.sock",
        command=[sys.executable, "-m", "srez_daemon.agent"],
        agent_spec=f"replay:{tmp_path / 'moves.jsonl'}",
        model="none",
        environ=os.environ,
        hide=(tmp_path / "state",),
    )
    import srez_env

    tasks = Path(srez_env.__file__).parent / "tasks"
    assert tasks in box.hidden and tasks in task_secret_paths()
    assert Path(srez_env.__file__).parent / "generator" in box.hidden
    assert tmp_path / "state" in box.hidden and tmp_path / "live" in box.hidden
    assert tmp_path / "moves.jsonl" in box.read_only and not box.network
    assert Path(srez_env.__file__).parent in box.read_only


def test_settings_sandbox(tmp_path: Path) -> None:
    base = {"SREZ_RUN_DIR": str(tmp_path), "SREZ_TOKEN_FILE": str(tmp_path / "t")}
    assert DaemonSettings.from_env(base).bwrap is None
    assert DaemonSettings.from_env({**base, "SREZ_SANDBOX": "none"}).bwrap is None
    with pytest.raises(SettingsError, match="bubblewrap or none"):
        DaemonSettings.from_env({**base, "SREZ_SANDBOX": "yes"})
    with pytest.raises(SettingsError, match="apt-get install bubblewrap"):
        DaemonSettings.from_env({**base, "SREZ_SANDBOX": "bubblewrap", "SREZ_BWRAP": "/no/bwrap"})
    with pytest.raises(SettingsError, match="no bwrap on PATH"):
        DaemonSettings.from_env({**base, "SREZ_SANDBOX": "bubblewrap", "PATH": "/nonexistent"})
    hide = os.pathsep.join(["/a", "/b"])
    settings = DaemonSettings.from_env(
        {
            **base,
            "SREZ_SANDBOX": "bubblewrap",
            "SREZ_BWRAP": "/usr/bin/env",
            "SREZ_SANDBOX_HIDE": hide,
        }
    )
    assert settings.bwrap == Path("/usr/bin/env")
    assert settings.sandbox_hide == (Path("/a"), Path("/b"))


ESCAPE = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.wait()
open(sys.argv[1], "w").close()
if sys.argv[2] == "stay":
    time.sleep(120)
"""


def _marked(mark: str) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(mark in part for part in proc.info.get("cmdline") or []):
            out.append(proc)
    return out


async def _until(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise TimeoutError


async def _escapee_run(tmp_path: Path, stay: str) -> tuple[AgentProcess, str]:
    (tmp_path / "live").mkdir()
    sock = tmp_path / "live" / "agent.sock"  # its folder is hidden from the agent
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    listener.close()
    mark = f"escape-{uuid.uuid4().hex}"
    script = tmp_path / "escape.py"
    script.write_text(ESCAPE)
    command = [sys.executable, str(script), "/tmp/started", stay, mark]  # noqa: S108
    box = build_sandbox(
        BWRAP, socket=sock, command=command, agent_spec="x", model="none", environ=os.environ
    )
    agent = AgentProcess(command, dict(os.environ), tmp_path / "agent.log", sandbox=box)
    await agent.start(tmp_path)
    return agent, mark


async def test_kill_ends_every_process_in_the_sandbox(tmp_path: Path, bwrap: None) -> None:
    agent, mark = await _escapee_run(tmp_path, "stay")
    try:
        # bwrap, its init, the agent, the escaped grandchild
        await _until(lambda: len(_marked(mark)) == 4)
        await agent.kill()
        assert _marked(mark) == []
    finally:
        for proc in _marked(mark):
            proc.kill()


async def test_the_agents_exit_ends_its_escapees(tmp_path: Path, bwrap: None) -> None:
    agent, mark = await _escapee_run(tmp_path, "go")
    try:
        async with asyncio.timeout(20):
            code = await agent.wait()
        await _until(lambda: not _marked(mark))
        assert code == 0, (tmp_path / "agent.log").read_text()
    finally:
        for proc in _marked(mark):
            proc.kill()
