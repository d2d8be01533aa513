"""The daemon's wire models: the public API on port 4263 and the agent socket (docs/design.md §4,
§5).

Every JSON body the daemon sends or accepts is one of these models, and the OpenAPI document is
generated from them, so the client, the daemon and the document cannot disagree.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from srez_core.field_docs import field_docstrings
from srez_daemon.protocol.dialog import DialogEntry, UtcTimestamp

Phase = Literal["starting", "agent", "sealed", "grading", "done", "error"]
"""Phases of a run, owned by the daemon: ``starting -> agent -> sealed -> grading -> done``."""
PHASES: Final[tuple[str, ...]] = ("starting", "agent", "sealed", "grading", "done", "error")
AGENT_OVER: Final = frozenset({"sealed", "grading", "done", "error"})
"""Phases in which the agent can no longer act (the reference and the similarity are served)."""

ErrorCode = Literal[
    "unauthorized",
    "forbidden_host",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "bad_request",
    "payload_too_large",
    "agent_phase",
    "no_grade",
    "too_many_sessions",
    "too_many_notes",
    "conflict",
    "unavailable",
    "storage_failed",
    "internal",
]
"""The closed set of error codes the daemon answers with."""

EndReason = Literal["submit", "agent_exit", "time_limit", "step_budget", "stopped", "error"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)


class ErrorBody(_Wire):
    code: ErrorCode
    """What went wrong, from a closed set."""
    message: str
    """One line for a person: what was wrong and what is allowed."""


class ErrorResponse(_Wire):
    """Every error: ``{"error": {"code": ..., "message": ...}}`` with the matching status."""

    error: ErrorBody


class Health(_Wire):
    """``GET /api/health``: liveness, with nothing about the run's content (no auth)."""

    status: Literal["ok"] = "ok"
    phase: Phase
    protocol_version: int
    version: str
    """Version of the ``srez`` distribution."""
    uptime_s: float
    terminal: bool
    """Whether ``/api/pty`` can offer a terminal here."""


class TaskSummary(_Wire):
    id: str
    title: str
    difficulty: str
    brief: str


class TokenTotals(_Wire):
    input: int = 0
    output: int = 0


class RunInfo(_Wire):
    """``GET /api/run``: the run's metadata."""

    run_id: str
    task: TaskSummary
    model: str
    agent: str
    backend: str
    phase: Phase
    steps_used: int
    step_budget: int
    started_at: UtcTimestamp
    finished_at: UtcTimestamp | None = None
    end_reason: EndReason | None = None
    tokens: TokenTotals = TokenTotals()
    cost_usd: float = 0.0


class RunState(_Wire):
    """``state.json``: the phase and counters, rewritten atomically on every change."""

    schema_version: Literal[1] = 1
    run_id: str
    phase: Phase
    steps_used: int = 0
    step_budget: int
    started_at: UtcTimestamp
    agent_started_at: UtcTimestamp | None = None
    agent_ended_at: UtcTimestamp | None = None
    finished_at: UtcTimestamp | None = None
    end_reason: EndReason | None = None
    error: str | None = None
    tokens: TokenTotals = TokenTotals()
    cost_usd: float = 0.0
    cooldown_s: float = 0.0
    """Provider cooldown reported by the agent; it does not count against the time limit."""


class DialogPage(_Wire):
    """``GET /api/dialog?offset=N``: complete entries from byte offset N."""

    entries: list[DialogEntry]
    next_offset: int
    """Where the next read starts: the end of the last complete line returned."""


class FileChange(_Wire):
    path: str
    """``<service>/<service>.conf``."""
    status: Literal["A", "M", "D", "R"]
    added: int
    removed: int


class FilesResponse(_Wire):
    """``GET /api/files``: the changed config files since the incident started."""

    files: list[FileChange]


class Similarity(_Wire):
    """``GET /api/similarity``: how much of the two diffs' changed lines they share.

    A text comparison, whitespace-normalised; not a grade: an equivalent fix with another value
    (``pool_max = 27`` where the reference sets 20) shares no line with the reference. The key
    counts tell that apart: keys both diffs set alike, keys both set to other values, and keys
    only one of them changes (:mod:`srez_daemon.record.patch_keys`).
    """

    similarity: float = Field(ge=0, le=1)
    """Changed lines in common over changed lines in either diff (multiset Jaccard)."""
    agent_lines: int
    reference_lines: int
    common_lines: int
    same_keys: int = 0
    """Config keys both diffs change to the same value."""
    other_values: int = 0
    """Config keys both diffs change, to different values (same keys, other values)."""
    agent_only_keys: int = 0
    """Config keys only the agent changed (other keys)."""
    reference_only_keys: int = 0
    """Config keys only the reference changes (other keys)."""


class ExecRequest(_Wire):
    """``POST /api/exec``."""

    argv: list[str] = Field(min_length=1)
    timeout_s: float = Field(gt=0, le=3600)
    cwd: str | None = None
    """A folder inside the run folder: relative to it, or absolute inside it (default: the run
    folder). ``..``, a path elsewhere and a link that leads out are refused with a 400."""


class ExecResult(_Wire):
    exit_code: int | None
    """None when the process was killed on timeout."""
    stdout: str
    stderr: str
    truncated: bool
    """True when either stream passed the 1 MiB cap (the rest was discarded)."""
    timed_out: bool = False
    duration_s: float


# ---------------------------------------------------------------------- WebSocket frames (/api/ws)


class DialogFrame(_Wire):
    t: Literal["dialog"] = "dialog"
    offset: int
    """Byte offset where the entry's line starts."""
    next_offset: int
    """Byte offset after it: resume from here to get the next entry."""
    entry: DialogEntry


class PhaseFrame(_Wire):
    t: Literal["phase"] = "phase"
    phase: Phase
    end_offset: int | None = None
    """Set on the run's final phase (``done`` or ``error``): where the finished dialog ends. A
    viewer holding every entry up to here has the whole dialog."""


class DiffFrame(_Wire):
    """Sent after each tool call that changed a config file."""

    t: Literal["diff"] = "diff"
    files: list[FileChange]
    """Every config file changed since the incident started."""
    diff: str
    """The run's whole diff now (what ``GET /api/diff`` answers)."""


class GradeFrame(_Wire):
    t: Literal["grade"] = "grade"
    reward: float
    resolved: bool
    passed: bool


class HeartbeatFrame(_Wire):
    t: Literal["heartbeat"] = "heartbeat"
    ts: UtcTimestamp
    offset: int
    """The end of the dialog as the daemon knows it."""


StreamFrame = Annotated[
    DialogFrame | PhaseFrame | DiffFrame | GradeFrame | HeartbeatFrame, Field(discriminator="t")
]


class PtyResize(_Wire):
    """A text frame on ``/api/pty``: ``{"resize": [cols, rows]}``."""

    resize: tuple[Annotated[int, Field(ge=1, le=1000)], Annotated[int, Field(ge=1, le=1000)]]


# ---------------------------------------------------------------------- the agent socket (§5)


class AgentTask(_Wire):
    """``GET /task`` on the agent socket: everything the agent may know."""

    task_id: str
    run_id: str
    run_seed: int
    max_steps: int
    prompt: dict[str, Any]
    """The prompt of ``SREEnv.reset()``: preamble, brief, alerts, tools, glossary and ``text``."""
    oracle: dict[str, Any] | None = None
    """The whole task file, ground truth included: handed only to the scripted oracle."""


class AgentNote(_Wire):
    """``POST /dialog``: an entry the agent writes about itself; the daemon stamps seq and ts."""

    type: Literal["assistant", "thinking", "provider_error", "usage"]
    fields: dict[str, Any] = {}
    """The entry's fields as ``dialog.jsonl`` defines them for that type (no seq, ts or type)."""


class SubmitRequest(_Wire):
    summary: str = Field(default="", max_length=500)


def submit_args(body: dict[str, Any]) -> dict[str, Any]:
    """The arguments ``POST /submit`` runs the ``submit`` tool with: the summary alone (``""``
    when absent). Raises pydantic's ValidationError for a body it refuses (another field, or a
    summary over 500 characters)."""
    return {"summary": SubmitRequest.model_validate(body).summary}


class StepObservation(_Wire):
    """What a tool call returns to the agent: the simulator's observation."""

    model_config = ConfigDict(extra="allow", frozen=True)

    ok: bool
    tool: str
    step: int
    steps_left: int
    clock: str
    done: bool
    output: str | None = None
    error: dict[str, str] | None = None
