"""The OpenAPI 3.1 document of the public API, generated from the wire models (DESIGN.md §4).

It is held to the server by a schemathesis run against a live daemon
(``tests/daemon/test_openapi_conformance.py``): every status, header and body the server sends
must be one the document describes, and what the document forbids the server must refuse.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from srez_daemon.protocol.api import (
    DialogPage,
    ErrorResponse,
    ExecRequest,
    ExecResult,
    FilesResponse,
    Health,
    RunInfo,
    Similarity,
)

REF: Final = "#/components/schemas/{model}"
MAX_OFFSET: Final = 10**18 - 1
"""The largest dialog offset the server accepts (18 digits)."""
MODELS: Final[tuple[type[BaseModel], ...]] = (
    DialogPage,
    ErrorResponse,
    ExecRequest,
    ExecResult,
    FilesResponse,
    Health,
    RunInfo,
    Similarity,
)


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


def _text(media: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {media: {"schema": {"type": "string"}}}}


def _error(description: str) -> dict[str, Any]:
    return _json(ErrorResponse, description)


def _query(
    name: str, schema: dict[str, Any], description: str, *, required: bool = False
) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "schema": schema,
        "description": description,
    }


def _op(
    summary: str,
    responses: dict[str, Any],
    *,
    params: list[dict[str, Any]] | None = None,
    secured: bool = True,
    body: type[BaseModel] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": dict(responses)}
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    if secured:
        op["responses"]["401"] = _error("missing or wrong token")
    else:
        op["security"] = []
    op["responses"].setdefault("403", _error("foreign Host or Origin"))
    return op


def openapi_document(version: str) -> dict[str, Any]:
    """The whole document: paths, the bearer scheme and the component schemas."""
    _, defs = models_json_schema([(m, "serialization") for m in MODELS], ref_template=REF)
    offset = _query(
        "offset",
        {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
        "byte offset to read from",
    )
    paths: dict[str, Any] = {
        "/api/health": {
            "get": _op(
                "Liveness; nothing about the run's content",
                {"200": _json(Health, "alive")},
                secured=False,
            )
        },
        "/api/run": {"get": _op("Run metadata", {"200": _json(RunInfo, "the run")})},
        "/api/dialog": {
            "get": _op(
                "Dialog entries from a byte offset",
                {
                    "200": _json(DialogPage, "complete entries"),
                    "400": _error("bad offset or limit"),
                },
                params=[
                    offset,
                    _query(
                        "limit",
                        {"type": "integer", "minimum": 1, "maximum": 10000},
                        "at most this many",
                    ),
                ],
            )
        },
        "/api/ws": {
            "get": _op(
                "WebSocket: backlog from an offset, then live frames (dialog, phase, diff, grade, heartbeat)",
                {
                    "101": {"description": "switching protocols"},
                    "400": _error("not a WebSocket request or bad offset"),
                },
                params=[offset],
            )
        },
        "/api/diff": {
            "get": _op(
                "Changes to the config files since the incident started",
                {"200": _text("text/x-diff", "unified diff")},
            )
        },
        "/api/files": {
            "get": _op("Changed config files", {"200": _json(FilesResponse, "changed files")})
        },
        "/api/reference": {
            "get": _op(
                "The reference patch (after the agent phase)",
                {
                    "200": _text("text/x-diff", "unified diff"),
                    "409": _error("the agent phase is running"),
                    "404": _error("not written yet"),
                },
            )
        },
        "/api/similarity": {
            "get": _op(
                "Share of changed lines the run's diff and the reference share",
                {
                    "200": _json(Similarity, "similarity"),
                    "409": _error("the agent phase is running"),
                    "404": _error("not written yet"),
                },
            )
        },
        "/api/grade": {
            "get": _op(
                "The grade (result.json)",
                {
                    "200": {
                        "description": "result.json",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "404": _error("not graded yet"),
                },
            )
        },
        "/api/logs": {
            "get": _op(
                "A log as chunked text, following it when asked",
                {
                    "200": _text("text/plain", "the log"),
                    "400": _error("unknown log name, or a follow value not listed"),
                },
                params=[
                    _query(
                        "name",
                        {"type": "string", "enum": ["agent", "evaluator", "daemon"]},
                        "which log",
                    ),
                    _query(
                        "follow",
                        {"type": "string", "enum": ["0", "1", "false", "true"]},
                        "1 or true: keep streaming new text until the run ends (at once when it"
                        " has); 0 or false (the default): what is written now",
                    ),
                ],
            )
        },
        "/api/exec": {
            "post": _op(
                "Run a command in the run (output capped at 1 MiB per stream)",
                {
                    "200": _json(ExecResult, "finished or timed out"),
                    "400": _error("bad request (a cwd outside the run folder included)"),
                    "403": _error(
                        "foreign Host or Origin, or a program SREZ_EXEC_ALLOW does not list"
                    ),
                    "409": _error("the X-Request-ID was already used for a different request"),
                    "413": _error("the body is too large"),
                    "429": _error("too many sessions"),
                },
                params=[
                    {
                        "name": "X-Request-ID",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,128}$"},
                        "description": "a retried request with the same id and body returns the"
                        " first answer; the same id with another body is a 409",
                    }
                ],
                body=ExecRequest,
            )
        },
        "/api/pty": {
            "get": _op(
                'WebSocket: an interactive shell (binary frames; text frames {"resize": [cols, rows]})',
                {
                    "101": {"description": "switching protocols"},
                    "400": _error("not a WebSocket request or bad size"),
                    "403": _error("foreign Host or Origin, or no shell (SREZ_EXEC_ALLOW)"),
                    "429": _error("too many sessions"),
                },
                params=[
                    _query("cols", {"type": "integer", "minimum": 1, "maximum": 1000}, "columns"),
                    _query("rows", {"type": "integer", "minimum": 1, "maximum": 1000}, "rows"),
                ],
            )
        },
        "/api/openapi.json": {
            "get": _op(
                "This document",
                {
                    "200": {
                        "description": "OpenAPI 3.1",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            )
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "srez run daemon",
            "version": version,
            "description": "One daemon per run: the dialog, the diff, the reference after the agent phase, the grade, logs, exec and a pty.",
        },
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
