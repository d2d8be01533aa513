"""Processes of the ``local`` backend: spawn a daemon in its own session, know if it lives, stop it.

A daemon is spawned with ``os.posix_spawn(..., setsid=True)``: its own session and process group
(like ``start_new_session=True``), stdin from ``/dev/null``, stdout and stderr appended to one
file, signal dispositions reset, and no ``Popen`` object whose finaliser could warn while the
daemon outlives this process (it usually does: ``srez run`` exits, the daemon keeps serving).

A pid alone is not an identity: pids are reused. Each daemon is recorded with its pid *and* its
start time (field 22 of ``/proc/<pid>/stat``), and a pid whose start time differs is treated as
gone, so a stop never signals an unrelated process. When the daemon is this process's child, an
exited daemon is reaped here (it would otherwise stay a zombie that ``kill(pid, 0)`` sees alive).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from srez_client.pids import pid_exists

logger = logging.getLogger(__name__)

_RESET_SIGNALS: Final = (
    signal.SIGPIPE,
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGXFSZ,
)


def spawn_session(argv: Sequence[str], env: Mapping[str, str], output: Path) -> int:
    """Start ``argv`` in a new session with ``env``; its stdout and stderr go to ``output``.

    Args:
        argv: The command; ``argv[0]`` must be an absolute path (no ``PATH`` lookup).
        env: Its whole environment.
        output: File its output is appended to (created 0600).

    Returns:
        Its pid (also its process group and session id).
    """
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(output), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(
        argv[0], list(argv), dict(env), file_actions=actions, setsid=True, setsigdef=_RESET_SIGNALS
    )


def _proc_stat(pid: int) -> tuple[bytes, int] | None:
    """(state letter, start time in clock ticks) of ``pid`` from ``/proc``, or None if none."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # the name may hold spaces and parentheses
    if len(fields) < 20:
        return None
    return fields[0], int(fields[19])


def _has_proc() -> bool:
    return Path("/proc/self/stat").exists()


def start_time(pid: int) -> int | None:
    """The start time of a running ``pid`` (clock ticks since boot), or None if it is not running.

    0 for a live pid where ``/proc`` is not available (no identity check is possible then).
    """
    if not _has_proc():
        return 0 if pid_exists(pid) else None
    found = _proc_stat(pid)
    if found is None or found[0] in (b"Z", b"X"):
        return None
    return found[1]


def is_alive(pid: int | None, started: int | None) -> bool:
    """Whether the process recorded as (``pid``, ``started``) still runs.

    A zombie with the recorded start time is reaped if it is this process's child.
    """
    if pid is None or pid <= 0:
        return False
    if not _has_proc():
        return pid_exists(pid)
    found = _proc_stat(pid)
    if found is None:
        return False
    state, start = found
    if started is not None and start != started:
        return False  # the pid now names another process
    if state in (b"Z", b"X"):
        with contextlib.suppress(ChildProcessError):  # not our child: its parent reaps it
            os.waitpid(pid, os.WNOHANG)
        return False
    return True


async def wait_gone(pid: int, started: int | None, timeout_s: float) -> bool:
    """Wait until the process is gone; returns whether it went within ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    delay = 0.005
    while is_alive(pid, started):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    return True


def signal_group(pid: int, started: int | None, sig: signal.Signals) -> bool:
    """Send ``sig`` to the process group led by ``pid``, if that process is still the one recorded.

    Returns:
        Whether the signal was sent.
    """
    if not is_alive(pid, started):
        return False
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return False
    return True


async def terminate(pid: int, started: int | None, grace_s: float = 10.0) -> None:
    """SIGTERM the group of ``pid``, wait up to ``grace_s``, then SIGKILL it and wait for the end.

    Idempotent: a process already gone returns at once.
    """
    if not signal_group(pid, started, signal.SIGTERM):
        return
    if await wait_gone(pid, started, grace_s):
        return
    logger.warning("daemon %d ignored SIGTERM for %g s; killing its process group", pid, grace_s)
    signal_group(pid, started, signal.SIGKILL)
    await wait_gone(pid, started, 5.0)


def tail_text(path: Path, limit: int = 2000) -> str:
    """The last ``limit`` bytes of a file as text (for error messages), or ``""``."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - limit))
            data = f.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


def processes_with_env(name: str, value: str) -> list[int]:
    """Pids of this user's processes whose environment holds ``name=value`` exactly.

    Read from ``/proc/<pid>/environ`` (readable for one's own processes only); ``[]`` where
    ``/proc`` is not available. Used to find the agent of a run whose daemon is gone: the daemon
    gives its agent ``SREZ_AGENT_SOCKET=<the run's socket path>``, a path unique to the run.
    """
    if not _has_proc():
        return []
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or another user's
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def kill_orphans(name: str, value: str) -> list[int]:
    """SIGKILL every process found by :func:`processes_with_env`, with the process group each one
    leads (an agent runs in its own session: its children are in its group).

    Returns:
        The pids found.
    """
    pids = processes_with_env(name, value)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
    return pids
