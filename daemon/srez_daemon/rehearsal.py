"""The warm run template's rehearsal: one short headless episode served in the template itself,
before it forks any run (:mod:`srez_daemon.template`).

Importing the daemon is not all a run's start costs a fork. The first time a function runs,
Python 3.11 rewrites its bytecode in place (the adaptive interpreter specialises it), and the
first time a path runs it fills lazy caches (compiled patterns, pydantic's and the router's);
in a fork, each of those writes copies a page it shared with the template. A run forked from a
template that has already served an episode finds that work done and shares those pages: about
4 MB less private memory per run's daemon, measured (``bench/thin.py``,
``pss_mb_per_run_by_part``), for about 0.13 s once, before the template says it is ready.

The rehearsal is an ordinary headless run (:mod:`srez_daemon.headless`): the ``heuristic`` agent
on :data:`TASK`, in the bubblewrap sandbox where there is one, port 0 on the loopback, its run
folder and its token (a random one nobody is told) in temporary folders that are removed after. It leaves nothing a run could
inherit, and :func:`rehearse` checks that it did not: no thread, no child, no descriptor, no file,
the daemon's log handlers (set up as a run's daemon sets them up, so that logging's code is
rehearsed too) removed, and the asyncio policy (which the daemon's child watcher sets) back to
the default. What it
computed for its task (the task's world at T0, its reference patch) is forgotten too, so every
run builds its own task's state as a fresh daemon does, whichever task it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from srez_daemon.settings import DaemonSettings

TASK: Final = "sre-001"
AGENT: Final = "heuristic"
"""The agent rehearsed: a built-in one whose process starts without loading the task models."""


class RehearsalError(Exception):
    """The rehearsal failed or left something behind: the template forks runs without it."""


def _descriptors() -> set[int]:
    """This process's open descriptors (not the one that listing them opened for a moment)."""
    listed = [int(fd.name) for fd in Path("/proc/self/fd").iterdir()]
    return {fd for fd in listed if _is_open(fd)}


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def rehearse() -> None:
    """Serve one headless episode in this process, then forget it; raises RehearsalError when
    the episode did not complete or something of it is left (a thread, a child, a descriptor).

    The agent runs in the bubblewrap sandbox when ``bwrap`` is on ``PATH`` (what the ``local``
    backend's runs use by default, so its code is rehearsed too), and again without one if that
    episode fails.
    """
    from srez_daemon.protocol.sandbox import find_bwrap

    sweep_stale(Path(_short_temp()))
    if find_bwrap(os.environ) is not None:
        try:
            _rehearse("bubblewrap")
            return
        except RehearsalError:
            pass  # a sandbox this machine cannot make: the runs will not use it either
    _rehearse("none")


def _rehearse(sandbox: str) -> None:
    from srez_daemon.__main__ import serve
    from srez_daemon.headless import outcome, prepare_headless
    from srez_daemon.settings import DaemonSettings

    descriptors = _descriptors()
    folder = Path(tempfile.mkdtemp(prefix="srez-rehearsal-", dir=_short_temp()))
    token_folder: Path | None = None
    try:
        environ = prepare_headless(
            {
                **os.environ,
                "SREZ_RUN_DIR": str(folder / "run"),
                "SREZ_AGENT_SOCKET": str(folder / "agent.sock"),
                "SREZ_HOST": "127.0.0.1",
                "SREZ_PORT": "0",
                "SREZ_SANDBOX": sandbox,
            },
            TASK,
            AGENT,
            seed=0,
            token_dir=folder,  # inside the rehearsal's folder: a killed template leaves one thing
        )
        token_folder = Path(environ["SREZ_TOKEN_FILE"]).parent
        settings = DaemonSettings.from_env(environ, keep=False)
        with _daemon_logging(settings):  # its lines are written as a run's are
            code = asyncio.run(serve(settings))
        if code != 0 or outcome(folder / "run") != 0:
            msg = f"the episode did not complete (exit {code})"
            raise RehearsalError(msg)
    except Exception as e:
        msg = f"the rehearsal ({AGENT} on {TASK}, sandbox {sandbox}) failed: {e}"
        raise RehearsalError(msg) from e
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if token_folder is not None:
            shutil.rmtree(token_folder, ignore_errors=True)
        asyncio.set_event_loop_policy(None)  # drops the child watcher of the closed loop
        forget_task_state()
    _check_nothing_left(descriptors)


@contextlib.contextmanager
def _daemon_logging(settings: DaemonSettings) -> Iterator[None]:
    """The daemon's logging set up as a run's daemon sets it up, then taken down again."""
    from srez_daemon.__main__ import configure_logging

    touched = (logging.getLogger(), logging.getLogger("aiohttp.access"))
    levels = [logger.level for logger in touched]
    handlers = configure_logging(settings)
    try:
        yield
    finally:
        for handler in handlers:
            logging.getLogger().removeHandler(handler)
            handler.close()
        for logger, level in zip(touched, levels, strict=True):
            logger.setLevel(level)


STALE_S: Final = 600.0
"""Age past which a rehearsal's leftover is a killed template's (a rehearsal takes seconds)."""
LEFTOVER: Final = "srez-rehearsal-"


def sweep_stale(temp: Path, *, older_than_s: float = STALE_S) -> list[Path]:
    """Removes what a template killed mid-rehearsal left in ``temp``: this user's
    ``srez-rehearsal-*`` folders (each holds its run folder, the 1 MiB space reserve and its
    token folder) not touched for ``older_than_s``. Returns what it removed."""
    now = time.time()  # noqa: TID251 - a file's age is wall time
    uid, removed = os.getuid(), []
    with contextlib.suppress(OSError):
        for entry in os.scandir(temp):
            if not entry.name.startswith(LEFTOVER):
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if (
                    stat.S_ISDIR(st.st_mode)
                    and st.st_uid == uid
                    and now - st.st_mtime > older_than_s
                ):
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(Path(entry.path))
    return removed


def _short_temp() -> str:
    """The temporary folder, or ``/tmp`` when it is too deep for the agent socket's path."""
    from srez_daemon.settings import MAX_SOCKET_PATH

    temp = tempfile.gettempdir()
    room = MAX_SOCKET_PATH - len("/srez-rehearsal-12345678/agent.sock")
    return temp if len(os.fsencode(temp)) <= room else "/tmp"  # noqa: S108 - short, always there


def forget_task_state() -> None:
    """Forget what the episode computed for its task: its world at T0 and its reference patch
    (the memoised pure functions of values, a file's validity or a baseline, may stay)."""
    from srez_env.grade.patch import clear_reference_cache
    from srez_env.sim.scenario import clear_templates

    clear_templates()
    clear_reference_cache()


def _check_nothing_left(descriptors: set[int]) -> None:
    left = []
    if threading.active_count() != 1:
        left.append(f"{threading.active_count() - 1} thread(s)")
    try:
        pid, _status = os.waitpid(-1, os.WNOHANG)
        if pid:
            left.append(f"an ended child ({pid})")
        else:
            left.append("a running child")
    except ChildProcessError:
        pass  # no child at all: what a rehearsal must leave
    opened = _descriptors() - descriptors
    if opened:
        left.append(f"descriptor(s) {', '.join(map(str, sorted(opened)))}")
    if left:
        msg = f"the rehearsal left {' and '.join(left)}"
        raise RehearsalError(msg)
