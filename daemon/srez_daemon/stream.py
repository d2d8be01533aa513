"""The live dialog stream (``GET /api/ws``) and dialog pages (``GET /api/dialog``), docs/design.md
§4.

One :class:`StreamHub` per daemon fans a :class:`DialogTail`'s frames, and the run's phase, diff
and grade events, out to every viewer. What a viewer gets, in order: the backlog of dialog frames
from its ``?offset=``, the latest phase, diff and grade frames, then every frame as it happens,
and a heartbeat every ``heartbeat_s`` seconds.

Resuming: every dialog frame carries ``next_offset``; a viewer that reconnects with the
``next_offset`` of the last frame it got sees no gap and no duplicate (offsets are those of the
current file: after a ``file_reset`` frame at K, drop what you hold from K on).

Cost (docs/design.md §11): each frame is encoded once (orjson), framed
once, and the same bytes go to every viewer; per-message compression is off, so no viewer makes
the daemon compress again. A viewer that is caught up (nothing queued, little unsent) gets the
frame written straight to its transport: no task switch per viewer, which is what lets one loop
feed hundreds of viewers. Otherwise frames wait in a bounded queue per viewer, sent by its own
task with flow control, so a viewer never slows another; a viewer whose queue is full is closed
with :data:`CLOSE_RESUME`, which tells it to reconnect from its last offset.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from dataclasses import dataclass, field
from typing import Final

import orjson
from aiohttp import WSCloseCode, WSMsgType, web
from pydantic import BaseModel

from srez_core.aio import cancel_and_wait, spawn
from srez_core.clock import system_clock, utc_timestamp
from srez_daemon.http import ApiError, error_response, json_response
from srez_daemon.protocol.api import DialogFrame, DiffFrame, GradeFrame, HeartbeatFrame, PhaseFrame
from srez_daemon.tail import DialogTail

logger = logging.getLogger(__name__)

CLOSE_RESUME: Final = 4000
"""Close code for a viewer that fell behind: reconnect with ``?offset=`` set to the ``next_offset``
of the last dialog frame received."""
CLOSE_GOING_AWAY: Final = int(WSCloseCode.GOING_AWAY)
"""Close code when the daemon shuts down (1001)."""
PAGE_LIMIT: Final = 1000
"""Entries in one ``GET /api/dialog`` page by default (and per backlog read)."""
MAX_PAGE_LIMIT: Final = 10_000
"""Most entries a page may ask for; a page also stops after 8 MiB of lines."""
_MAX_OFFSET_DIGITS: Final = 18
_RESUME_MESSAGE: Final = b"viewer too slow: reconnect with ?offset=<next_offset of the last frame>"
_DIRECT_LIMIT: Final = 64 * 1024  # unsent bytes above which a viewer goes back to its queue


@dataclass(eq=False, slots=True)
class _Viewer:
    ws: web.WebSocketResponse
    request: web.Request
    queue: asyncio.Queue[bytes]
    transport: asyncio.Transport | None
    close_code: int = int(WSCloseCode.OK)
    close_message: bytes = b""
    push: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    direct: bool = False
    """Its push task waits on an empty queue: frames may be written straight to the transport."""


class StreamHub:
    """Serves one dialog tail, and the events given to :meth:`publish`, to every viewer."""

    def __init__(
        self,
        tail: DialogTail,
        *,
        heartbeat_s: float = 15.0,
        max_queue: int = 1024,
        close_timeout_s: float = 2.0,
    ) -> None:
        """Build the hub; it listens to ``tail`` from now on (``tail`` may start later).

        Args:
            tail: The dialog tail to serve.
            heartbeat_s: Seconds between heartbeat frames.
            max_queue: Frames that may wait for one viewer before it is told to resume later.
            close_timeout_s: How long a closing handshake may take before the connection is cut.
        """
        self._tail = tail
        self._heartbeat_s = heartbeat_s
        self._max_queue = max_queue
        self._close_timeout_s = close_timeout_s
        self._viewers: set[_Viewer] = set()
        self._latest: dict[str, bytes] = {}  # "phase", "diff", "grade" -> the last frame sent
        self._ticker: asyncio.Task[None] | None = None
        self._closed = False
        self._remove_listener = tail.add_listener(self._on_dialog)

    @property
    def viewers(self) -> int:
        """Viewers connected now."""
        return len(self._viewers)

    def publish(self, frame: PhaseFrame | DiffFrame | GradeFrame) -> None:
        """Send a run event to every viewer now, and to each new viewer after its backlog.

        Args:
            frame: The event; the latest of each kind (``t``) is kept for new viewers.
        """
        data = _encode(frame)
        self._latest[frame.t] = data
        self._broadcast(data)

    async def handle_dialog_page(self, request: web.Request) -> web.Response:
        """``GET /api/dialog?offset=N&limit=M``: a :class:`DialogPage` of complete entries.

        ``offset`` (default 0) is a byte offset, normally 0 or a previous ``next_offset``; inside
        a line the page starts at the next line, past the end it is empty. ``limit`` is 1 to
        10,000 (default 1,000; a page also stops after 8 MiB of lines). Anything else is
        ``400 bad_request``.
        """
        try:
            offset = _int_query(request, "offset", 0, high=10**_MAX_OFFSET_DIGITS - 1)
            limit = _int_query(request, "limit", PAGE_LIMIT, low=1, high=MAX_PAGE_LIMIT)
        except ApiError as e:
            return e.response()
        return json_response(self._tail.read_page(offset, limit))

    async def handle_ws(self, request: web.Request) -> web.StreamResponse:
        """``GET /api/ws?offset=N``: the viewer's stream until either side closes it.

        A bad ``offset`` is ``400 bad_request`` before the upgrade; so is a request that is not a
        WebSocket upgrade. Messages from the viewer are read and ignored.
        """
        try:
            offset = _int_query(request, "offset", 0, high=10**_MAX_OFFSET_DIGITS - 1)
        except ApiError as e:
            return e.response()
        if self._closed:
            return error_response("unavailable", "the daemon is shutting down")
        ws = web.WebSocketResponse(
            compress=False, timeout=self._close_timeout_s, max_msg_size=64 * 1024
        )
        if not ws.can_prepare(request).ok:
            return error_response("bad_request", "GET /api/ws needs a WebSocket upgrade")
        await ws.prepare(request)
        transport = request.transport
        viewer = _Viewer(ws, request, asyncio.Queue(self._max_queue), transport)
        # No await from here to the spawn: the backlog ends at `until` and every frame after it
        # reaches the queue, so the viewer sees no gap and no duplicate.
        self._viewers.add(viewer)
        until = self._tail.end_offset
        latest = list(self._latest.values())
        self._ensure_ticker()
        push = viewer.push = spawn(self._push(viewer, offset, until, latest), name="ws-push")
        reader = spawn(_ignore_incoming(ws), name="ws-read")
        try:
            await asyncio.wait({push, reader}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._viewers.discard(viewer)
            push.cancel()
            reader.cancel()
            await asyncio.gather(push, reader, return_exceptions=True)
            await self._close_socket(viewer)
            viewer.done.set()
        return ws

    async def close(self) -> None:
        """Close every viewer with 1001 (going away) and stop serving; for app shutdown."""
        self._closed = True
        self._remove_listener()
        await cancel_and_wait(self._ticker)
        self._ticker = None
        viewers = list(self._viewers)
        for viewer in viewers:
            self._drop(viewer, CLOSE_GOING_AWAY, b"daemon shutting down")
        if viewers:
            waits = [spawn(v.done.wait(), name="ws-closed") for v in viewers]
            await asyncio.wait(waits, timeout=2 * self._close_timeout_s + 1)
            for wait in waits:
                wait.cancel()

    # ------------------------------------------------------------------ fan-out

    def _on_dialog(self, frame: DialogFrame) -> None:
        self._broadcast(_encode(frame))

    def _broadcast(self, data: bytes) -> None:
        wire = _text_frame(data)
        for viewer in list(self._viewers):
            if viewer.direct:
                # Invariant: while `direct`, the queue is empty and every frame taken from it has
                # been written, so a direct write keeps the order.
                transport = viewer.transport
                if (
                    transport is not None
                    and not transport.is_closing()
                    and not viewer.ws.closed
                    and transport.get_write_buffer_size() <= _DIRECT_LIMIT
                ):
                    transport.write(wire)
                    continue
                viewer.direct = False  # back to the queue, where the push task waits for drain
            try:
                viewer.queue.put_nowait(data)
            except asyncio.QueueFull:
                logger.info(
                    "viewer %s fell %d frames behind; closing it", _peer(viewer), self._max_queue
                )
                self._drop(viewer, CLOSE_RESUME, _RESUME_MESSAGE)

    def _drop(self, viewer: _Viewer, code: int, message: bytes) -> None:
        """Stop sending to a viewer; its handler closes the socket with ``code``."""
        self._viewers.discard(viewer)
        viewer.close_code, viewer.close_message = code, message
        if viewer.push is not None:
            viewer.push.cancel()

    def _ensure_ticker(self) -> None:
        if self._ticker is None or self._ticker.done():
            self._ticker = spawn(self._heartbeats(), name="ws-heartbeat")

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self._heartbeat_s)
            if self._viewers:
                ts = utc_timestamp(system_clock())
                self._broadcast(_encode(HeartbeatFrame(ts=ts, offset=self._tail.end_offset)))

    async def _push(self, viewer: _Viewer, offset: int, until: int, latest: list[bytes]) -> None:
        """Send the backlog up to ``until``, the latest events, then the viewer's queue."""
        ws = viewer.ws
        try:
            pos = offset
            while True:
                frames, after = self._tail.read_frames(pos, PAGE_LIMIT, until=until)
                for frame in frames:
                    await ws.send_frame(_encode(frame), WSMsgType.TEXT)
                if after <= pos or after >= until:
                    break
                pos = after
            for data in latest:
                await ws.send_frame(data, WSMsgType.TEXT)
            while True:
                viewer.direct = viewer.queue.empty()
                data = await viewer.queue.get()
                await ws.send_frame(data, WSMsgType.TEXT)
        except ConnectionResetError:  # aiohttp's ClientConnectionResetError is one
            logger.debug("viewer %s went away mid-send", _peer(viewer))

    async def _close_socket(self, viewer: _Viewer) -> None:
        """Close with the viewer's code; cut the connection if the handshake does not finish."""
        if viewer.ws.closed:
            return
        try:
            async with asyncio.timeout(self._close_timeout_s + 1):
                await viewer.ws.close(code=viewer.close_code, message=viewer.close_message)
        except TimeoutError:
            if viewer.transport is not None:
                viewer.transport.abort()  # it reads nothing: its buffer would hold the socket open


async def _ignore_incoming(ws: web.WebSocketResponse) -> None:
    """Read (and drop) what the viewer sends, so pings are answered and its close is seen."""
    async for _msg in ws:
        pass


def _encode(frame: BaseModel) -> bytes:
    return orjson.dumps(frame.model_dump(mode="json"))


def _text_frame(payload: bytes) -> bytes:
    """One unmasked, final text frame (RFC 6455 §5.2), as a server sends it uncompressed."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 1 << 16:
        return struct.pack("!BBH", 0x81, 126, size) + payload
    return struct.pack("!BBQ", 0x81, 127, size) + payload


def _peer(viewer: _Viewer) -> str:
    return str(viewer.request.remote or "?")


def _int_query(request: web.Request, name: str, default: int, *, low: int = 0, high: int) -> int:
    """An integer query parameter in ``[low, high]``; ApiError ``bad_request`` otherwise."""
    raw = request.query.get(name)
    if raw is None:
        return default
    value = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= _MAX_OFFSET_DIGITS else -1
    if not low <= value <= high:
        msg = f"{name}={raw[:24]!r} must be an integer from {low} to {high}"
        raise ApiError(code="bad_request", message=msg)
    return value
