"""JSON responses and the closed-code error body, shared by every route (DESIGN.md §4).

Bodies are pydantic models serialised with orjson; an error is always
``{"error": {"code": <closed code>, "message": <one line>}}`` with the matching status, never a
traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

import orjson
from aiohttp import web

if TYPE_CHECKING:  # kept out of the import: the daemon answers health before pydantic loads
    from pydantic import BaseModel

    from srez_daemon.protocol.api import ErrorCode

JSON: Final = "application/json"
STATUS: Final[dict[str, int]] = {
    "unauthorized": 401,
    "forbidden_host": 403,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "bad_request": 400,
    "payload_too_large": 413,
    "agent_phase": 409,
    "conflict": 409,
    "no_grade": 404,
    "too_many_sessions": 429,
    "too_many_notes": 429,
    "unavailable": 503,
    "storage_failed": 507,
    "internal": 500,
}


def json_response(model: BaseModel, status: int = 200) -> web.Response:
    """A JSON response from a wire model."""
    body = orjson.dumps(model.model_dump(mode="json", by_alias=True))
    return web.Response(body=body, status=status, content_type=JSON)


def error_response(
    code: ErrorCode, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    """The error body (``protocol.api.ErrorResponse``) with the status that goes with the code."""
    body = orjson.dumps({"error": {"code": code, "message": message}})
    return web.Response(body=body, status=STATUS[code], content_type=JSON, headers=headers)


def method_not_allowed(method: str, path: str, allowed: Iterable[str]) -> web.Response:
    """A 405 with the ``Allow`` header RFC 9110 requires (HEAD wherever GET is)."""
    methods = {m for m in allowed if m}
    if "GET" in methods:
        methods.add("HEAD")
    allow = ", ".join(sorted(methods))
    message = f"{method} is not allowed on {path} (allowed: {allow})"
    return error_response("method_not_allowed", message, {"Allow": allow})


def http_error_response(request: web.Request, error: web.HTTPException) -> web.Response:
    """aiohttp's own HTTP errors (unknown route, wrong method, body too large...) as the
    closed-code error body."""
    code: ErrorCode = "bad_request"
    if error.status == 404:
        code = "not_found"
    elif error.status == 405:
        allowed = error.headers.get("Allow", "")
        return method_not_allowed(request.method, request.path, allowed.replace(" ", "").split(","))
    elif error.status == 413:
        code = "payload_too_large"
    return error_response(code, f"{request.method} {request.path}: {error.reason}")


class ApiError(Exception):
    """Raise inside a handler to answer with a closed-code error."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message

    def response(self) -> web.Response:
        return error_response(self.code, self.message)
