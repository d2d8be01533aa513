"""What the MCP server needs of an episode, whoever hosts it, and the rules of its tool calls.

An :class:`EpisodePort` hands out the task (``GET /task`` of the agent socket) and executes one
tool call at a time, answering with the observation exactly as the agent socket writes it. Two
hosts implement it: a run's agent socket (:mod:`.socket_port`, the daemon records every call) and
an episode in this process (:mod:`.inline_port`). :class:`ToolCalls` is the part both share: the
translation of a call into the agent socket's request (the one every host applies,
:func:`~srez_daemon.protocol.agent.tool_call`) and the end of the episode, after which a call is
refused without reaching the host, so nothing more is recorded.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson
from pydantic import ValidationError

from srez_client.errors import ClientError
from srez_daemon.protocol.agent import tool_call
from srez_daemon.protocol.api import AgentTask, StepObservation

ENDED: Final = (
    "the episode is over (it was submitted, or its step budget is used): nothing was executed"
)
"""What a call after the end of the episode is told."""
PROMPT_NAME: Final = "incident"
"""The MCP prompt that carries the incident prompt."""


class PortError(ClientError):
    """The host refused a request before executing it, with the agent socket's error code and
    message (``bad_request`` for a submit it cannot take, ``conflict`` once the agent phase is
    over ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def ended(cls) -> PortError:
        """The refusal of a call after the end of the episode."""
        return cls("conflict", ENDED)

    @classmethod
    def bad_request(cls, message: str) -> PortError:
        """A request the agent socket refuses as malformed (a submit it cannot take)."""
        return cls("bad_request", message)

    @classmethod
    def unreachable(cls, message: str) -> PortError:
        """The agent socket did not answer (not one of its codes: it said nothing)."""
        return cls("unreachable", message)

    def body(self) -> str:
        """The agent socket's error body for this error, as text."""
        return orjson.dumps({"error": {"code": self.code, "message": self.message}}).decode()


@dataclass(frozen=True, slots=True)
class Observation:
    """What one tool call returned: the observation as the agent socket writes it."""

    text: str
    """The response body (a ``StepObservation`` as JSON)."""
    ok: bool
    """Whether the call was valid (an invalid one still costs a step)."""
    done: bool
    """Whether the episode is over."""

    @classmethod
    def from_body(cls, body: bytes) -> Observation:
        """An observation from the agent socket's response body (kept as it is)."""
        data = orjson.loads(body)
        return cls(text=body.decode(), ok=bool(data.get("ok")), done=bool(data.get("done")))

    @classmethod
    def from_step(cls, observation: Mapping[str, Any]) -> Observation:
        """An observation from the simulator's, encoded as the agent socket encodes it."""
        wire = StepObservation.model_validate(observation)
        return cls.from_body(orjson.dumps(wire.model_dump(mode="json", by_alias=True)))


class EpisodePort(ABC):
    """One episode as its agent reaches it."""

    @abstractmethod
    async def task(self) -> AgentTask:
        """The task as ``GET /task`` gives it (prompt, step budget, run seed)."""

    @abstractmethod
    async def call(self, tool: str, args: dict[str, Any]) -> Observation:
        """Executes (and records) one tool call; ``submit`` is the agent socket's ``POST /submit``.

        Raises:
            PortError: If the host refused the request (nothing was executed).
        """

    async def close(self) -> None:  # noqa: B027 - most ports hold nothing
        """Releases what the port holds."""


@dataclass(frozen=True, slots=True)
class CallResult:
    """What an MCP client gets for one tool call."""

    text: str
    """The observation, or the error body of a refused call."""
    is_error: bool
    """An invalid call, a refused one, or one after the end: an MCP tool error."""


class ToolCalls:
    """The tool calls of one episode, one at a time, until it ends."""

    def __init__(self, port: EpisodePort) -> None:
        self.port = port
        self.ended = False
        self._one_at_a_time = asyncio.Lock()

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> CallResult:
        """Executes the call ``name(arguments)`` (any name: an unknown one is the simulator's to
        refuse, and costs a step, as on the agent socket)."""
        async with self._one_at_a_time:
            if self.ended:
                return CallResult(PortError.ended().body(), is_error=True)
            tool, args = tool_call({"tool": name, "args": dict(arguments or {})})
            try:
                observation = await self.port.call(tool, args)
            except PortError as e:
                if e.code == "conflict":  # the host ended the agent phase: so does this session
                    self.ended = True
                return CallResult(e.body(), is_error=True)
            self.ended = observation.done
            return CallResult(observation.text, is_error=not observation.ok)


def first_error(error: ValidationError) -> str:
    """A validation error in the agent socket's words: where, then what."""
    first = error.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "body"
    return f"{where}: {first['msg']}"
