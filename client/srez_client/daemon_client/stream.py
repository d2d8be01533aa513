"""The live stream of ``/api/ws``, followed across dropped connections (DESIGN.md §4).

:func:`follow` is what :meth:`srez_client.daemon_client.api.DaemonClient.stream` runs: it opens the WebSocket
from an offset, yields frames, and when the connection drops or goes silent reopens it from the
last ``next_offset`` it delivered, with bounded backoff (:class:`ReconnectPolicy`). Dialog frames
that were already delivered are dropped, so each entry reaches the caller once, in order. It ends
when a ``done`` or ``error`` phase was seen and the dialog is drained, or when told to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import aiohttp
from pydantic import TypeAdapter, ValidationError

from srez_client.errors import DaemonAPIError, DaemonUnreachableError
from srez_daemon.protocol import ErrorEntry, routes
from srez_daemon.protocol.api import DialogFrame, HeartbeatFrame, PhaseFrame, StreamFrame

if TYPE_CHECKING:
    from srez_client.daemon_client.api import DaemonClient

logger = logging.getLogger(__name__)

FRAME_ADAPTER: Final[TypeAdapter[StreamFrame]] = TypeAdapter(StreamFrame)
"""Validates one WebSocket text frame of ``/api/ws``."""

TERMINAL_PHASES: Final = frozenset({"done", "error"})
"""Phases after which a run's dialog no longer grows."""
END_QUERY_DELAY_S: Final = 0.25
"""How long after a terminal phase the stream asks where the dialog ends."""
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


async def follow(
    client: DaemonClient,
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
                await _prove_again(client, quick)
            reconnecting = True
            params = {"offset": str(state.next_offset)}
            ws = await client.websocket(routes.STREAM, params, connect_timeout_s=quick)
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
            async with ws, contextlib.aclosing(_frames(client, ws, state, stop)) as frames:
                async for frame in frames:
                    failures = 0
                    yield frame
            if state.finished or (stop is not None and stop.is_set()):
                return
        failures += 1
        if failures > client.reconnect.attempts:
            msg = f"daemon at {client.base_url} unreachable after {failures - 1} reconnects; the stream stopped at offset {state.next_offset}"
            raise DaemonUnreachableError(msg)
        logger.debug("stream dropped at offset %d; reconnect #%d", state.next_offset, failures)
        await asyncio.sleep(client.reconnect.delay(failures))


async def _prove_again(client: DaemonClient, limit_s: float | None) -> None:
    """The daemon went away, and whoever holds its port now must prove again that it is the
    run's daemon (SECURITY.md A2) before a frame of its is believed. After the run's end the
    check is bounded like the connection: a daemon shutting down may accept and never answer."""
    try:
        async with asyncio.timeout(limit_s):
            await client.verify()
    except TimeoutError as e:
        msg = f"daemon at {client.base_url} did not answer within {limit_s:g} s"
        raise DaemonUnreachableError(msg) from e


async def _frames(
    client: DaemonClient,
    ws: aiohttp.ClientWebSocketResponse,
    state: _StreamState,
    stop: asyncio.Event | None,
) -> AsyncGenerator[StreamFrame, None]:
    """The new frames of one connection; returns when it drops, or the stream is over.

    Once a terminal phase is seen, the end of the dialog is asked for over HTTP in a task of its
    own while frames keep being read: a daemon that is shutting down waits for its viewers to
    read its close, so the stream must never stop reading to wait for an answer.
    """
    end_task: asyncio.Task[int | None] | None = None
    try:
        while True:
            event, msg = await _receive(ws, stop, client.reconnect.idle_s, end_task)
            if event == "end" and end_task is not None:
                state.end = state.end if state.end is not None else end_task.result()
                end_task = None
                if state.finished:
                    return
                continue
            if msg is None or msg.type != aiohttp.WSMsgType.TEXT:
                return  # stopped, silent, closed or an error: the caller decides
            frame = _parse(msg.data)
            if isinstance(frame, DialogFrame):
                if not state.accept(frame):
                    continue
            elif isinstance(frame, PhaseFrame) and frame.phase in TERMINAL_PHASES:
                state.terminal = True
                if state.end is None and end_task is None:
                    end_task = asyncio.ensure_future(_end_of_dialog(client, state))
            elif isinstance(frame, HeartbeatFrame) and not state.heartbeat(frame):
                continue
            yield frame
            if state.finished:
                return
    finally:
        if end_task is not None:
            end_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await end_task


async def _end_of_dialog(client: DaemonClient, state: _StreamState) -> int | None:
    """Where the dialog ends, asked a moment after the run ended.

    A daemon without ``keep`` closes its viewers and exits right after ``done``; a request sent
    into its shutdown may get no answer at all. Waiting :data:`END_QUERY_DELAY_S` first lets
    the close arrive (the stream then ends on the refused reconnect) before anything is asked.
    """
    await asyncio.sleep(END_QUERY_DELAY_S)
    return await client.dialog_end(state.next_offset)


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
    heartbeats: bool = False

    def accept(self, frame: DialogFrame) -> bool:
        """Whether a dialog frame is new (and move past it)."""
        entry = frame.entry
        if isinstance(entry, ErrorEntry) and entry.kind == "file_reset":
            self.next_offset = frame.next_offset  # the file restarted: offsets start again
            self.end = None
            return True
        if frame.offset < self.next_offset:
            return False  # already delivered before a reconnect
        if frame.offset > self.next_offset:
            logger.warning(
                "stream skipped bytes %d..%d of the dialog", self.next_offset, frame.offset
            )
        self.next_offset = frame.next_offset
        return True

    def heartbeat(self, frame: HeartbeatFrame) -> bool:
        """Whether to pass a heartbeat on; once the run is over it also tells where the dialog
        ends."""
        if self.terminal and self.end is None:
            self.end = frame.offset
        return self.heartbeats

    @property
    def finished(self) -> bool:
        """A terminal phase was seen and every entry up to the dialog's end was delivered."""
        return self.terminal and self.end is not None and self.next_offset >= self.end


Event = Literal["message", "stop", "idle", "end"]


async def _receive(
    ws: aiohttp.ClientWebSocketResponse,
    stop: asyncio.Event | None,
    idle_s: float,
    end_task: asyncio.Task[int | None] | None,
) -> tuple[Event, aiohttp.WSMessage | None]:
    """The next message, or why there is none: ``stop`` was set, nothing came for ``idle_s``, or
    ``end_task`` finished (its result is the dialog's end)."""
    if stop is None and end_task is None:
        try:
            return "message", await ws.receive(timeout=idle_s)
        except TimeoutError:
            return "idle", None
    receiving = asyncio.ensure_future(ws.receive(timeout=idle_s))
    waits: set[asyncio.Future[Any]] = {receiving}
    stopping = asyncio.ensure_future(stop.wait()) if stop is not None else None
    if stopping is not None:
        waits.add(stopping)
    if end_task is not None:
        waits.add(end_task)
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (receiving, stopping):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                    await task  # leave no task pending behind us
    if stop is not None and stop.is_set():
        return "stop", None
    if receiving.done() and not receiving.cancelled():
        try:
            return "message", receiving.result()
        except TimeoutError:
            return "idle", None
    return "end", None
