"""``GET /api/pty?cols=&rows=`` (WebSocket): a shell in the run folder (docs/design.md §4).

Binary frames carry bytes both ways; a text frame from the client must be
``{"resize": [cols, rows]}`` (anything else is ignored and logged). The shell is ``$SHELL -i``
(``/bin/bash -i`` without one) with ``TERM=xterm-256color``, in the run folder.

A session ends when the client closes the socket or vanishes, when the shell exits (reading the
pty fails with EIO), after ``pty_idle_s`` seconds without input or output, or at daemon shutdown.
Ending means, in this order: stop reading; SIGHUP (and SIGCONT) to the shell's process group and
to the group of each of its descendants (an interactive shell gives every job its own group);
up to ``HUP_GRACE_S`` for them to go; then SIGKILL to the group, to the descendants listed before
the hangup, to every process carrying the session's cookie and to every process still holding
the session's terminal (``procs``: this catches what ignored the hangup or left the tree,
``nohup``/``setsid`` escapees included, also one that dropped the cookie); reap the shell;
give back the session slot; close the pty in a worker thread; and only then answer the close,
so when a client's ``close()`` returns, the session's processes are gone.

Orphans re-parent to PID 1 (``tini`` in the container) or the nearest subreaper, which reaps
them; the daemon reaps only its own child, the shell, by pid (a ``waitpid(-1)`` reaper would
steal exit statuses from asyncio's subprocesses).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

from aiohttp import WSCloseCode, WSMsgType, web
from pydantic import ValidationError

from srez_core.aio import spawn
from srez_daemon.http import ApiError
from srez_daemon.probe import terminal_available as terminal_available  # re-exported
from srez_daemon.protocol.api import PtyResize
from srez_daemon.services import procs
from srez_daemon.services.limits import SessionLimiter
from srez_daemon.settings import DaemonSettings

if TYPE_CHECKING:  # loaded with the first terminal: the idle daemon does not need them
    import psutil
    from ptyprocess import PtyProcess  # type: ignore[import-untyped]

logger = logging.getLogger(__name__)

DEFAULT_SIZE: Final = (80, 24)
"""(cols, rows) when the query names none."""
MAX_SIDE: Final = 1000
CHUNK: Final = 65536
MAX_INPUT_FRAME: Final = 1 << 20
"""The largest frame a client may send (a big paste)."""
HUP_GRACE_S: Final = 0.5
"""How long the shell's group has after SIGHUP before everything left is SIGKILLed."""
WATCH_MAX: Final = 64
"""The most descendants whose exit is awaited during the hangup grace."""
REAP_WAIT_S: Final = 2.0
POLL_S: Final = 0.01
CLOSE_TIMEOUT_S: Final = 2.0
"""How long the close handshake may wait for a client that does not answer."""
HEARTBEAT_S: Final = 30.0
"""WebSocket ping period: finds a half-open connection even while the shell keeps printing."""


@dataclass(eq=False)
class _Session:
    proc: PtyProcess
    ws: web.WebSocketResponse
    cookie: str
    last_activity: float
    stop: asyncio.Future[tuple[int, str]]
    """Set, first reason wins, when something other than the client ends the session."""
    tty: str | None = None
    """The pty's slave (``/dev/pts/N``): what still holds it when the session ends is killed."""
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    warned: bool = False

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    @property
    def fd(self) -> int:
        return int(self.proc.fd)

    def touch(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()

    def request_stop(self, code: int, reason: str) -> None:
        if not self.stop.done():
            self.stop.set_result((code, reason))


class PtyService:
    """Serves ``/api/pty`` sessions.

    Args:
        settings: the daemon's settings (the run folder, ``pty_idle_s``).
        limiter: the session cap shared with the exec service.
    """

    def __init__(self, settings: DaemonSettings, limiter: SessionLimiter) -> None:
        self._settings = settings
        self._limiter = limiter
        self._sessions: set[_Session] = set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Handles ``GET /api/pty``: checks the query and the cap (400/429/503 before the
        upgrade), then serves the session until it ends."""
        ws = web.WebSocketResponse(
            autoclose=False,  # the close is answered after the session's processes are gone
            compress=False,
            heartbeat=HEARTBEAT_S,
            max_msg_size=MAX_INPUT_FRAME,
            timeout=CLOSE_TIMEOUT_S,
        )
        try:
            cols, rows = _size(request.query)
            if not self._settings.may_run(self._shell()[0]):
                msg = f"this daemon runs only {', '.join(self._settings.exec_allow or ())} (SREZ_EXEC_ALLOW): no shell"
                raise ApiError(code="forbidden", message=msg)
            if not ws.can_prepare(request).ok:
                raise ApiError(code="bad_request", message="/api/pty expects a WebSocket upgrade")
            if not self._limiter.try_acquire():
                msg = f"{self._limiter.limit} exec/pty sessions are already running; retry later"
                raise ApiError(code="too_many_sessions", message=msg)
        except ApiError as e:
            return e.response()
        try:
            session = await self._start(ws, cols, rows)
        except OSError as e:
            self._limiter.release()
            logger.error("pty: cannot start %s: %s", self._shell()[0], e)
            msg = f"cannot start the shell {self._shell()[0]!r}: {e}"
            return ApiError(code="unavailable", message=msg).response()
        except BaseException:
            self._limiter.release()
            raise
        try:
            await self._serve(session, request)
        finally:
            try:
                await self._end(session)
            finally:
                self._sessions.discard(session)
                self._limiter.release()
                session.finished.set()
        code, reason = session.stop.result() if session.stop.done() else (WSCloseCode.OK, "")
        if ws.prepared:
            await ws.close(code=code, message=reason.encode())
        return ws

    async def close(self) -> None:
        """Ends every session (app shutdown) and waits until their processes are gone."""
        sessions = list(self._sessions)
        for session in sessions:
            session.request_stop(WSCloseCode.GOING_AWAY, "daemon shutting down")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HUP_GRACE_S + REAP_WAIT_S + 1):
                await asyncio.gather(*(s.finished.wait() for s in sessions))

    # ------------------------------------------------------------------ start

    def _shell(self) -> list[str]:
        return [os.environ.get("SHELL") or "/bin/bash", "-i"]

    async def _start(self, ws: web.WebSocketResponse, cols: int, rows: int) -> _Session:
        cookie = procs.new_cookie()
        proc = await self._spawn(cols, rows, cookie)
        loop = asyncio.get_running_loop()
        session = _Session(
            proc, ws, cookie, loop.time(), loop.create_future(), tty=procs.terminal_of(proc.pid)
        )
        self._sessions.add(session)
        return session

    async def _spawn(self, cols: int, rows: int, cookie: str) -> PtyProcess:
        from ptyprocess import PtyProcess

        cwd = self._settings.run_dir
        if not cwd.is_dir():
            msg = f"the run folder {cwd} does not exist"
            raise FileNotFoundError(msg)
        env = procs.session_env(cookie, {"TERM": "xterm-256color"})
        # chdir runs as preexec_fn, not cwd=: ptyprocess reports a failing preexec_fn to the
        # parent and exits the child, whereas a failing cwd= chdir leaves a forked copy of the
        # daemon running (and the parent waiting on it forever).
        spawning = spawn(
            asyncio.to_thread(
                PtyProcess.spawn,
                self._shell(),
                env=env,
                dimensions=(rows, cols),
                preexec_fn=functools.partial(os.chdir, cwd),
            ),
            name="pty-spawn",
        )
        try:
            proc: PtyProcess = await asyncio.shield(spawning)
        except asyncio.CancelledError:
            # Cancelled mid-spawn (shutdown): the shell may still appear; end it when it does.
            spawning.add_done_callback(functools.partial(_discard, cookie))
            raise
        os.set_blocking(proc.fd, False)  # a shell that stops reading must not block the loop
        proc.delayafterclose = 0  # close() runs after the shell is reaped: no need to wait
        logger.info("pty pid %d: started %dx%d", proc.pid, cols, rows)
        return proc

    # ------------------------------------------------------------------ serve

    async def _serve(self, s: _Session, request: web.Request) -> None:
        await s.ws.prepare(request)
        receiver = spawn(self._receive(s), name=f"pty-{s.pid}-receive")
        tasks = [
            receiver,
            spawn(self._pump(s), name=f"pty-{s.pid}-pump"),
            spawn(self._watch_idle(s), name=f"pty-{s.pid}-idle"),
        ]
        waits: list[asyncio.Future[Any]] = [receiver, s.stop]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _receive(self, s: _Session) -> None:
        while True:
            msg = await s.ws.receive()
            if msg.type is WSMsgType.BINARY:
                s.touch()
                await _write_all(s.fd, msg.data)
            elif msg.type is WSMsgType.TEXT:
                self._resize(s, msg.data)
            else:  # CLOSE from the client, or the connection is gone
                return

    def _resize(self, s: _Session, text: str) -> None:
        try:
            cols, rows = PtyResize.model_validate_json(text).resize
        except ValidationError:
            level = logging.DEBUG if s.warned else logging.WARNING
            s.warned = True
            logger.log(level, "pty pid %d: ignored a text frame that is not a resize", s.pid)
            return
        s.touch()
        s.proc.setwinsize(rows, cols)

    async def _pump(self, s: _Session) -> None:
        while True:
            await _ready(s.fd, writing=False)
            try:
                data = os.read(s.fd, CHUNK)
            except BlockingIOError:
                continue
            except OSError as e:
                if e.errno != errno.EIO:
                    logger.error("pty pid %d: reading the terminal failed: %s", s.pid, e)
                    s.request_stop(WSCloseCode.INTERNAL_ERROR, "terminal read failed")
                    return
                data = b""  # EIO: every process holding the terminal is gone
            if not data:
                s.request_stop(WSCloseCode.OK, "shell exited")
                return
            s.touch()
            try:
                await s.ws.send_bytes(data)
            except ConnectionResetError:
                return  # the client is gone; the receiver sees it too

    async def _watch_idle(self, s: _Session) -> None:
        loop = asyncio.get_running_loop()
        idle = self._settings.pty_idle_s
        while True:
            remaining = s.last_activity + idle - loop.time()
            if remaining <= 0:
                break
            await asyncio.sleep(remaining)  # then look again: there may have been activity
        logger.info("pty pid %d: idle for %.0f s", s.pid, idle)
        s.request_stop(WSCloseCode.GOING_AWAY, "idle timeout")

    # ------------------------------------------------------------------ end

    async def _end(self, s: _Session) -> None:
        started = perf_counter()
        tree = await asyncio.to_thread(procs.hang_up, s.pid)
        # The grace is watched on the loop, so only for a tree small enough to look at cheaply;
        # a bigger one (a fork bomb) goes straight to SIGKILL once the shell is gone.
        watched = tree if len(tree) <= WATCH_MAX else []
        await _poll(lambda: not (_alive(s.proc) or _any_running(watched)), HUP_GRACE_S)
        escaped = await asyncio.to_thread(procs.kill_session, s.pid, s.cookie, tree, held=s.tty)
        await _poll(lambda: not _alive(s.proc), REAP_WAIT_S)
        try:
            await asyncio.to_thread(s.proc.close)
        except Exception:
            logger.exception("pty pid %d: closing the terminal failed", s.pid)
        reason = s.stop.result()[1] if s.stop.done() else "client closed"
        logger.info(
            "pty pid %d: ended (%s) in %.3f s, %d killed after the hangup",
            s.pid,
            reason,
            perf_counter() - started,
            escaped,
        )


def _size(query: Mapping[str, str]) -> tuple[int, int]:
    size = []
    for name, default in zip(("cols", "rows"), DEFAULT_SIZE, strict=True):
        raw = query.get(name, "")
        if not raw:
            size.append(default)
            continue
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_SIDE:
            msg = f"{name}={raw!r} must be an integer from 1 to {MAX_SIDE}"
            raise ApiError(code="bad_request", message=msg)
        size.append(int(raw))
    return size[0], size[1]


async def _ready(fd: int, *, writing: bool) -> None:
    """Waits until ``fd`` is readable (or writable) through the loop's selector."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    if writing:
        loop.add_writer(fd, wake)
    else:
        loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        if writing:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)


async def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            # The shell is not reading: wait (this also stops reading the socket: backpressure).
            await _ready(fd, writing=True)
            continue
        except OSError as e:
            if e.errno == errno.EIO:
                return  # the shell is gone; the pump ends the session
            raise
        view = view[written:]


async def _poll(done: Callable[[], bool], within_s: float) -> bool:
    """Checks ``done`` every ``POLL_S`` until it holds or ``within_s`` passes (no process-exit
    event exists for processes that are not our children)."""
    for _ in range(max(1, round(within_s / POLL_S))):
        if done():
            return True
        await asyncio.sleep(POLL_S)
    return done()


def _alive(proc: PtyProcess) -> bool:
    try:
        return bool(proc.isalive())  # waitpid(pid, WNOHANG): reaps the shell once it exits
    except Exception:  # ptyprocess raises its own error if the pid was reaped elsewhere
        return False


def _any_running(tree: list[psutil.Process]) -> bool:
    import psutil

    for proc in tree:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            continue
    return False


def _discard(cookie: str, spawning: asyncio.Task[PtyProcess]) -> None:
    if spawning.cancelled() or spawning.exception() is not None:
        return
    proc = spawning.result()

    def kill_and_close() -> None:
        procs.kill_session(proc.pid, cookie)
        proc.close()

    spawn(asyncio.to_thread(kill_and_close), name=f"pty-{proc.pid}-discard")
