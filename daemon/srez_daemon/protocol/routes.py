"""The public API's routes as data (docs/design.md §4): written once, read by the daemon, the
OpenAPI document and the client.

Each :class:`Route` is the wire side of one route: its name, method and path, who may call it,
and what the OpenAPI document says about it (summary, parameters, request body, answers). The
daemon registers its router from :data:`ROUTES` and binds a handler to each route by name
(:mod:`srez_daemon.app`); :mod:`srez_daemon.openapi` renders the document from it; the client
sends every request through one of these routes (``srez_client.daemon_client.connection``), and the
tests hold all three to the table.

Bodies are named by their model in :mod:`srez_daemon.protocol.api` (:data:`ModelName`) instead of
imported: the daemon builds its router from this module before it listens, and loads pydantic
only after that, so that ``/api/health`` answers at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

Method = Literal["GET", "POST"]
Access = Literal["open", "token", "admin"]
"""Who may call a route: anyone (``open``), a token holder (``token``), or a token holder who
also claims the admin capability with :data:`ADMIN_HEADER` (``admin``: the routes that run
commands, docs/security.md A4)."""
ModelName = Literal[
    "DialogPage",
    "ErrorResponse",
    "ExecRequest",
    "ExecResult",
    "FilesResponse",
    "Health",
    "RunInfo",
    "Similarity",
]
"""The models of :mod:`srez_daemon.protocol.api` a route's bodies are made of."""

ADMIN_HEADER: Final = "X-Srez-Admin"
"""The header (value ``1``) that claims the admin capability ``admin`` routes need."""
JSON_MEDIA: Final = "application/json"
DIFF_MEDIA: Final = "text/x-diff"
LOG_NAMES: Final = ("agent", "evaluator", "daemon")
"""The logs ``/api/logs`` serves."""
FOLLOW_VALUES: Final = ("0", "1", "false", "true")
"""What ``/api/logs?follow=`` accepts (anything else is a 400)."""
MAX_OFFSET: Final = 10**18 - 1
"""The largest dialog offset the server accepts (18 digits)."""


@dataclass(frozen=True, slots=True)
class Param:
    """A query or header parameter, as the OpenAPI document describes it."""

    name: str
    where: Literal["query", "header"]
    schema: Mapping[str, object]
    """Its JSON Schema."""
    description: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    """One status a route answers with, and its body."""

    status: int
    description: str
    model: ModelName | None = None
    """A JSON body of this model (``ErrorResponse`` for every refusal)."""
    media: str | None = None
    """A body that is not a model: its media type (``application/json``: any JSON object)."""


@dataclass(frozen=True, slots=True)
class Route:
    """The wire side of one route of the public API."""

    name: str
    """Names the handler the daemon binds, and the document's ``operationId``."""
    method: Method
    path: str
    access: Access
    summary: str
    answers: tuple[Answer, ...]
    """What the route answers besides the refusals every route may give (401 without a valid
    token, 403 for a foreign Host or Origin), which the document adds from :attr:`access`."""
    params: tuple[Param, ...] = ()
    body: ModelName | None = None
    """The JSON request body's model."""

    @property
    def upgrades(self) -> bool:
        """Whether the route is a WebSocket (it answers ``101 Switching Protocols``)."""
        return any(answer.status == 101 for answer in self.answers)


def route(
    name: str,
    path: str,
    summary: str,
    *answers: Answer,
    method: Method = "GET",
    access: Access = "token",
    params: tuple[Param, ...] = (),
    body: ModelName | None = None,
) -> Route:
    """A route of the table (a GET that needs the token unless said otherwise)."""
    return Route(name, method, path, access, summary, answers, params, body)


def ok(model: ModelName, description: str) -> Answer:
    """A 200 with a JSON body of ``model``."""
    return Answer(200, description, model=model)


def text(media: str, description: str) -> Answer:
    """A 200 with a body of type ``media`` that is not a model."""
    return Answer(200, description, media=media)


def refused(status: int, description: str) -> Answer:
    """An error answer: the closed-code ``ErrorResponse`` body."""
    return Answer(status, description, model="ErrorResponse")


def query(name: str, schema: Mapping[str, object], description: str) -> Param:
    """An optional query parameter."""
    return Param(name, "query", schema, description)


SWITCHING: Final = Answer(101, "switching protocols")
AGENT_PHASE: Final = refused(409, "the agent phase is running")
OFFSET: Final = query(
    "offset", {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}, "byte offset to read from"
)
SIDE: Final = {"type": "integer", "minimum": 1, "maximum": 1000}

HEALTH: Final = route(
    "health",
    "/api/health",
    "Liveness; nothing about the run's content",
    ok("Health", "alive"),
    access="open",
)
RUN: Final = route("run", "/api/run", "Run metadata", ok("RunInfo", "the run"))
DIALOG: Final = route(
    "dialog",
    "/api/dialog",
    "Dialog entries from a byte offset",
    ok("DialogPage", "complete entries"),
    refused(400, "bad offset or limit"),
    params=(
        OFFSET,
        query("limit", {"type": "integer", "minimum": 1, "maximum": 10000}, "at most this many"),
    ),
)
STREAM: Final = route(
    "stream",
    "/api/ws",
    "WebSocket: backlog from an offset, then live frames (dialog, phase, diff, grade, heartbeat)",
    SWITCHING,
    refused(400, "not a WebSocket request or bad offset"),
    params=(OFFSET,),
)
DIFF: Final = route(
    "diff",
    "/api/diff",
    "Changes to the config files since the incident started",
    text(DIFF_MEDIA, "unified diff"),
)
FILES: Final = route(
    "files", "/api/files", "Changed config files", ok("FilesResponse", "changed files")
)
REFERENCE: Final = route(
    "reference",
    "/api/reference",
    "The reference patch (after the agent phase)",
    text(DIFF_MEDIA, "unified diff"),
    AGENT_PHASE,
    refused(404, "not written yet"),
)
SIMILARITY: Final = route(
    "similarity",
    "/api/similarity",
    "Share of changed lines the run's diff and the reference share",
    ok("Similarity", "similarity"),
    AGENT_PHASE,
    refused(404, "not written yet"),
)
GRADE: Final = route(
    "grade",
    "/api/grade",
    "The grade (result.json)",
    text(JSON_MEDIA, "result.json"),
    refused(404, "not graded yet"),
)
LOGS: Final = route(
    "logs",
    "/api/logs",
    "A log as chunked text, following it when asked",
    text("text/plain", "the log"),
    refused(400, "unknown log name, or a follow value not listed"),
    params=(
        query("name", {"type": "string", "enum": list(LOG_NAMES)}, "which log"),
        query(
            "follow",
            {"type": "string", "enum": list(FOLLOW_VALUES)},
            "1 or true: keep streaming new text until the run ends (at once when it has);"
            " 0 or false (the default): what is written now",
        ),
    ),
)
EXEC: Final = route(
    "exec",
    "/api/exec",
    "Run a command in the run (output capped at 1 MiB per stream)",
    ok("ExecResult", "finished or timed out"),
    refused(400, "bad request (a cwd outside the run folder included)"),
    refused(
        403,
        f"foreign Host or Origin, no '{ADMIN_HEADER}: 1' claim, or a program SREZ_EXEC_ALLOW"
        " does not list",
    ),
    refused(409, "the X-Request-ID was already used for a different request"),
    refused(413, "the body is too large"),
    refused(429, "too many sessions"),
    method="POST",
    access="admin",
    params=(
        Param(
            "X-Request-ID",
            "header",
            {"type": "string", "pattern": "^[\\x21-\\x7e]{1,128}$"},
            "a retried request with the same id and body returns the first answer; the same id"
            " with another body is a 409",
        ),
    ),
    body="ExecRequest",
)
PTY: Final = route(
    "pty",
    "/api/pty",
    'WebSocket: an interactive shell (binary frames; text frames {"resize": [cols, rows]})',
    SWITCHING,
    refused(400, "not a WebSocket request or bad size"),
    refused(
        403, f"foreign Host or Origin, no '{ADMIN_HEADER}: 1' claim, or no shell (SREZ_EXEC_ALLOW)"
    ),
    refused(429, "too many sessions"),
    access="admin",
    params=(query("cols", SIDE, "columns"), query("rows", SIDE, "rows")),
)
OPENAPI: Final = route(
    "openapi", "/api/openapi.json", "This document", text(JSON_MEDIA, "OpenAPI 3.1")
)

ROUTES: Final[tuple[Route, ...]] = (
    HEALTH,
    RUN,
    DIALOG,
    STREAM,
    DIFF,
    FILES,
    REFERENCE,
    SIMILARITY,
    GRADE,
    LOGS,
    EXEC,
    PTY,
    OPENAPI,
)
"""Every route of the public API, in the document's order."""
ACCESS_BY_PATH: Final[Mapping[str, Access]] = {entry.path: entry.access for entry in ROUTES}
"""Who may call each path (one access per path: the table's tests check it)."""
