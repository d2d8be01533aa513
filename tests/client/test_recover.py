"""No run is lost: a daemon killed with ``kill -9``, a killed client, Ctrl-C in ``srez eval``.

Through real processes: the installed ``srez`` script, real daemons and a real agent process
(``SREZ_AGENT_CMD``: a small agent that makes a few calls, then sleeps, so a run can be caught in
its agent phase). ``sitecustomize`` hooks, put on the ``PYTHONPATH`` of one launch only, kill a
daemon at the exact moment it starts grading, or slow the inline grader down so a Ctrl-C lands
inside a run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from backend_contract import spec_for

from srez_client.backends.inline.host import run_inline
from srez_client.backends.local.backend import LocalBackend
from srez_client.backends.local.files import LocalRecord
from srez_client.backends.process import is_alive, start_time
from srez_env.tasks import load_tasks

SREZ = Path(sys.executable).parent / "srez"

AGENT = """
import http.client, json, os, socket, sys, time

class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.unix_path = path
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.unix_path)

CALLS = [
    ("get_alerts", {}),
    ("get_status", {"service": "db"}),
    ("restart", {"service": "cache"}),
    ("get_status", {"service": "cache"}),
    ("get_logs", {"service": "gateway"}),
]
calls, sleep_s = int(sys.argv[1]), float(sys.argv[2])
for tool, args in CALLS[:calls]:
    conn = Unix(os.environ["SREZ_AGENT_SOCKET"])
    conn.request("POST", f"/tools/{tool}", json.dumps(args), {"Content-Type": "application/json"})
    assert conn.getresponse().status == 200
    conn.close()
time.sleep(sleep_s)
"""

KILL_AT_GRADING = """
import os
if os.environ.get("SREZ_RUN_DIR") and os.environ.get("SREZ_AGENT_SOCKET"):  # the daemon only
    import signal
    from srez_daemon.record import episode

    def _die(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    episode.Episode.grade = _die
"""

KILL_BEFORE_EPISODE = """
import os
if os.environ.get("SREZ_RUN_DIR") and os.environ.get("SREZ_AGENT_SOCKET"):  # the daemon only
    import signal
    from srez_daemon.record import episode

    def _die(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    episode.Episode.__init__ = _die
"""

SLOW_GRADER = """
import os
if os.environ.get("SREZ_TEST_SLOW_GRADE"):
    import time
    from srez_env import grade

    _grade = grade.grade_episode

    def _slow(record):
        time.sleep(float(os.environ["SREZ_TEST_SLOW_GRADE"]))
        return _grade(record)

    grade.grade_episode = _slow  # before the harness imports it by name
"""


@pytest.fixture
def agent_script(tmp_path: Path) -> Path:
    path = tmp_path / "slow_agent.py"
    path.write_text(AGENT)
    return path


def environ(
    state: Path,
    agent: Path | None = None,
    *,
    calls: int = 3,
    sleep_s: float = 300.0,
    hook: str | None = None,
    tmp: Path | None = None,
) -> dict[str, str]:
    env = {**os.environ, "SREZ_STATE": str(state)}
    if agent is not None:
        env["SREZ_AGENT_CMD"] = json.dumps([sys.executable, str(agent), str(calls), str(sleep_s)])
    if hook is not None:
        assert tmp is not None
        hooks = tmp / "hooks"
        hooks.mkdir(exist_ok=True)
        (hooks / "sitecustomize.py").write_text(hook)
        env["PYTHONPATH"] = os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")])
    return env


def srez(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SREZ), *args], capture_output=True, text=True, env=env, check=False, timeout=timeout
    )


def start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(SREZ), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def until(check: Callable[[], object], timeout: float = 60.0, what: str = "") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


def live_runs(state: Path) -> list[Path]:
    live = state / "live"
    return sorted(p for p in live.iterdir() if not p.name.startswith(".")) if live.is_dir() else []


def transcript_lines(folder: Path) -> int:
    path = folder / "run" / "archive" / "transcript.jsonl"
    return path.read_text().count("\n") if path.is_file() else 0


def has_lines(folder: Path, count: int) -> bool:
    return transcript_lines(folder) == count


def daemon_gone(folder: Path) -> bool:
    record = record_of(folder)
    return not is_alive(record.pid, record.pid_start)


def record_of(folder: Path) -> LocalRecord:
    return LocalRecord.model_validate_json((folder / "record.json").read_bytes())


def processes_running(needle: str, *, sandboxes: bool = False) -> list[tuple[int, int | None]]:
    """(pid, start time) of the live processes whose command line holds ``needle``; the
    bubblewrap processes that hold a sandboxed agent count only with ``sandboxes``."""
    found: list[tuple[int, int | None]] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            program = Path(cmdline.split(b"\0", 1)[0].decode(errors="replace")).name
            if not sandboxes and program == "bwrap":
                continue
            if needle.encode() in cmdline and int(entry.name) != os.getpid():
                started = start_time(int(entry.name))
                if started is not None:
                    found.append((int(entry.name), started))
    return found


def results_of(results: Path, run_id: str) -> Path:
    (folder,) = results.glob(f"*/*/*/{run_id}")
    return folder


@pytest.fixture
def reaper() -> Iterator[list[tuple[int, int | None]]]:
    """Daemons (pid, start time) a failing test must not leave behind."""
    daemons: list[tuple[int, int | None]] = []
    yield daemons
    for pid, started in daemons:
        if is_alive(pid, started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def run_in_agent_phase(
    env: dict[str, str],
    state: Path,
    results: Path,
    reaper: list[tuple[int, int | None]],
    calls: int,
) -> tuple[subprocess.Popen[str], Path]:
    """``srez run`` of sre-001 until its agent made ``calls`` calls (and now sleeps)."""
    before = set(live_runs(state))
    proc = start(
        env, "run", "--task", "sre-001", "--agent", "cmd:sleepy", "--results", str(results)
    )
    folder = until(lambda: [p for p in live_runs(state) if p not in before], what="a live run")
    assert isinstance(folder, list)
    run = folder[0]
    until(lambda: (run / "record.json").is_file() and record_of(run).pid, what="the daemon pid")
    reaper.append((record_of(run).pid or 0, record_of(run).pid_start))
    until(lambda: transcript_lines(run) == calls, what=f"{calls} transcript lines")
    return proc, run


# ---------------------------------------------------------------------- a daemon killed with -9


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_kill9_of_a_daemon_mid_run_yields_the_grade_a_stop_gives_and_kills_its_agent(
    tmp_path: Path,
    agent_script: Path,
    reaper: list[tuple[int, int | None]],
    sandbox: str,
    request: pytest.FixtureRequest,
) -> None:
    if sandbox == "bubblewrap":
        request.getfixturevalue("bwrap")  # skips without bubblewrap, fails if REQUIRE_BWRAP=1
    # Both ways an orphan dies: with the sandbox (--die-with-parent) and without it (the
    # backend kills the agent its dead daemon left).
    state, results = tmp_path / "state", tmp_path / "results"
    env = {**environ(state, agent_script, calls=3), "SREZ_SANDBOX": sandbox}
    # the run whose daemon is killed with -9 while its agent sleeps after 3 calls
    proc, run = run_in_agent_phase(env, state, results, reaper, 3)
    agents = processes_running(str(agent_script))
    sandboxes = processes_running(str(agent_script), sandboxes=True)
    assert len(agents) == 1, agents
    daemon = record_of(run).pid
    assert daemon is not None
    os.kill(daemon, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err  # status error: the harness failed, the run is graded
    assert "graded by the host from its transcript" in out
    assert not [p for p in sandboxes if is_alive(*p)], "the orphaned agent still runs"
    killed = results_of(results, run.name)
    summary = json.loads((killed / "summary.json").read_text())
    assert (summary["graded_by"], summary["status"], summary["error_kind"]) == (
        "host",
        "error",
        "harness",
    )
    assert summary["steps"] == 3 and summary["end_reason"] == "agent_exit"
    assert "host-graded" in (killed / "logs" / "evaluator.log").read_text()
    listing = srez(env, "runs", "results", "--results", str(results))
    assert run.name in listing.stdout
    # the same actions, stopped with SIGTERM: the daemon grades them itself
    proc2, run2 = run_in_agent_phase(env, state, results, reaper, 3)
    assert srez(env, "runs", "stop", run2.name).returncode == 0
    proc2.communicate(timeout=60)
    stopped = results_of(results, run2.name)
    assert json.loads((stopped / "summary.json").read_text())["graded_by"] is None
    assert (killed / "result.json").read_bytes() == (stopped / "result.json").read_bytes()
    assert (killed / "final.patch").read_bytes() == (stopped / "final.patch").read_bytes()


def test_kill9_of_a_daemon_after_the_agent_phase_before_grading(tmp_path: Path) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    args = ("run", "--task", "sre-004", "--agent", "heuristic", "--results")
    dying = srez(environ(state, hook=KILL_AT_GRADING, tmp=tmp_path), *args, str(results / "a"))
    assert dying.returncode == 1, dying.stderr
    (killed,) = (results / "a").glob("*/*/*/*")
    summary = json.loads((killed / "summary.json").read_text())
    assert (summary["graded_by"], summary["error_kind"]) == ("host", "harness")
    assert summary["end_reason"] == "submit"
    state_json = json.loads((killed / "state.json").read_text())
    assert state_json["phase"] == "grading"  # sealed, then killed as grading began
    healthy = srez(environ(state), *args, str(results / "b"))
    assert healthy.returncode == 0, healthy.stderr
    (graded,) = (results / "b").glob("*/*/*/*")
    assert (killed / "result.json").read_bytes() == (graded / "result.json").read_bytes()


def test_a_daemon_killed_before_its_episode_leaves_a_complete_folder_with_a_host_summary(
    tmp_path: Path,
) -> None:
    """Nothing to grade (no transcript): the host writes the summary itself, an ungraded error of
    the harness, so the folder under its final name is complete and counted as a harness
    failure; before, the folder held run.json and logs and no summary."""
    state, results = tmp_path / "state", tmp_path / "results"
    args = ("run", "--task", "sre-004", "--agent", "heuristic", "--results", str(results))
    dying = srez(environ(state, hook=KILL_BEFORE_EPISODE, tmp=tmp_path), *args)
    assert dying.returncode == 2 and "the daemon exited during start-up" in dying.stderr
    listed = srez(environ(state), "runs", "list")  # finds the dead run and mirrors it
    assert listed.returncode == 0, listed.stderr
    (killed,) = results.glob("*/*/*/*")
    summary = json.loads((killed / "summary.json").read_text())
    assert (summary["graded_by"], summary["status"], summary["error_kind"]) == (
        "host",
        "error",
        "harness",
    )
    assert summary["reward"] is None and "could not grade it" in summary["error"]
    assert not (killed / "result.json").exists()
    listing = srez(environ(state), "runs", "results", "--results", str(results))
    assert killed.name in listing.stdout


# ---------------------------------------------------------------------- a killed client


def test_eval_resume_after_a_killed_cli_adopts_its_in_flight_run_and_plays_nothing_twice(
    tmp_path: Path, agent_script: Path, reaper: list[tuple[int, int | None]]
) -> None:
    """``srez eval`` killed with -9 while its first run is in its agent phase: that run's daemon
    lives on. ``--resume`` waits for it, mirrors it and plans around it, so each (task, seed) has
    one results folder, even after a later ``srez runs list`` mirrors whatever was left."""
    state, results = tmp_path / "state", tmp_path / "results"
    env = environ(state, agent_script, calls=3, sleep_s=4.0)
    args = ("eval", "--backend", "local", "--agent", "cmd:sleepy", "--tasks", "sre-001,sre-002",
            "--results", str(results))  # fmt: skip
    proc = start(env, *args)
    (run,) = until(lambda: live_runs(state), what="the first live run")  # type: ignore[misc]
    until(lambda: (run / "record.json").is_file() and record_of(run).pid, what="its daemon")
    reaper.append((record_of(run).pid or 0, record_of(run).pid_start))
    until(lambda: transcript_lines(run) == 3, what="3 transcript lines")
    proc.kill()  # the CLI only: its daemon runs on in its own session
    proc.communicate(timeout=30)
    resumed = srez(env, *args, "--resume", timeout=300)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert "not mirrored (1 still running): adopting them first" in resumed.stderr, resumed.stdout
    srez(env, "runs", "list")  # would mirror a stray the resume had missed
    by_task: dict[str, list[str]] = {}
    for folder in results.glob("*/*/*/*"):
        by_task.setdefault(folder.parts[-4], []).append(folder.name)
    assert sorted(by_task) == ["sre-001", "sre-002"]
    assert all(len(ids) == 1 for ids in by_task.values()), by_task
    assert by_task["sre-001"] == [run.name]  # the killed eval's run, adopted


def test_a_killed_clients_local_runs_are_recovered_and_rm_refuses_unmirrored_ones(
    tmp_path: Path, agent_script: Path, reaper: list[tuple[int, int | None]]
) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    env = environ(state, agent_script, calls=2, sleep_s=1.5)
    found = []
    for _ in range(2):
        proc, run = run_in_agent_phase(env, state, results, reaper, 2)
        proc.kill()  # the client dies; the run goes on alone
        proc.communicate()
        found.append(run)
    refused = srez(env, "runs", "rm", found[0].name)
    assert refused.returncode == 2, refused
    assert len(refused.stderr.splitlines()) == 1 and "not mirrored" in refused.stderr
    assert "--force" in refused.stderr and found[0].is_dir()
    for run in found:
        until(functools.partial(daemon_gone, run), 60, "the daemon's exit")
    assert not list(results.glob("*/*/*/*"))
    listing = srez(env, "runs", "list", "--all")
    assert listing.returncode == 0, listing.stderr
    assert f"{found[0].name}: mirrored" in listing.stderr
    assert f"{found[1].name}: mirrored" in listing.stderr  # both: 'srez mirror' has nothing left
    again = srez(env, "mirror", found[1].name)
    assert again.returncode == 0 and "already mirrored" in again.stdout, again
    for run in found:
        folder = results_of(results, run.name)
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["status"] == "ok" and summary["graded_by"] is None
        assert (folder / "result.json").is_file()
    assert srez(env, "runs", "rm", found[0].name).returncode == 0
    assert not found[0].exists()


def test_srez_mirror_recovers_a_local_run(
    tmp_path: Path, agent_script: Path, reaper: list[tuple[int, int | None]]
) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    env = environ(state, agent_script, calls=2, sleep_s=0.5)
    proc, run = run_in_agent_phase(env, state, results, reaper, 2)
    proc.kill()
    proc.communicate()
    until(functools.partial(daemon_gone, run), 60, "the daemon's exit")
    mirrored = srez(env, "mirror", run.name[:22])
    assert mirrored.returncode == 0, mirrored
    assert mirrored.stdout.startswith(f"{run.name}: mirrored to "), mirrored.stdout
    assert (results_of(results, run.name) / "result.json").is_file()


async def test_runs_rm_needs_force_for_an_unmirrored_run(tmp_path: Path) -> None:
    state = tmp_path / "state"
    handle = await LocalBackend(state).launch(spec_for(tmp_path / "results"))
    env = environ(state)
    refused = srez(env, "runs", "rm", handle.run_id)
    assert refused.returncode == 2 and "not mirrored" in refused.stderr, refused
    assert (state / "live" / handle.run_id).is_dir()
    forced = srez(env, "runs", "rm", "--force", handle.run_id)
    assert forced.returncode == 0, forced
    assert not (state / "live" / handle.run_id).exists()


# ---------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_of_a_local_eval_stops_mirrors_and_reports_its_runs(
    tmp_path: Path, agent_script: Path, reaper: list[tuple[int, int | None]]
) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    env = environ(state, agent_script, calls=2)
    tasks = "sre-001,sre-002,sre-003"
    proc = start(
        env, "eval", "--backend", "local", "--parallel", "2", "--agent", "cmd:sleepy",
        "--tasks", tasks, "--results", str(results), "--detail",
    )  # fmt: skip
    until(lambda: len(live_runs(state)) == 2, what="two runs")
    runs = live_runs(state)
    for run in runs:
        until(functools.partial(has_lines, run, 2), what="their agents at work")
    daemons = [(record_of(r).pid, record_of(r).pid_start) for r in runs]
    reaper.extend((pid or 0, started) for pid, started in daemons)
    agents = processes_running(str(agent_script))
    sandboxes = processes_running(str(agent_script), sandboxes=True)
    assert len(agents) == 2, agents
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not [d for d in daemons if is_alive(*d)], "a daemon still runs"
    assert not [a for a in sandboxes if is_alive(*a)], "an agent still runs"
    assert live_runs(state) == []  # mirrored, then removed
    for run in runs:
        folder = results_of(results, run.name)
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["error_kind"] == "harness" and summary["steps"] == 2
        assert (folder / "result.json").is_file()
    assert "sre-003" not in out  # never started
    assert "sre-001" in out and "sre-002" in out  # the partial table
    assert not (results / "sre-003").exists()


def test_ctrl_c_of_an_inline_eval_leaves_no_partial_folder(tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = environ(tmp_path / "state", hook=SLOW_GRADER, tmp=tmp_path)
    env["SREZ_TEST_SLOW_GRADE"] = "0.4"
    proc = start(
        env, "eval", "--agent", "scripted", "--tasks", "sre-001,sre-002,sre-003,sre-004",
        "--results", str(results), "--detail",
    )  # fmt: skip
    # (a partial folder starts with "."; with a second core two runs are written at once)
    finals = lambda: [p for p in results.glob("*/*/*/*") if not p.name.startswith(".")]  # noqa: E731
    until(
        lambda: finals() and list(results.glob("*/*/*/.*.partial")), what="a run done, one writing"
    )
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted after" in err
    assert list(results.rglob("*.partial")) == []
    done = list(results.glob("*/*/*/*"))
    assert done and all((d / "summary.json").is_file() for d in done)
    # the report names what finished (with two cores, not always sre-001 first)
    assert all(d.parents[2].name in out for d in done), (out, done)


# ---------------------------------------------------------------------- regrade trust


def _ungraded_inline_run(root: Path) -> Path:
    (task,) = load_tasks(["sre-007"])
    run = run_inline(task, "random", 5, root)
    (run.run_dir / "result.json").rename(root / "original.json")
    return run.run_dir


@pytest.mark.parametrize("tamper", ["none", "extra line", "edited line", "edited action"])
def test_regrade_refuses_a_transcript_that_does_not_replay(tmp_path: Path, tamper: str) -> None:
    root = tmp_path / "results"
    folder = _ungraded_inline_run(root)
    path = folder / "archive" / "transcript.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    if tamper == "extra line":
        lines.insert(1, lines[0])
    elif tamper == "edited line":
        assert '"steps_left": ' in lines[1]
        lines[1] = lines[1].replace('"steps_left": ', '"steps_left": 1', 1)
    elif tamper == "edited action":
        assert '"tool": "' in lines[0]
        lines[0] = lines[0].replace('"tool": "', '"tool": "x', 1)
    path.write_text("".join(lines))
    proc = srez(environ(tmp_path / "state"), "regrade", folder.name[:20], "--results", str(root))
    if tamper == "none":
        assert proc.returncode == 0, proc.stderr
        assert "graded by the host" in proc.stdout
        assert (folder / "result.json").read_bytes() == (root / "original.json").read_bytes()
        return
    assert proc.returncode == 2, proc
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "refusing to grade" in proc.stderr or "does not replay" in proc.stderr
    assert not (folder / "result.json").exists()
    assert "host regrade refused" in (folder / "logs" / "evaluator.log").read_text()


# ---------------------------------------------------------------------- random kill -9, resumed


def _victims(state: Path, cli: subprocess.Popen[str], agent_script: Path) -> dict[str, list[int]]:
    """The processes a kill may hit now: the CLI, the run daemons, the template, the agents."""
    daemons = [
        pid
        for run in live_runs(state)
        if (run / "record.json").is_file() and (pid := record_of(run).pid)
    ]
    found: dict[str, list[int]] = {"cli": [cli.pid], "daemon": daemons, "template": [], "agent": []}
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = " ".join(proc.info.get("cmdline") or [])
        if "srez_daemon.template" in line:
            found["template"].append(proc.info["pid"])
        elif str(agent_script) in line and "bwrap" not in line:
            found["agent"].append(proc.info["pid"])
    return found


def _random_kills(tmp_path: Path, agent_script: Path, iterations: int) -> None:
    """``srez eval --resume`` of 3 tasks x 2 seeds, killed with -9 ``iterations`` times at a
    random moment, each time in a random one of the CLI, a daemon, the template or an agent;
    then resumed to the end. Every (task, seed) has one complete run and no second one, no run
    is lost, and every folder under a final name has its summary."""
    rng = random.Random(20261207)
    state, results = tmp_path / "state", tmp_path / "results"
    env = environ(state, agent_script, calls=2, sleep_s=1.0)
    args = ("eval", "--backend", "local", "--agent", "cmd:sleepy", "--tasks",
            "sre-001,sre-002,sre-003", "--seeds", "2", "--results", str(results), "--resume")  # fmt: skip
    kinds = ("cli", "daemon", "template", "agent")
    hit = dict.fromkeys(kinds, 0)
    for _ in range(iterations):
        cli = start(env, *args)
        time.sleep(rng.uniform(0.3, 3.0))
        victims = _victims(state, cli, agent_script)
        kind = rng.choice([k for k in kinds if victims[k]] or ["cli"])
        with contextlib.suppress(ProcessLookupError):
            os.kill(rng.choice(victims[kind]), signal.SIGKILL)
        hit[kind] += 1
        if kind != "cli":  # the CLI goes on or fails on its own; end it for the next round
            with contextlib.suppress(subprocess.TimeoutExpired):
                cli.communicate(timeout=rng.uniform(0.0, 2.0))
            if cli.poll() is None:
                cli.kill()
        cli.communicate(timeout=30)
    final = srez(env, *args, timeout=600)
    assert final.returncode in (0, 1), final.stderr[-3000:]
    srez(env, "runs", "list")
    complete: dict[tuple[str, int], list[str]] = {}
    for summary_path in results.glob("*/*/*/*/summary.json"):
        summary = json.loads(summary_path.read_text())
        folder = summary_path.parent
        grade = folder / "result.json"
        seed = json.loads(grade.read_text())["run_seed"] if grade.is_file() else -1
        if summary["status"] == "ok" or summary.get("error_kind") not in ("harness", "provider"):
            complete.setdefault((folder.parts[-4], seed), []).append(folder.name)
    folders = list(results.glob("*/*/*/*"))
    incomplete = [f for f in folders if not (f / "summary.json").is_file()]
    assert incomplete == [], incomplete
    assert sorted(complete) == [
        (t, s) for t in ("sre-001", "sre-002", "sre-003") for s in (0, 1)
    ], complete
    doubled = {k: v for k, v in complete.items() if len(v) > 1}
    assert doubled == {}, (doubled, hit)


def test_random_kill9_then_resume_loses_nothing_and_doubles_nothing_reduced(
    tmp_path: Path, agent_script: Path
) -> None:
    _random_kills(tmp_path, agent_script, iterations=4)


@pytest.mark.slow
def test_random_kill9_then_resume_loses_nothing_and_doubles_nothing_20(
    tmp_path: Path, agent_script: Path
) -> None:
    _random_kills(tmp_path, agent_script, iterations=20)
