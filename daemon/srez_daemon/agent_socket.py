"""The agent socket (docs/design.md §5): HTTP over a unix socket, reachable by the agent only.

It serves ``GET /task`` (the prompt, the step budget and, for the scripted oracle alone, the task
file), ``POST /tools/{name}`` (one action, executed and recorded by the daemon), ``POST /dialog``
(the agent's own assistant, thinking, provider_error and usage entries) and ``POST /submit``. Any
agent in any language that speaks this can be benchmarked.
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from aiohttp import web
from pydantic import BaseModel, ValidationError

from srez_daemon.http import MAX_BODY, ApiError, errors_middleware, json_response
from srez_daemon.protocol.agent import SUBMIT_TOOL
from srez_daemon.protocol.api import AgentNote, AgentTask, StepObservation, submit_args

Body = TypeVar("Body", bound=BaseModel)


class AgentPort:
    """What the agent socket needs from the run (implemented by the run controller)."""

    def agent_task(self) -> AgentTask:
        raise NotImplementedError

    async def agent_call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def agent_note(self, note: AgentNote) -> None:
        raise NotImplementedError


def create_agent_app(port: AgentPort) -> web.Application:
    """The agent socket's application."""
    app = web.Application(client_max_size=MAX_BODY, middlewares=[errors_middleware])

    async def task(_request: web.Request) -> web.Response:
        return json_response(port.agent_task())

    async def tool(request: web.Request) -> web.Response:
        args = await _json_object(request)
        obs = await port.agent_call(request.match_info["name"], args)
        return json_response(StepObservation.model_validate(obs))

    async def submit(request: web.Request) -> web.Response:
        body = await _json_object(request)
        try:
            args = submit_args(body)
        except ValidationError as e:
            raise ApiError(code="bad_request", message=_first_error(e)) from e
        obs = await port.agent_call(SUBMIT_TOOL, args)
        return json_response(StepObservation.model_validate(obs))

    async def dialog(request: web.Request) -> web.Response:
        await port.agent_note(await _body(request, AgentNote))
        return web.Response(status=204)

    app.router.add_get("/task", task)
    app.router.add_post("/tools/{name}", tool)
    app.router.add_post("/submit", submit)
    app.router.add_post("/dialog", dialog)
    return app


async def _json_object(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    if not raw:
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ApiError(code="bad_request", message=f"the body is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise ApiError(code="bad_request", message="the body must be a JSON object")
    return body


async def _body(request: web.Request, model: type[Body]) -> Body:
    """The request's JSON object as ``model``; a 400 naming the first wrong field otherwise."""
    try:
        return model.model_validate(await _json_object(request))
    except ValidationError as e:
        raise ApiError(code="bad_request", message=_first_error(e)) from e


def _first_error(e: ValidationError) -> str:
    first = e.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "body"
    return f"{where}: {first['msg']}"
