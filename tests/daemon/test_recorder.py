"""The recorder: one for every host (an inline run records what a daemon records), and under
pressure: notes racing tool calls, frames and threads, caps on notes, bad notes, a note flood
through a real daemon into ``results/``, and a disk that fills mid-run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from daemonkit import SLEEPER, daemon_env, live_daemon, prepare, request

from srez_client.backends.inline.host import run_inline
from srez_client.mirror.copier import mirror_run
from srez_daemon.protocol import RunManifest, iter_dialog
from srez_daemon.run import RunController
from srez_daemon.settings import DaemonSettings
from srez_env.tasks import load_tasks
from tmpfs_kit import small_tmpfs

FIX = load_tasks(["sre-007"])[0].reference_fix[0]  # set_config: a call that changes the world


def controller(tmp_path: Path, publish: Any = None, **caps: int) -> RunController:
    run_dir, token_file = prepare(tmp_path, agent_spec="heuristic")
    settings = DaemonSettings(run_dir=run_dir, token_file=token_file, agent_argv=SLEEPER, **caps)
    return RunController(
        settings,
        publish=publish or (lambda _frame: None),
        environ=dict(os.environ),
    )


@contextlib.asynccontextmanager
async def agent_http(socket_path: Path) -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.UnixConnector(path=str(socket_path), limit=32)
    async with aiohttp.ClientSession(connector=connector) as http:
        yield http


async def post(http: aiohttp.ClientSession, path: str, body: object) -> tuple[int, Any, str]:
    """(status, JSON body or None, content type) of a POST on the agent socket."""
    async with http.post(f"http://agent{path}", data=orjson.dumps(body)) as resp:
        raw = await resp.read()
        return resp.status, (orjson.loads(raw) if raw else None), resp.content_type


async def post_until_closed(
    http: aiohttp.ClientSession, path: str, body: object
) -> tuple[int, Any, str]:
    """:func:`post`, or ``(0, None, "closed")`` when the daemon closed the connection under the
    request: a run that ended (here, on a failed write) stops serving requests still in flight."""
    try:
        return await post(http, path, body)
    except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
        return 0, None, "closed"


def dialog_of(run_dir: Path) -> list[Any]:
    return list(iter_dialog((run_dir / "archive" / "dialog.jsonl").read_bytes()))


def whole_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file, each asserted to be a whole JSON object."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), f"{path.name} ends in a torn line"
    lines = [orjson.loads(line) for line in data.splitlines()]
    assert all(isinstance(line, dict) for line in lines)
    return lines


# ---------------------------------------------------------------------- one recorder for every host

# A scripted episode with a valid call, two invalid ones, a raw reply, a fix that changes a config
# file, and the submit the replay agent makes once its actions run out.
SCRIPT = (
    {"tool": "get_alerts", "args": {}},
    {"tool": "get_metrics", "args": {"service": "db", "metric": "nope"}},
    {"tool": "get_logs", "args": {"bogus": 1}},
    {"tool": "_reply", "args": {"text": "I think the database is down"}},
    {"tool": FIX.tool, "args": FIX.args},
)
ID_AND_TIME_FIELDS = frozenset({"ts", "run_id", "duration_ms", "duration_s"})


def comparable(run_dir: Path) -> list[dict[str, Any]]:
    """The run's dialog without what differs between any two runs: ids and times."""
    entries = [e.model_dump(mode="json") for e in dialog_of(run_dir)]
    return [{k: v for k, v in e.items() if k not in ID_AND_TIME_FIELDS} for e in entries]


def test_inline_and_daemon_record_the_same_episode_alike(tmp_path: Path) -> None:
    replay = tmp_path / "script.jsonl"
    replay.write_text("".join(json.dumps(action) + "\n" for action in SCRIPT))
    spec = f"replay:{replay}"
    task = load_tasks(["sre-007"])[0]
    inline = run_inline(task, spec, 0, tmp_path / "results")
    with live_daemon(tmp_path / "daemon", agent_spec=spec) as daemon:
        assert daemon.wait_phase("done", "error") == "done"
        wait_for((daemon.run_dir / "summary.json").exists)
        run_dir = daemon.run_dir
        recorded = comparable(run_dir)
        assert recorded == comparable(inline.run_dir)
        confs = sorted(p.relative_to(run_dir) for p in (run_dir / "world").rglob("*.conf"))
        assert confs == sorted(
            p.relative_to(inline.run_dir) for p in (inline.run_dir / "world").rglob("*.conf")
        )
        for name in ("final.patch", "reference.patch", "archive/transcript.jsonl", *confs):
            assert (run_dir / name).read_bytes() == (inline.run_dir / name).read_bytes(), name
    results = [e for e in recorded if e["type"] == "tool_result"]
    statuses = ["success", "error", "error", "error", "success", "success"]
    assert [r["status"] for r in results] == statuses
    assert results[1]["result"].startswith("error UNKNOWN_METRIC: ")
    assert results[3]["result"].startswith("error PARSE_ERROR: ")
    calls = [e for e in recorded if e["type"] == "tool_call"]
    assert calls[3]["name"] == "_reply" and calls[-1]["args"] == {"summary": ""}
    assert b"+" in (run_dir / "final.patch").read_bytes()


# ---------------------------------------------------------------------- one thread-safe recorder


async def test_notes_racing_tool_calls_never_share_a_seq(tmp_path: Path) -> None:
    run = controller(tmp_path)
    await run.start()
    async with agent_http(run.settings.socket_path) as http:

        async def note(i: int) -> None:
            status, _, _ = await post(
                http, "/dialog", {"type": "thinking", "fields": {"text": f"note {i} " * 50}}
            )
            assert status == 204

        async def calls() -> None:
            for _ in range(10):
                status, body, _ = await post(http, "/tools/get_logs", {"service": "payments"})
                assert status == 200 and body["ok"] is True

        await asyncio.gather(calls(), *(note(i) for i in range(300)))
    await run.end_agent_phase("agent_exit", "completed")
    await run.close()
    entries = dialog_of(run.paths.root)
    seqs = [e.seq for e in entries]
    assert seqs == list(range(len(entries))), "seq must be unique and increase in file order"
    types = [e.type for e in entries]
    assert types.count("thinking") == 300 and types.count("tool_result") == 10


async def test_frames_are_published_on_the_event_loop_thread(tmp_path: Path) -> None:
    loop_thread = threading.get_ident()
    published: list[tuple[str, int]] = []

    def publish(frame: Any) -> None:  # a StreamHub writes to transports: loop thread only
        published.append((frame.t, threading.get_ident()))

    run = controller(tmp_path, publish=publish)
    await run.start()
    async with agent_http(run.settings.socket_path) as http:
        status, body, _ = await post(http, f"/tools/{FIX.tool}", FIX.args)
        assert status == 200 and body["ok"] is True
    await run.end_agent_phase("agent_exit", "completed")
    await run.close()
    assert "diff" in [t for t, _ in published]
    off_loop = [t for t, thread in published if thread != loop_thread]
    assert off_loop == [], f"frames published off the loop thread: {off_loop}"


# ---------------------------------------------------------------------- bad notes, capped notes


@pytest.mark.parametrize(
    "fields",
    [
        {"text": "hi", "seq": 7},
        {"text": "hi", "ts": "2026-01-01T00:00:00Z"},
        {"text": "hi", "type": "tool_result"},
        {"text": 5},
        {"text": "hi", "nope": 1},
    ],
)
async def test_an_invalid_note_is_a_json_400(tmp_path: Path, fields: dict[str, Any]) -> None:
    run = controller(tmp_path)
    await run.start()
    async with agent_http(run.settings.socket_path) as http:
        status, body, ctype = await post(http, "/dialog", {"type": "assistant", "fields": fields})
        assert (status, ctype) == (400, "application/json")
        assert body["error"]["code"] == "bad_request" and body["error"]["message"]
        status, _, _ = await post(http, "/dialog", {"type": "assistant", "fields": {"text": "ok"}})
        assert status == 204  # the run goes on
    await run.end_agent_phase("agent_exit", "completed")
    await run.close()
    assert [e.seq for e in dialog_of(run.paths.root)] == list(range(len(dialog_of(run.paths.root))))


async def test_notes_past_the_count_cap_are_refused_with_one_marker(tmp_path: Path) -> None:
    run = controller(tmp_path, notes_max_count=3, note_max_bytes=2000)
    await run.start()
    async with agent_http(run.settings.socket_path) as http:
        big = await post(http, "/dialog", {"type": "thinking", "fields": {"text": "x" * 5000}})
        assert big[0] == 413 and big[1]["error"]["code"] == "payload_too_large"
        answers = [
            (await post(http, "/dialog", {"type": "assistant", "fields": {"text": f"{i}"}}))[:2]
            for i in range(6)
        ]
        assert [status for status, _ in answers] == [204, 204, 204, 429, 429, 429]
        assert {body["error"]["code"] for _, body in answers[3:]} == {"too_many_notes"}
        status, body, _ = await post(http, "/tools/get_logs", {"service": "db"})
        assert status == 200 and body["ok"] is True  # tool calls go on
    await run.end_agent_phase("agent_exit", "completed")
    await run.close()
    types = [e.type for e in dialog_of(run.paths.root)]
    assert types.count("notes_dropped") == 1 and types.count("assistant") == 3
    assert types.index("notes_dropped") < types.index("tool_call")
    summary = json.loads(run.paths.summary_json.read_text())
    assert summary["notes_dropped"] == 4 and summary["truncated"] is True


# ---------------------------------------------------------------------- a real daemon


async def test_a_note_flood_keeps_the_tool_record_in_results(tmp_path: Path) -> None:
    """110 notes of 1 MB, tool calls between them: the dialog stays under the mirror's cap, so
    ``results/`` carries the whole tool record, the marker and a summary that says so."""
    text = "x" * 1_000_000  # a 1 MB note: the body stays under the socket's 1 MiB limit
    with live_daemon(tmp_path, agent_spec="heuristic", agent_cmd=SLEEPER) as daemon:
        statuses: list[int] = []
        refusals: list[Any] = []
        async with agent_http(daemon.run_dir / "agent.sock") as http:
            for i in range(110):
                status, body, ctype = await post(
                    http, "/dialog", {"type": "thinking", "fields": {"text": text}}
                )
                statuses.append(status)
                if status != 204:
                    assert ctype == "application/json"
                    refusals.append(body["error"]["code"])
                if i % 10 == 9:
                    status, body, _ = await post(http, "/tools/get_logs", {"service": "db"})
                    assert status == 200 and body["ok"] is True
            status, _, _ = await post(http, "/submit", {"summary": "flooded"})
            assert status == 200
        daemon.wait_phase("done", "error")
        manifest = RunManifest.model_validate_json((daemon.run_dir / "run.json").read_bytes())
        await asyncio.to_thread(wait_for, (daemon.run_dir / "summary.json").exists)
        final = await asyncio.to_thread(mirror_run, daemon.run_dir, tmp_path / "results", manifest)
    assert statuses[0] == 204 and refusals and set(refusals) == {"payload_too_large"}
    mirror = json.loads((final / "mirror.json").read_text())
    assert mirror["artifacts_truncated"] is False  # only the live agent socket is skipped
    assert [s["path"] for s in mirror["skipped"]] == ["agent.sock"]
    dialog = whole_json_lines(final / "archive" / "dialog.jsonl")
    transcript = whole_json_lines(final / "archive" / "transcript.jsonl")
    types = [line["type"] for line in dialog]
    assert types.count("tool_call") == types.count("tool_result") == 12  # 11 calls and submit
    assert types.count("notes_dropped") == 1
    assert len(transcript) == 12
    assert [line["seq"] for line in dialog] == list(range(len(dialog)))
    summary = json.loads((final / "summary.json").read_text())
    assert summary["notes_dropped"] == len(refusals) and summary["truncated"] is True
    assert summary["status"] == "ok" and summary["end_reason"] == "submit"


def wait_for(done: Callable[[], bool], timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def start_daemon(root: Path, run_dir: Path, token_file: Path) -> subprocess.Popen[bytes]:
    """A daemon for a run folder of our own (daemonkit's live_daemon makes its own folder)."""
    env = daemon_env(
        run_dir,
        token_file,
        root / "endpoint.json",
        {"SREZ_AGENT_CMD": json.dumps(list(SLEEPER))},
    )
    with (root / "daemon.out").open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "srez_daemon"],
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )


def agent_phase(endpoint: Path) -> bool:
    """Whether the daemon that wrote ``endpoint`` is in its agent phase."""
    if not endpoint.exists():
        return False
    port = json.loads(endpoint.read_text())["port"]
    return b'"agent"' in request(f"http://127.0.0.1:{port}/api/health")[1]


def fill(folder: Path) -> None:
    """Write a file into ``folder`` until the disk refuses more."""
    with (folder / "filler").open("wb", buffering=0) as f:
        chunk = bytes(64 << 10)
        with contextlib.suppress(OSError):
            while True:
                f.write(chunk)
        with contextlib.suppress(OSError):
            while True:
                f.write(b"x")


async def test_a_full_disk_ends_the_run_as_a_harness_error_with_whole_lines(
    tmp_path: Path,
) -> None:
    with small_tmpfs(tmp_path / "disk", "16m") as disk:
        run_dir, token_file = prepare(disk, agent_spec="heuristic")
        proc = start_daemon(tmp_path, run_dir, token_file)
        try:
            await asyncio.to_thread(wait_for, lambda: agent_phase(tmp_path / "endpoint.json"))
            answers: list[tuple[int, Any, str]] = []
            async with agent_http(run_dir / "agent.sock") as http:
                for _ in range(3):
                    status, body, _ = await post(http, "/tools/get_logs", {"service": "db"})
                    assert status == 200 and body["ok"] is True
                assert (
                    await post(http, "/dialog", {"type": "assistant", "fields": {"text": "a"}})
                )[0] == 204
                fill(disk)
                failed_at = time.monotonic()
                text = "y" * 200_000
                notes = [
                    post_until_closed(
                        http, "/dialog", {"type": "thinking", "fields": {"text": text}}
                    )
                    for _ in range(5)
                ]
                calls = [
                    post_until_closed(http, "/tools/get_logs", {"service": "db"}) for _ in range(5)
                ]
                answers = list(await asyncio.gather(*notes, *calls))
            await asyncio.to_thread(proc.wait, 20)
            ended_in = time.monotonic() - failed_at
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        assert ended_in < 10, f"the run took {ended_in:.1f} s to end by itself"
        refused = [(status, body, ctype) for status, body, ctype in answers if status >= 300]
        assert refused, "the agent was never told the disk failed"
        for status, body, ctype in refused:
            assert ctype == "application/json" and status in (409, 507), (status, body)
            assert body["error"]["code"] in ("storage_failed", "conflict")
        assert any(body["error"]["code"] == "storage_failed" for _, body, _ in refused)
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status"] == "error" and summary["error_kind"] == "harness"
        assert "could not be written" in summary["error"]
        dialog = whole_json_lines(run_dir / "archive" / "dialog.jsonl")
        transcript = whole_json_lines(run_dir / "archive" / "transcript.jsonl")
        assert [line["seq"] for line in dialog] == list(range(len(dialog)))
        results = [line for line in dialog if line["type"] == "tool_result"]
        assert len(transcript) == len(results) >= 3
        calls_ok = 3 + sum(1 for status, _, _ in answers[5:] if status == 200)
        cut_off = sum(1 for status, _, _ in answers[5:] if status == 0)
        # A call the daemon recorded, then could not answer as the run ended, is in the dialog.
        assert calls_ok <= len(results) <= calls_ok + cut_off
        shutil.rmtree(run_dir, ignore_errors=True)


def test_a_run_without_room_for_its_space_reserve_does_not_start(tmp_path: Path) -> None:
    """300 KB free where the run needs a 1 MiB reserve to be sure of writing how it ends: it does
    not start (the agent gets no step), and its summary says where the disk is full."""
    with small_tmpfs(tmp_path / "disk", "4m") as disk:
        run_dir, token_file = prepare(disk, agent_spec="heuristic")
        fill(disk)
        with (disk / "filler").open("r+b") as f:  # give back 300 KB: less than the reserve
            f.truncate(max(0, f.seek(0, os.SEEK_END) - 300_000))
        proc = start_daemon(tmp_path, run_dir, token_file)
        try:
            proc.wait(30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        summary = json.loads((run_dir / "summary.json").read_text())
        transcript = run_dir / "archive" / "transcript.jsonl"
        assert not transcript.exists() or transcript.read_text() == ""
    assert summary["status"] == "error" and summary["error_kind"] == "harness", summary
    assert "no room for the run's space reserve" in summary["error"]
    assert f"in {run_dir}" in summary["error"] and "the disk is full" in summary["error"]
