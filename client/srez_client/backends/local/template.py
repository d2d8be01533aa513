"""The launcher's side of the warm run template (:mod:`srez_daemon.template`).

One template per :class:`~.backend.LocalBackend`, started on its first launch: ``python -m
srez_daemon.template`` in a session of its own, its output appended to ``$SREZ_STATE/template.out``,
joined to this process by a socket pair (:mod:`srez_daemon.protocol.template`). A launch asks it
for a fork and gets the run daemon's pid, which the backend then manages exactly as the pid of a
fresh start: the fork leads its own session and process group, writes ``endpoint.json``, and is
stopped, waited for and recovered after ``kill -9`` by the same code.

The template is a shortcut, never a requirement. :meth:`RunTemplate.spawn` answers None, and the
backend starts the daemon afresh (``python -m srez_daemon``), when:

* the template is switched off (``SREZ_RUN_TEMPLATE=0``, ``LocalBackend(run_template=False)``) or
  the backend runs another daemon command than the default;
* the run's interpreter settings (its ``PYTHON*`` variables: ``PYTHONPATH`` above all) differ
  from those the template started with, since a fork cannot change what the interpreter was
  started with;
* the template cannot start, does not answer or fails a fork: then it is ended, switched off for
  this backend, and the fallback is said once on stderr.

A template that dies while a launch is in flight loses no run: the fork waits for a byte the
launcher writes only once it has the pid, and exits untouched when the pipe closes instead, so
the fresh start that follows is the run's only daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from srez_client.backends.local.environment import passed_environment
from srez_daemon.protocol.template import CHANNEL_FD, GO, MODULE, receive, send

logger = logging.getLogger(__name__)

READY_TIMEOUT_S: Final = 30.0
"""How long the template may take to import everything (about 0.5 s on two busy cores)."""
FORK_TIMEOUT_S: Final = 10.0
"""How long a fork may take to be answered."""
ENV_VAR: Final = "SREZ_RUN_TEMPLATE"
"""``0`` starts every run's daemon afresh (the backend's ``run_template`` setting)."""


def interpreter_settings(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` read when an interpreter starts (``PYTHON*``)."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON")}


def _close_template(channel: socket.socket, pid: int) -> None:
    """Close the pair (the template exits on its end-of-file) and collect it; a template that
    has not exited within a second is killed."""
    channel.close()
    for _ in range(100):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                threading.Event().wait(0.01)
                continue
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


class RunTemplate:
    """A lazily started template, and the forks asked of it.

    Args:
        output: Where the template's own output goes.
    """

    def __init__(self, output: Path) -> None:
        self.output = output
        self.environ: dict[str, str] = {}
        """The template's environment: what every daemon is passed of this process's
        (:func:`~.environment.passed_environment`) when the template starts."""
        self.pid: int | None = None
        """The template's pid once it is ready."""
        self.off = False
        """Switched off after a failure: every later run starts afresh."""
        self._channel: socket.socket | None = None
        self._lock = threading.Lock()  # one request and its answer at a time on the pair
        self._finalizer: weakref.finalize[[socket.socket, int], RunTemplate] | None = None

    async def start(self) -> None:
        """Start the template now if it is not running yet (a failure switches it off, said
        once). The backend calls this before it creates a run's folder: a launcher killed while
        the template imports (half a second) then leaves no run behind that never started."""
        if self._channel is None and not self.off:
            await asyncio.to_thread(self._ensure_started)

    def _ensure_started(self) -> None:
        with self._lock:
            if self._channel is not None or self.off:
                return
            try:
                self._start()
            except (OSError, EOFError, ValueError) as e:
                self._give_up(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)

    async def spawn(self, args: Sequence[str], env: Mapping[str, str], output: Path) -> int | None:
        """Fork a run daemon (``python -m srez_daemon`` with ``args``) with the environment
        ``env``, its output appended to ``output``; None where the backend must start it afresh
        (see the module docs)."""
        if self.off:
            return None
        return await asyncio.to_thread(self._spawn, list(args), dict(env), output)

    def _spawn(self, args: list[str], env: dict[str, str], output: Path) -> int | None:
        with self._lock:
            if self.off:
                return None
            try:
                channel = self._channel or self._start()
                if interpreter_settings(env) != interpreter_settings(self.environ):
                    return None
                return self._fork(channel, args, env, output)
            except (OSError, EOFError, ValueError) as e:
                self._give_up(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)
                return None

    def _start(self) -> socket.socket:
        """Start the template and wait until it says it is ready."""
        self.environ = passed_environment(os.environ)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (
                os.POSIX_SPAWN_OPEN,
                1,
                str(self.output),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                0o600,
            ),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            # dup2 clears close-on-exec (glibc does so even when the numbers are equal)
            (os.POSIX_SPAWN_DUP2, theirs.fileno(), CHANNEL_FD),
        ]
        try:
            pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-m", MODULE],
                self.environ,
                file_actions=actions,
                setsid=True,  # a terminal's Ctrl-C is the launcher's to handle, as for runs
                setsigdef=(signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self._channel, self.pid = ours, pid
        # a backend dropped without close() still ends its template
        self._finalizer = weakref.finalize(self, _close_template, ours, pid)
        ours.settimeout(READY_TIMEOUT_S)
        message, _ = receive(ours)
        if "ready" not in message:
            raise ValueError(str(message.get("error", message)))
        ours.settimeout(FORK_TIMEOUT_S)
        logger.info("run template ready (pid %d)", pid)
        return ours

    def _fork(
        self, channel: socket.socket, args: list[str], env: dict[str, str], output: Path
    ) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(output, flags, 0o600)
        go_read, go_write = os.pipe()
        try:
            try:
                send(channel, {"args": args, "env": env, "cwd": str(Path.cwd())}, [go_read, out])
            finally:
                os.close(go_read)
                os.close(out)
            message, _ = receive(channel)
            pid = message.get("pid")
            if not isinstance(pid, int) or pid <= 0:
                raise ValueError(str(message.get("error", message)))
            os.write(go_write, GO)
            return pid
        finally:
            os.close(go_write)  # without the byte, a waiting fork exits untouched

    def _give_up(self, why: str) -> None:
        self.off = True
        sys.stderr.write(
            f"srez: the run template failed ({why}); runs start afresh from now on "
            f"(a few hundred ms more each; see {self.output})\n"
        )
        sys.stderr.flush()
        self.close()

    def close(self) -> None:
        """End the template (idempotent); runs it forked keep running."""
        if self._finalizer is not None:
            self._finalizer()
        self._channel = None
