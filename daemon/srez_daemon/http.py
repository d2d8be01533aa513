"""JSON responses and the closed-code error body, shared by every route of the public API and
the agent socket (docs/design.md §4, §5).

Bodies are pydantic models serialised with orjson; an error is always
``{"error": {"code": <closed code>, "message": <one line>}}`` with the matching status, never a
traceback: :func:`errors_middleware` turns every failure into one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias

import orjson
from aiohttp import web

if TYPE_CHECKING:  # kept out of the import: the daemon answers health before pydantic loads
    from pydantic import BaseModel

    from srez_daemon.protocol.api import ErrorCode

logger = logging.getLogger(__name__)

Handler: TypeAlias = Callable[[web.Request], Awaitable[web.StreamResponse]]
JSON: Final = "application/json"
MAX_BODY: Final = 1 << 20
"""The largest request body either server reads (a bigger one is a 413)."""
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


def method_not_allowed(method: str, path: str, allow: str) -> web.Response:
    """A 405 with the ``Allow`` header RFC 9110 requires (aiohttp's router lists the methods,
    HEAD included wherever GET is)."""
    message = f"{method} is not allowed on {path} (allowed: {allow})"
    return error_response("method_not_allowed", message, {"Allow": allow})


def http_error_response(request: web.Request, error: web.HTTPException) -> web.Response:
    """aiohttp's own HTTP errors (unknown route, wrong method, body too large...) as the
    closed-code error body."""
    code: ErrorCode = "bad_request"
    if error.status == 404:
        code = "not_found"
    elif error.status == 405:
        allowed = error.headers.get("Allow", "").replace(" ", "").split(",")
        return method_not_allowed(request.method, request.path, ", ".join(sorted(allowed)))
    elif error.status == 413:
        code = "payload_too_large"
    return error_response(code, f"{request.method} {request.path}: {error.reason}")


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes the closed-code error body; never a traceback."""
    try:
        return await handler(request)
    except ApiError as e:
        return e.response()
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return http_error_response(request, e)
    except Exception:  # an answer the caller can parse, never a plain-text 500
        logger.exception("unhandled error in %s %s", request.method, request.path)
        return error_response("internal", "the daemon failed to answer; see logs/daemon.log")


class ApiError(Exception):
    """Raise inside a handler to answer with a closed-code error."""

    def __init__(
        self, code: ErrorCode, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.headers = headers

    def response(self) -> web.Response:
        return error_response(self.code, self.message, self.headers)
