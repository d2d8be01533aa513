"""Helpers for the TUI tests: entries, finished-run folders, a fake shell and a scripted live
source (a run whose events the test releases one by one)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import orjson

from srez_client.backends.base import Backend, LaunchSpec, RunHandle, RunStatus
from srez_client.errors import NoDaemonError
from srez_client.tui.source import DialogBatch, RunMeta, RunSource, SourceEvent, SourceUnavailable
from srez_daemon.protocol import (
    Assistant,
    DialogEntry,
    SessionCompleted,
    SessionStarted,
    TaskPrompt,
    Thinking,
    TokenCount,
    ToolCall,
    ToolResult,
    encode_entry,
)

TS = "2026-01-01T00:00:00Z"
RUN_ID = "20260101T000000Z-0123abcd"
AGENT_DIFF = "--- a/payments/payments.conf\n+++ b/payments/payments.conf\n@@ -1,2 +1,2 @@\n [db]\n-port = 5433\n+port = 5432\n"
REFERENCE = AGENT_DIFF
GRADE: dict[str, Any] = {
    "task_id": "sre-001",
    "difficulty": "easy",
    "agent": "heuristic",
    "steps": 7,
    "max_steps": 20,
    "checks": {
        "valid": {"pass": True, "reasons": []},
        "func": {"pass": True, "reasons": []},
        "safe": {"pass": False, "reasons": ["restarted db without need"]},
        "intent": {"pass": True, "reasons": []},
        "rca": {"pass": None, "reasons": []},
    },
    "resolved": False,
    "passed": False,
    "reward": {"total": 0.5, "weights": {"fix": 0.35}, "components": {"fix": 1.0}},
    "metrics": {"end_reason": "submit"},
}


def tool_result(
    seq: int,
    call_id: str,
    result: str,
    *,
    status: str = "success",
    step: int = 1,
    left: int = 1,
    ms: float = 0,
) -> ToolResult:
    """The result of call ``call_id``, taking ``ms``, with ``left`` steps left after ``step``."""
    fields = {"call_id": call_id, "status": status, "result": result, "duration_ms": ms}
    return ToolResult.model_validate(
        {"seq": seq, "ts": TS, **fields, "step": step, "steps_left": left}
    )


def session(
    n_tools: int = 3,
    *,
    prompt: str = "Fix it.\n\nActive alerts at T0:\n- [critical] ServiceDown on payments\n\nServices: ...",
) -> list[DialogEntry]:
    """A small complete dialog: start, prompt, thinking, assistant, tool pairs, end."""
    out: list[DialogEntry] = [
        SessionStarted(
            seq=0, ts=TS, agent="heuristic", model="none", task_id="sre-001", run_id=RUN_ID
        ),
        TaskPrompt(seq=1, ts=TS, text=prompt),
        Thinking(seq=2, ts=TS, text="secret reasoning " * 5),
        Assistant(
            seq=3,
            ts=TS,
            text="# Plan\n- check **logs**\n- use `get_logs`",
            tokens=TokenCount(input=10, output=5),
        ),
    ]
    seq = 4
    for i in range(n_tools):
        out.append(
            ToolCall(seq=seq, ts=TS, call_id=f"c{i}", name="get_logs", args={"service": "payments"})
        )
        out.append(tool_result(seq + 1, f"c{i}", f"line {i}", step=i + 1, left=19 - i, ms=1.0))
        seq += 2
    out.append(
        SessionCompleted(
            seq=seq, ts=TS, turns=n_tools, duration_s=1.5, tokens_total=15, cost_usd=0.001
        )
    )
    return out


def write_run(
    root: Path,
    entries: list[DialogEntry] | None = None,
    *,
    run_id: str = RUN_ID,
    task: str = "sre-001",
    model: str = "none",
    agent: str = "heuristic",
    grade: dict[str, Any] | None = None,
    diff: str = AGENT_DIFF,
    reference: str = REFERENCE,
    summary_extra: dict[str, Any] | None = None,
    logs: dict[str, str] | None = None,
) -> Path:
    """A finished run's results folder under ``root``; returns it."""
    folder = root / task / model.replace("/", "__") / agent / run_id
    (folder / "archive").mkdir(parents=True)
    dialog = b"".join(encode_entry(e) for e in (entries if entries is not None else session()))
    (folder / "archive" / "dialog.jsonl").write_bytes(dialog)
    (folder / "final.patch").write_text(diff)
    (folder / "reference.patch").write_text(reference)
    (folder / "result.json").write_bytes(orjson.dumps(grade if grade is not None else GRADE))
    run = {
        "schema_version": 1,
        "run_id": run_id,
        "task_id": task,
        "agent": agent,
        "agent_spec": agent,
        "model": model,
        "backend": "inline",
        "run_seed": 0,
        "srez_version": "0.1.0",
        "protocol_version": 1,
        "started_at": TS,
    }
    (folder / "run.json").write_bytes(orjson.dumps(run))
    summary = {
        "schema_version": 1,
        "run_id": run_id,
        "task_id": task,
        "agent": agent,
        "model": model,
        "status": "ok",
        "reward": 0.5,
        "resolved": False,
        "passed": False,
        "steps": 7,
        "end_reason": "submit",
        "duration_s": 2.5,
        "finished_at": TS,
        "error": None,
    }
    summary.update(summary_extra or {})
    (folder / "summary.json").write_bytes(orjson.dumps(summary))
    if logs:
        (folder / "logs").mkdir()
        for name, text in logs.items():
            (folder / "logs" / f"{name}.log").write_text(text)
    return folder


class FakeShell:
    """A Shell that records what screens ask of it."""

    def __init__(self, tmp: Path) -> None:
        self.results_root = tmp / "results"
        self.state_dir = tmp / "state"
        self.pushed: list[tuple[Any, str]] = []
        self.notes: list[str] = []
        self.opened: list[str] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.redraws = 0
        self.quitted = False

    def push(self, widget: Any, title: str) -> None:
        self.pushed.append((widget, title))

    def pop(self) -> None:
        if self.pushed:
            self.pushed.pop()

    def close(self, widget: Any) -> None:
        self.pushed = [entry for entry in self.pushed if entry[0] is not widget]

    def open_run(self, run_ref: str) -> None:
        self.opened.append(run_ref)

    def notify(self, message: str) -> None:
        self.notes.append(message)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        self.tasks.append(asyncio.ensure_future(coro))

    def redraw(self) -> None:
        self.redraws += 1

    def quit(self) -> None:
        self.quitted = True

    async def settle(self) -> None:
        """Wait for every spawned task (and those they spawn)."""
        for _ in range(20):
            pending = [t for t in self.tasks if not t.done()]
            if not pending:
                return
            await asyncio.wait(pending, timeout=2)


class ScriptedSource(RunSource):
    """A live run whose events a test feeds through :meth:`send`; :meth:`finish` ends it."""

    live = True

    def __init__(self, run_id: str = RUN_ID, agent: str = "heuristic") -> None:
        self.run_id = run_id
        self.agent = agent
        self.queue: asyncio.Queue[SourceEvent | None] = asyncio.Queue()
        self.phase = "agent"
        self.diff_text = ""
        self.grade_value: dict[str, Any] | None = None
        self.log_text: dict[str, str] = {"agent": "agent started\n"}
        self.closed = False

    def send(self, event: SourceEvent | list[DialogEntry]) -> None:
        self.queue.put_nowait(DialogBatch(event) if isinstance(event, list) else event)

    def finish(self) -> None:
        self.queue.put_nowait(None)

    async def connect(self, status: Callable[[str], None] | None = None) -> None:
        return None

    async def meta(self) -> RunMeta:
        return RunMeta(
            run_id=self.run_id,
            task_id="sre-001",
            difficulty="easy",
            brief="Checkout is down.",
            model="none",
            agent=self.agent,
            phase=self.phase,
            version="0.1.0",
            settings={"seed": "0"},
        )

    async def events(self) -> AsyncIterator[SourceEvent]:
        while (event := await self.queue.get()) is not None:
            yield event

    async def diff(self) -> str:
        return self.diff_text

    async def reference(self) -> tuple[str, float | None]:
        if self.phase == "agent":
            raise SourceUnavailable("agent phase")
        return REFERENCE, 0.5

    async def grade(self) -> dict[str, Any]:
        if self.grade_value is None:
            raise SourceUnavailable("not graded")
        return self.grade_value

    async def summary(self) -> dict[str, Any]:
        raise SourceUnavailable("no summary")

    def log_names(self) -> list[str]:
        return list(self.log_text)

    async def logs(self, name: str, *, follow: bool) -> AsyncIterator[str]:
        yield self.log_text[name]

    async def dialog_bytes(self) -> bytes:
        return b"".join(encode_entry(e) for e in session())

    async def close(self) -> None:
        self.closed = True


class MemoryBackend(Backend):
    """A backend of runs held in memory, with no daemon (connect waits: "Starting…")."""

    name = "memory"

    def __init__(self, results: Path) -> None:
        self.runs: dict[str, RunHandle] = {}
        self.results = results
        self.calls: list[tuple[str, str]] = []
        self.stop_gate: asyncio.Event | None = None  # set: a stop that answers only when released

    def add(self, run_id: str = RUN_ID, status: RunStatus = "running") -> RunHandle:
        handle = RunHandle(
            run_id=run_id,
            backend="memory",
            task_id="sre-001",
            agent="heuristic",
            model="none",
            status=status,
            labels={"srez.results": str(self.results)},
        )
        self.runs[run_id] = handle
        return handle

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        return self.add(f"20260101T000000Z-{len(self.runs):08x}")

    async def list(self, include_exited: bool = False) -> list[RunHandle]:
        return [h for h in self.runs.values() if include_exited or h.status == "running"]

    async def endpoint(self, run: RunHandle) -> str:
        raise NoDaemonError("no daemon in memory")

    async def token(self, run: RunHandle) -> str:
        raise NoDaemonError("no daemon in memory")

    async def wait(self, run: RunHandle, timeout_s: float | None = None) -> RunHandle:
        return self.runs[run.run_id]

    async def stop(self, run: RunHandle) -> None:
        self.calls.append(("stop", run.run_id))
        if self.stop_gate is not None:
            await self.stop_gate.wait()
        self.runs[run.run_id] = run.model_copy(update={"status": "exited"})

    async def remove(self, run: RunHandle) -> None:
        self.calls.append(("remove", run.run_id))
        self.runs.pop(run.run_id, None)

    async def logs(self, run: RunHandle, *, follow: bool = False) -> AsyncIterator[str]:
        yield "container log\n"

    async def copy_out(self, run: RunHandle, dest: Path) -> Path:
        raise NoDaemonError("nothing to copy")
