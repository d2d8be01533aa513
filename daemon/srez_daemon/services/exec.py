"""``POST /api/exec``: run one command in the run and answer with its output (docs/design.md §4).

How a command runs, and the decisions where the design is silent:

* argv is executed directly (no shell), in a process group of its own so the group can be killed
  as one, with stdin on ``/dev/null`` and the cwd in the run folder (a
  relative ``cwd`` is relative to it). The cwd must resolve inside the run folder: a ``..``
  component, an absolute path elsewhere, or a symlink that leads out is a 400, as is a cwd that
  is not a directory. The command runs in the resolved folder (its links followed once, here).
  The group is a new session too (``setsid``) only when the daemon has a controlling terminal
  (started by hand in a shell), so a command can never reach that terminal; every backend
  starts the daemon in a session of its own, without one, and there a new process group is
  enough (a session leader's exit costs the kernel more: about a sixth of the exec throughput).
* An argv[0] that cannot be run is a result, not an error, as in a shell: exit code 127 when it is
  not found, 126 when it is found but cannot be executed, the OS message in stderr.
* stdout and stderr are read concurrently by a subprocess protocol. The first 1 MiB of each is
  kept; after that the bytes are **read and discarded**, so the command never blocks on a full
  pipe and ends with its real exit code (``truncated: true``). A stream that passes
  ``FLOOD_BYTES`` is a flood (``yes``): the session is killed there, so a runaway producer cannot
  keep the daemon busy until its timeout; its exit code is then -9.
* The command is done when argv's process exits. Output that a background job still holds the
  pipes open for gets ``DRAIN_GRACE_S`` more (so an answer may come up to that much after the
  timeout of a command that did exit in time); then the session ends. **An exec leaves nothing
  running**: when it ends, its process group is killed, and so is every process that left the
  group (daemons started with ``setsid`` or ``nohup ... &``).
* What left the group is told by the session's **token**: a pipe whose write end every process
  of the session inherits (an extra descriptor, ``pass_fds``) and whose read end the daemon
  keeps. Once argv has exited and the group is killed, the read end at end-of-file means no
  holder is alive: nothing escaped, and no ``/proc`` sweep runs (the common case, one
  ``killpg`` and one ``read``). A token still held ``ESCAPE_WAIT_S`` after the group's kill is
  an escapee: then, after the answer, the ``procs`` sweep kills every process carrying the
  session's cookie or holding its token. An escapee that closed its inherited descriptors
  (``close_fds``, a full daemon) is not seen after a command that exited in time: it is the
  limit of the cheap path, as a dropped cookie is the limit of the sweep.
* On timeout, flood or cancellation, the whole session is swept (group, descendants, cookie,
  token) before the answer, which is ``timed_out: true, exit_code: null`` on timeout.
* ``X-Request-ID`` makes retries safe: the last ``REPLAY_SIZE`` answers are remembered by id, a
  retry gets the first answer byte for byte without running anything, a duplicate that arrives
  while the first still runs waits for it, and reusing an id for a different body is a 409.
  Only completed results are remembered: a 4xx or 429 does not pin the id.
* At most ``max_sessions`` execs and ptys run at once (one ``SessionLimiter``). An exec over it
  waits in line up to ``session_wait_s`` for a slot, then is a 429 with ``Retry-After``.
* With ``SREZ_EXEC_ALLOW`` set, an argv[0] that is not listed is a 403 (nothing runs).

Nothing here blocks the event loop: the process is spawned by the loop, and the ``/proc`` sweeps
(only when something escaped) run in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import signal
import subprocess
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Final

import orjson
from aiohttp import web
from pydantic import ValidationError

from srez_core.aio import spawn
from srez_daemon.http import JSON, ApiError
from srez_daemon.protocol.api import ExecRequest, ExecResult
from srez_daemon.services import procs
from srez_daemon.services.limits import SessionLimiter
from srez_daemon.settings import MAX_STREAM_BYTES, DaemonSettings

logger = logging.getLogger(__name__)

FLOOD_BYTES: Final = 64 * MAX_STREAM_BYTES
"""Bytes on one stream after which the command is killed as a flood (read and discarded until)."""
DRAIN_GRACE_S: Final = 0.5
"""How long the pipes may stay open after argv's process exited (a background job holding them)."""
EXIT_WAIT_S: Final = 2.0
"""How long to wait for a killed process to be reported dead before closing its transport."""
ESCAPE_WAIT_S: Final = 0.5
"""How long the group's killed members may take to let go of the token before whatever still
holds it counts as an escapee."""
RETRY_AFTER_S: Final = 1
"""The ``Retry-After`` of a 429 (the cap was full for the whole wait)."""
REPLAY_SIZE: Final = 256
"""How many ``X-Request-ID`` answers are remembered."""
_SESSION_ENV: Final = os.fsencode(procs.SESSION_ENV)
_REQUEST_ID: Final = re.compile(r"[\x21-\x7e]{1,128}")


@dataclass(frozen=True, slots=True)
class _Reply:
    digest: bytes
    """sha256 of the request body: one id, one request."""
    body: asyncio.Future[bytes | None]
    """The answer's JSON; None when the first attempt produced nothing to remember."""


class _Capture(asyncio.SubprocessProtocol):
    """Keeps the head of stdout and stderr, counts the rest, and reports exit and close."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.kept = {1: bytearray(), 2: bytearray()}
        self.seen = {1: 0, 2: 0}
        self.flooded = False
        self.pid = -1
        self.exited: asyncio.Future[int] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self._transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self._transport = transport
        self.pid = transport.get_pid()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        kept = self.kept[fd]
        room = MAX_STREAM_BYTES - len(kept)
        if room > 0:
            kept += data[:room]
        self.seen[fd] += len(data)
        if self.seen[fd] > FLOOD_BYTES and not self.flooded:
            self.flooded = True
            logger.warning("exec pid %d: output passed %d bytes; killing it", self.pid, FLOOD_BYTES)
            procs.signal_group(self.pid, signal.SIGKILL)

    def process_exited(self) -> None:
        assert self._transport is not None
        code = self._transport.get_returncode()
        if not self.exited.done():
            self.exited.set_result(-1 if code is None else code)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def text(self, fd: int) -> str:
        return self.kept[fd].decode("utf-8", errors="replace")

    @property
    def truncated(self) -> bool:
        return max(self.seen.values()) > MAX_STREAM_BYTES


class ExecService:
    """Runs ``POST /api/exec`` requests.

    Args:
        settings: the daemon's settings (the run folder is the default cwd).
        limiter: the session cap shared with the pty service.
    """

    def __init__(self, settings: DaemonSettings, limiter: SessionLimiter) -> None:
        self._settings = settings
        self._root = settings.run_dir.resolve()
        self._new_session = _has_terminal()
        """Whether each command needs a session of its own to be kept off the terminal."""
        self._environ = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
        """The daemon's environment, read and encoded once (every exec's, plus its cookie)."""
        self._limiter = limiter
        self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        """Every command's stdin, opened once (Popen would open and close it per command)."""
        self._closed = False
        self._replies: OrderedDict[str, _Reply] = OrderedDict()
        self._running: dict[str, int] = {}
        """cookie -> pid of every exec in flight (for ``close``)."""
        self._escapes: set[asyncio.Task[None]] = set()
        """The escape watches of execs already answered (``_watch_escape``)."""

    async def handle(self, request: web.Request) -> web.Response:
        """Handles ``POST /api/exec``: validates, runs (or replays) and answers ``ExecResult``."""
        try:
            request_id = request.headers.get("X-Request-ID")
            if request_id is not None and not _REQUEST_ID.fullmatch(request_id):
                msg = "X-Request-ID must be 1 to 128 printable ASCII characters without spaces"
                raise ApiError(code="bad_request", message=msg)
            raw, exec_request = await self._parse(request)
            if request_id is None:
                return _ok(await self._run_limited(exec_request))
            return await self._replay_or_run(request_id, raw, exec_request)
        except ApiError as e:
            return e.response()

    async def close(self) -> None:
        """Kills every command still running (app shutdown); their requests then answer."""
        running = list(self._running.items())
        if running:
            logger.info("exec: killing %d running command(s) at shutdown", len(running))
        await asyncio.gather(
            *(asyncio.to_thread(procs.kill_session, pid, cookie) for cookie, pid in running)
        )
        await self.settled()
        if not self._closed:  # (never -1 in its place: that is subprocess.PIPE)
            self._closed = True
            os.close(self._devnull)

    async def settled(self) -> None:
        """Waits until the escape watches of the execs already answered are done (each ends
        within ``ESCAPE_WAIT_S`` plus its sweep)."""
        while self._escapes:
            await asyncio.gather(*self._escapes, return_exceptions=True)

    # ------------------------------------------------------------------ request handling

    async def _parse(self, request: web.Request) -> tuple[bytes, ExecRequest]:
        if request.content_type != JSON:
            msg = (
                f"POST /api/exec needs Content-Type: application/json, got {request.content_type!r}"
            )
            raise ApiError(code="bad_request", message=msg)
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            msg = f"the body is larger than {request.client_max_size} bytes"
            raise ApiError(code="payload_too_large", message=msg) from None
        try:
            return raw, ExecRequest.model_validate_json(raw)
        except ValidationError as e:
            raise ApiError(code="bad_request", message=_describe(e)) from None

    async def _replay_or_run(
        self, request_id: str, raw: bytes, exec_request: ExecRequest
    ) -> web.Response:
        digest = hashlib.sha256(raw).digest()
        while (reply := self._replies.get(request_id)) is not None:
            if reply.digest != digest:
                msg = f"X-Request-ID {request_id!r} was already used for a different request"
                raise ApiError(code="conflict", message=msg)
            body = await asyncio.shield(reply.body)
            if body is not None:
                self._replies.move_to_end(request_id)
                logger.info("exec replayed for X-Request-ID %s", request_id)
                return web.Response(body=body, content_type=JSON)
            # The first attempt left nothing to replay (429, a crash): this one runs instead.
        reply = _Reply(digest, asyncio.get_running_loop().create_future())
        self._replies[request_id] = reply
        while len(self._replies) > REPLAY_SIZE:
            self._replies.popitem(last=False)
        body = None
        try:
            body = _body(await self._run_limited(exec_request))
            return web.Response(body=body, content_type=JSON)
        finally:
            reply.body.set_result(body)
            if body is None and self._replies.get(request_id) is reply:
                del self._replies[request_id]

    async def _run_limited(self, exec_request: ExecRequest) -> ExecResult:
        program = exec_request.argv[0]
        if not self._settings.may_run(program):
            msg = f"this daemon runs only {', '.join(self._settings.exec_allow or ())} (SREZ_EXEC_ALLOW), not {program!r}"
            raise ApiError(code="forbidden", message=msg)
        cwd = self._cwd(exec_request.cwd)
        if not await self._limiter.acquire(self._settings.session_wait_s):
            msg = (
                f"{self._limiter.limit} exec/pty sessions ran for the whole "
                f"{self._settings.session_wait_s:g} s this exec waited; retry later"
            )
            headers = {"Retry-After": str(RETRY_AFTER_S)}
            raise ApiError(code="too_many_sessions", message=msg, headers=headers)
        try:
            return await self._run(exec_request, cwd)
        finally:
            self._limiter.release()

    def _cwd(self, cwd: str | None) -> Path:
        root = self._root
        if cwd is None:
            path = root
        else:
            if ".." in Path(cwd).parts:
                msg = f"cwd {cwd!r} must not contain '..': it is a folder inside the run"
                raise ApiError(code="bad_request", message=msg)
            try:
                path = (root / cwd).resolve()  # an absolute cwd replaces root here
            except (OSError, ValueError) as e:  # a NUL byte, a symlink loop
                msg = f"cwd {cwd!r} cannot be resolved: {e}"
                raise ApiError(code="bad_request", message=msg) from None
            if not path.is_relative_to(root):
                msg = f"cwd {cwd!r} is outside the run folder (links followed)"
                raise ApiError(code="bad_request", message=msg)
        if not path.is_dir():
            msg = f"cwd {cwd!r} is not a directory in the run"
            raise ApiError(code="bad_request", message=msg)
        return path

    # ------------------------------------------------------------------ running

    async def _run(self, exec_request: ExecRequest, cwd: Path) -> ExecResult:
        argv = exec_request.argv
        loop = asyncio.get_running_loop()
        cookie = procs.new_cookie()
        capture = _Capture(loop)
        token, token_end = os.pipe()  # both close-on-exec; the child gets its end by pass_fds
        os.set_blocking(token, False)
        started = perf_counter()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: capture,
                *argv,
                stdin=self._devnull,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env={**self._environ, _SESSION_ENV: cookie.encode()},
                start_new_session=self._new_session,
                process_group=None if self._new_session else 0,
                pass_fds=(token_end,),
            )
        except ValueError as e:  # "embedded null byte"
            os.close(token)
            msg = f"argv cannot be run: {e}"
            raise ApiError(code="bad_request", message=msg) from None
        except OSError as e:
            os.close(token)
            if e.filename is not None and Path(e.filename) == cwd:
                msg = f"cwd {exec_request.cwd!r} cannot be entered: {e.strerror}"
                raise ApiError(code="bad_request", message=msg) from None
            return _not_started(argv[0], e, perf_counter() - started)
        except BaseException:  # cancelled while spawning
            os.close(token)
            raise
        finally:
            os.close(token_end)
        self._running[cookie] = capture.pid
        timed_out = False
        try:
            try:
                async with asyncio.timeout(exec_request.timeout_s):
                    # Shielded: the timeout cancels the wait, not the future recording the exit.
                    await asyncio.shield(capture.exited)
            except TimeoutError:
                timed_out = True
            else:
                await asyncio.wait([capture.closed], timeout=DRAIN_GRACE_S)
        finally:
            del self._running[cookie]
            await self._end(capture, cookie, timed_out, token)
            transport.close()
        duration = perf_counter() - started
        exit_code = None if timed_out else capture.exited.result()
        # An ordinary exec is a DEBUG line (at hundreds a second the log would cost more than
        # the exec); one that timed out or was cut is worth an INFO line.
        logger.log(
            logging.INFO if timed_out or capture.truncated else logging.DEBUG,
            "exec %r (pid %d): exit %s in %.3f s%s%s",
            argv[0],
            capture.pid,
            exit_code,
            duration,
            " (timed out)" if timed_out else "",
            " (truncated)" if capture.truncated else "",
        )
        return ExecResult(
            exit_code=exit_code,
            stdout=capture.text(1),
            stderr=capture.text(2),
            truncated=capture.truncated,
            timed_out=timed_out,
            duration_s=round(duration, 6),
        )

    async def _end(self, capture: _Capture, cookie: str, timed_out: bool, token: int) -> None:
        """Kills whatever is left of the session (an exec leaves nothing running) and closes
        its token (or hands it to the escape watch)."""
        pid = capture.pid
        # Only a live root has a tree to walk; a reaped root's pid may already name another
        # process, so its "descendants" are never looked up.
        running = not capture.exited.done()
        if not (timed_out or capture.flooded or running):
            # The common case: the group goes at once (one system call, fine on the loop) and
            # the answer goes out. The token tells whether anything outlived it.
            procs.signal_group(pid, signal.SIGKILL)
            if _released(token):
                os.close(token)
                return  # no holder left: nothing escaped the group
            watch = spawn(_watch_escape(pid, cookie, token), name=f"exec-escape-{pid}")
            self._escapes.add(watch)
            watch.add_done_callback(self._escapes.discard)
            return
        # Timeout, flood, cancellation: the sweep completes before the answer, and the process
        # is seen dead before its transport closes (closing a live one would poll waitpid behind
        # the child watcher's back).
        try:
            await asyncio.to_thread(
                procs.kill_session,
                pid,
                cookie,
                None if running else (),
                held=procs.pipe_link(token),
            )
        finally:
            os.close(token)
        await asyncio.wait([capture.exited], timeout=EXIT_WAIT_S)


def _has_terminal() -> bool:
    """Whether this process has a controlling terminal (``/dev/tty`` opens)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def _released(token: int) -> bool:
    """Whether the token's every write end is closed (each process that inherited it exited).

    A holder may write into it; what it wrote is read and dropped (a few reads at most, so a
    writer that never stops counts as a holder)."""
    for _ in range(8):
        try:
            if not os.read(token, 1 << 16):
                return True
        except BlockingIOError:
            return False
    return False


async def _watch_escape(pid: int, cookie: str, token: int) -> None:
    """Waits ``ESCAPE_WAIT_S`` for the killed group to let go of the token; whatever holds it
    after that left the group, and the session is swept (cookie and token holders)."""
    loop = asyncio.get_running_loop()
    gone = loop.create_future()

    def readable() -> None:
        if not gone.done() and _released(token):
            gone.set_result(None)

    loop.add_reader(token, readable)
    try:
        await asyncio.wait([gone], timeout=ESCAPE_WAIT_S)
    finally:
        loop.remove_reader(token)
    try:
        if not gone.done():
            logger.info("exec pid %d: a process left its group; sweeping its session", pid)
            held = procs.pipe_link(token)
            await asyncio.to_thread(procs.kill_session, pid, cookie, (), born_after=pid, held=held)
    finally:
        os.close(token)


def _not_started(program: str, error: OSError, duration: float) -> ExecResult:
    # The shell's convention: 127 "not found", 126 "found but not executable".
    not_found = isinstance(error, FileNotFoundError)
    reason = error.strerror or str(error)
    logger.info("exec %r: not started (%s)", program, reason)
    return ExecResult(
        exit_code=127 if not_found else 126,
        stdout="",
        stderr=f"{program}: {reason}\n",
        truncated=False,
        duration_s=round(duration, 6),
    )


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if first["type"] == "json_invalid":
        text = f"the body is not valid JSON: {first['msg']}"
    elif first["type"] == "missing":
        text = f"field {where!r} is required"
    elif first["type"] == "extra_forbidden":
        text = f"field {where!r} is not allowed (allowed: argv, timeout_s, cwd)"
    elif not where:
        text = f"the body must be a JSON object: {first['msg']}"
    else:
        text = f"field {where!r}: {first['msg']}"
    more = error.error_count() - 1
    if more:
        text += f" (and {more} more)"
    return " ".join(text.split())


def _body(result: ExecResult) -> bytes:
    return orjson.dumps(result.model_dump(mode="json", by_alias=True))


def _ok(result: ExecResult) -> web.Response:
    return web.Response(body=_body(result), content_type=JSON)
