"""The live stream of ``/api/ws``, followed across dropped connections (docs/design.md §4).

:func:`follow` is what :meth:`srez_client.daemon_client.api.DaemonClient.stream` runs: it opens
the WebSocket from an offset, yields frames, and when the connection drops or goes silent reopens
it from the last ``next_offset`` it delivered, with bounded backoff (:class:`ReconnectPolicy`).
Dialog frames that were already delivered are dropped, so each entry reaches the caller once, in
order. It ends when the run's final phase (``done`` or ``error``) was seen and every entry up to
the dialog's end, which that frame states (``end_offset``), was delivered; when the daemon is gone
after that phase; or when told to stop.

It needs of the daemon's client only what :class:`StreamSource` names, so this module does not
import the client (which imports it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Final, Protocol

import aiohttp
from pydantic import TypeAdapter, ValidationError

from srez_client.errors import DaemonAPIError, DaemonUnreachableError
from srez_daemon.protocol import ErrorEntry, routes
from srez_daemon.protocol.api import DialogFrame, HeartbeatFrame, PhaseFrame, StreamFrame

logger = logging.getLogger(__name__)

FRAME_ADAPTER: Final[TypeAdapter[StreamFrame]] = TypeAdapter(StreamFrame)
"""Validates one WebSocket text frame of ``/api/ws``."""

TERMINAL_PHASES: Final = frozenset({"done", "error"})
"""Phases after which a run's dialog no longer grows."""
AFTER_END_CONNECT_S: Final = 2.0
"""Handshake time allowed to a reconnect once the run has ended (its daemon may be exiting)."""


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How :meth:`DaemonClient.stream` retries a lost WebSocket.

    The delay doubles from ``initial_s`` up to ``max_s``; after ``attempts`` consecutive failures
    (a connection that delivers a frame resets the count) the stream gives up.
    """

    initial_s: float = 0.05
    """First delay."""
    max_s: float = 2.0
    """Longest delay."""
    attempts: int = 8
    """Consecutive failed connections before giving up (about 7 s with the defaults)."""
    idle_s: float = 45.0
    """A connection silent this long is treated as dropped (the daemon's heartbeat is 15 s)."""

    def delay(self, failures: int) -> float:
        """The delay before attempt number ``failures`` (from 1)."""
        return float(min(self.max_s, self.initial_s * (2 ** max(0, failures - 1))))


class StreamSource(Protocol):
    """What following the stream needs of a daemon's client (``DaemonClient`` is one)."""

    base_url: str
    """``http://host:port`` of the daemon, for messages."""
    reconnect: ReconnectPolicy
    """How a lost connection is retried."""

    async def verify(self) -> object:
        """Proves the daemon is the run's (docs/security.md A2); raises if it is not."""
        ...

    async def websocket(
        self,
        route: routes.Route,
        params: dict[str, str],
        *,
        connect_timeout_s: float | None = None,
    ) -> aiohttp.ClientWebSocketResponse:
        """Opens a WebSocket route of the daemon (a route of the table)."""
        ...


async def follow(
    source: StreamSource,
    offset: int = 0,
    *,
    stop: asyncio.Event | None = None,
    heartbeats: bool = False,
) -> AsyncGenerator[StreamFrame, None]:
    """Follow ``/api/ws`` from ``offset`` (see :meth:`DaemonClient.stream`)."""
    state = _StreamState(next_offset=offset, heartbeats=heartbeats)
    failures = 0
    reconnecting = False
    while not (stop is not None and stop.is_set()):
        try:
            quick = AFTER_END_CONNECT_S if state.terminal else None
            if reconnecting:
                await _prove_again(source, quick)
            reconnecting = True
            params = {"offset": str(state.next_offset)}
            ws = await source.websocket(routes.STREAM, params, connect_timeout_s=quick)
        except DaemonUnreachableError:
            ws = None
            if state.terminal:  # the daemon exits once a run is done: nothing more to read
                logger.info("daemon gone after the run ended; stream ends at %d", state.next_offset)
                return
        except DaemonAPIError as e:
            if e.status < 500:
                raise
            ws = None
        if ws is not None:
            async with ws, contextlib.aclosing(_frames(source, ws, state, stop)) as frames:
                async for frame in frames:
                    failures = 0
                    yield frame
            if state.finished or (stop is not None and stop.is_set()):
                return
        failures += 1
        if failures > source.reconnect.attempts:
            msg = f"daemon at {source.base_url} unreachable after {failures - 1} reconnects; the stream stopped at offset {state.next_offset}"
            raise DaemonUnreachableError(msg)
        logger.debug("stream dropped at offset %d; reconnect #%d", state.next_offset, failures)
        await asyncio.sleep(source.reconnect.delay(failures))


async def _prove_again(source: StreamSource, limit_s: float | None) -> None:
    """The daemon went away, and whoever holds its port now must prove again that it is the
    run's daemon (docs/security.md A2) before a frame of its is believed. After the run's end the
    check is bounded like the connection: a daemon shutting down may accept and never answer."""
    try:
        async with asyncio.timeout(limit_s):
            await source.verify()
    except TimeoutError as e:
        msg = f"daemon at {source.base_url} did not answer within {limit_s:g} s"
        raise DaemonUnreachableError(msg) from e


async def _frames(
    source: StreamSource,
    ws: aiohttp.ClientWebSocketResponse,
    state: _StreamState,
    stop: asyncio.Event | None,
) -> AsyncGenerator[StreamFrame, None]:
    """The new frames of one connection; returns when it drops, or the stream is over."""
    while True:
        msg = await _receive(ws, stop, source.reconnect.idle_s)
        if msg is None or msg.type != aiohttp.WSMsgType.TEXT:
            return  # stopped, silent, closed or an error: the caller decides
        frame = _parse(msg.data)
        if isinstance(frame, DialogFrame):
            if not state.accept(frame):
                continue
        elif isinstance(frame, PhaseFrame) and frame.phase in TERMINAL_PHASES:
            state.terminal = True
            state.end = frame.end_offset
        elif isinstance(frame, HeartbeatFrame) and not state.heartbeats:
            continue
        yield frame
        if state.finished:
            return


def _parse(data: str) -> StreamFrame:
    try:
        return FRAME_ADAPTER.validate_json(data)
    except ValidationError as e:
        detail = str(e).splitlines()[0]
        err = DaemonAPIError("bad_frame", f"invalid stream frame: {detail}", 200)
        raise err from e


@dataclass(slots=True)
class _StreamState:
    """What a stream has delivered so far."""

    next_offset: int
    terminal: bool = False
    end: int | None = None
    """Where the finished dialog ends, as the final phase frame said."""
    heartbeats: bool = False

    def accept(self, frame: DialogFrame) -> bool:
        """Whether a dialog frame is new (and move past it)."""
        entry = frame.entry
        if isinstance(entry, ErrorEntry) and entry.kind == "file_reset":
            self.next_offset = frame.next_offset  # the file restarted: offsets start again
            self.end = None  # a figure stated before the reset may not fit the file now
            return True
        if frame.offset < self.next_offset:
            return False  # already delivered before a reconnect
        if frame.offset > self.next_offset:
            logger.warning(
                "stream skipped bytes %d..%d of the dialog", self.next_offset, frame.offset
            )
        self.next_offset = frame.next_offset
        return True

    @property
    def finished(self) -> bool:
        """The final phase was seen and every entry up to the dialog's end was delivered."""
        return self.terminal and self.end is not None and self.next_offset >= self.end


async def _receive(
    ws: aiohttp.ClientWebSocketResponse, stop: asyncio.Event | None, idle_s: float
) -> aiohttp.WSMessage | None:
    """The next message, or None when ``stop`` was set or nothing came for ``idle_s``."""
    if stop is None:
        try:
            return await ws.receive(timeout=idle_s)
        except TimeoutError:
            return None
    receiving = asyncio.ensure_future(ws.receive(timeout=idle_s))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({receiving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (receiving, stopping):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                    await task  # leave no task pending behind us
    if stop.is_set() or receiving.cancelled():
        return None
    try:
        return receiving.result()
    except TimeoutError:
        return None
