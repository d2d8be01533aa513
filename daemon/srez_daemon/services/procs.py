"""Process-tree helpers shared by exec and pty: end a session's processes, count what is left.

A session (one exec, one pty) is found three ways, because each way misses something:

1. **Its process group.** Exec starts argv in a new session and the pty's shell leads its own,
   so the group id is the root's pid. This catches everything that did not move, but not a child
   that called ``setsid`` (or ``setpgid``, as every job of an interactive shell does).
2. **The root's descendants**, walked while the root is alive. This catches children that left the
   group but still hang below the root.
3. **The session cookie.** Every process of a session starts with ``SREZ_SESSION=<cookie>`` in its
   environment, and children inherit it. Scanning every process's environment for the cookie finds
   escapees that left the group *and* were re-parented to PID 1 (``setsid`` plus a double fork,
   ``nohup ... &`` from a shell that then exited). The idea is Jenkins' ``BUILD_ID`` process-tree
   killer.

4. **What it holds open**: a pty session's terminal, an exec's token pipe. A process started from
   the shell holds the session's pty slave open as its stdin, stdout or stderr, and a process of
   an exec inherits its token, whatever else it changed: scanning every process's open files for
   that file finds the escapee that left the group, was re-parented *and* dropped the cookie
   (``setsid env -i cmd &``).

Sweeping (2 to 4) reads ``/proc`` for every process of the machine, so exec sweeps only when
its token tells that something outlived the group (:mod:`srez_daemon.services.exec`).

What none of them catches, a documented limit: a process that left the group, was re-parented,
dropped the cookie and closed the terminal (a full daemon: ``setsid env -i cmd </dev/null
>/dev/null 2>&1 &``), and a process whose environment and files the daemon may not read (another
uid, when the daemon is not root). A fork bomb
can outrun the sweep's rounds; the container's ``pids.max`` is the defence there, not this module.

Every function here is synchronous and does a little ``/proc`` I/O: call the scans through
``asyncio.to_thread``. ``signal_group`` is one system call and is fine on the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # loaded by the sweeps only: the idle daemon does not need it
    import psutil

logger = logging.getLogger(__name__)

SESSION_ENV: Final = "SREZ_SESSION"
"""The environment variable that carries a session's cookie into every process it starts."""
SWEEP_ROUNDS: Final = 3
"""Cookie scans per kill: a process forked while the first scan ran is caught by the next."""
_PROC: Final = Path("/proc")


@dataclass(frozen=True, slots=True)
class TreeCount:
    """The processes below a root: how many still run and how many are unreaped zombies."""

    live: int
    zombies: int


def new_cookie() -> str:
    """A fresh session cookie (16 hex characters; unguessable, so no session can be mistaken
    for another)."""
    return secrets.token_hex(8)


def session_env(cookie: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The daemon's environment plus the session cookie (and ``extra``), for a session's root."""
    env = dict(os.environ)
    env.update(extra or {})
    env[SESSION_ENV] = cookie
    return env


def signal_group(pgid: int, sig: int) -> bool:
    """Sends ``sig`` to a process group.

    Returns:
        True if the group had at least one process to signal, False if it is gone.
    """
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # A member changed uid (su, a setuid binary): the rest of the sweep still runs.
        logger.warning("no permission to signal process group %d with %d", pgid, sig)
        return True
    return True


def descendants(pid: int) -> list[psutil.Process]:
    """Every process below ``pid`` (children, grandchildren, ...); empty if ``pid`` is gone."""
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def tagged(cookie: str, *, born_after: int | None = None) -> list[psutil.Process]:
    """Every live process whose environment carries this session's cookie.

    Zombies are not listed (their environment is gone; they need reaping, not killing).

    Args:
        cookie: the session's cookie.
        born_after: the session root's pid, to look only at pids the kernel handed out since
            (it allocates them in increasing order and wraps once at ``pid_max``). This keeps
            the sweep after a short exec to a handful of reads; a session long enough for the
            pid counter to come all the way round must scan without it.
    """
    import psutil

    entry = f"{SESSION_ENV}={cookie}".encode()
    me = os.getpid()
    found: list[psutil.Process] = []
    for pid in _candidates(born_after):
        if pid == me:
            continue
        environ = _environ(pid)
        if environ is not None and entry in environ.split(b"\0"):
            try:
                # psutil.Process remembers the start time, so a later kill() can never hit a
                # new process that reused the pid.
                found.append(psutil.Process(pid))
            except psutil.Error:
                continue
    return found


def _candidates(born_after: int | None) -> list[int]:
    import psutil

    pids = psutil.pids()
    if born_after is None:
        return pids
    try:
        last = int((_PROC / "sys" / "kernel" / "ns_last_pid").read_text())
    except (OSError, ValueError):
        return pids
    if last >= born_after:
        return [pid for pid in pids if born_after < pid <= last]
    return [pid for pid in pids if pid > born_after or pid <= last]  # the counter wrapped


def _environ(pid: int) -> bytes | None:
    try:
        # Reading /proc directly is several times faster than psutil's parsed dict.
        with open(f"/proc/{pid}/environ", "rb") as f:  # noqa: PTH123 - hot loop, no Path objects
            return f.read()
    except FileNotFoundError:
        if _PROC.is_dir():
            return None  # the process is gone
    except OSError:
        return None
    import psutil

    try:  # no /proc (macOS, for a local daemon): psutil's slower way
        return b"\0".join(f"{k}={v}".encode() for k, v in psutil.Process(pid).environ().items())
    except psutil.Error:
        return None


def terminal_of(pid: int) -> str | None:
    """The terminal ``pid``'s stdin is (``/dev/pts/N``), or None (not a terminal, no /proc)."""
    try:
        path = str((_PROC / str(pid) / "fd" / "0").readlink())
    except OSError:
        return None
    return path if path.startswith("/dev/pts/") else None


def pipe_link(fd: int) -> str:
    """What ``/proc/<pid>/fd/<n>`` reads for a descriptor of the same pipe as ``fd``."""
    return f"pipe:[{os.fstat(fd).st_ino}]"


def holders(target: str) -> list[psutil.Process]:
    """Every live process (but this one) holding ``target`` open on any file descriptor
    (``target`` as ``/proc/<pid>/fd/<n>`` reads: ``/dev/pts/3``, ``pipe:[1234]``)."""
    import psutil

    me = os.getpid()
    found: list[psutil.Process] = []
    for pid in psutil.pids():
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")  # noqa: PTH208 - hot loop, no Path objects
        except OSError:
            continue  # gone, or another uid's
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != target:  # noqa: PTH115 - hot loop
                    continue
                found.append(psutil.Process(pid))
            except (OSError, psutil.Error):
                continue
            break
    return found


def kill_session(
    pgid: int,
    cookie: str,
    tree: Iterable[psutil.Process] | None = None,
    *,
    born_after: int | None = None,
    held: str | None = None,
) -> int:
    """SIGKILLs a session: its group, its descendants, then every process with its cookie.

    Args:
        pgid: the session's process group (its root's pid).
        cookie: the session's cookie (``SESSION_ENV``).
        tree: the root's descendants, if they were listed earlier (the pty lists them before
            its hangup); by default they are listed here, before the group is killed, while
            the root still holds them.
        born_after: passed to ``tagged``: the root's pid, for a short session.
        held: a file every process of the session holds (a pty's terminal, an exec's token
            pipe; see ``holders``): whatever still holds it is killed too.

    Returns:
        How many processes were killed one by one (besides the group's signal).
    """
    listed = descendants(pgid) if tree is None else list(tree)
    signal_group(pgid, signal.SIGKILL)
    killed = sum(_kill(p) for p in listed)
    for _ in range(SWEEP_ROUNDS):
        found = tagged(cookie, born_after=born_after)
        if held is not None:
            found += holders(held)
        if not found:
            break
        killed += sum(_kill(p) for p in found)
    if killed:
        logger.info("session %s: killed %d process(es) one by one", cookie, killed)
    return killed


def _kill(proc: psutil.Process) -> int:
    import psutil

    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return 0  # already dead; its parent (or PID 1) reaps it
        # A group leader that escaped may have children of its own in its group.
        if os.getpgid(proc.pid) == proc.pid:
            signal_group(proc.pid, signal.SIGKILL)
        proc.kill()
    except (psutil.Error, ProcessLookupError):
        return 0
    return 1


def hang_up(pgid: int) -> list[psutil.Process]:
    """Lists a session's descendants, then sends SIGHUP (and SIGCONT, so stopped jobs wake to
    take it) to its group and to each of their groups: an interactive shell puts every job in a
    group of its own, and a foreground job does not hear its shell's hangup.

    Returns:
        The descendants, listed before the hangup (pass them to ``kill_session``).
    """
    tree = descendants(pgid)
    groups = {pgid}
    for proc in tree:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(proc.pid))
    for group in groups:
        signal_group(group, signal.SIGHUP)
        signal_group(group, signal.SIGCONT)
    return tree


def count_tree(pid: int) -> TreeCount:
    """Counts the live processes and zombies below ``pid`` (``pid`` itself excluded)."""
    import psutil

    live = zombies = 0
    for proc in descendants(pid):
        try:
            status = proc.status()
        except psutil.Error:
            continue
        if status == psutil.STATUS_ZOMBIE:
            zombies += 1
        else:
            live += 1
    return TreeCount(live=live, zombies=zombies)
