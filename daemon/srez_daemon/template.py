"""``python -m srez_daemon.template``: the ``local`` backend's warm run template.

A run's daemon is mostly its imports: a fresh interpreter importing aiohttp, pydantic, the
simulator and the daemon costs about 0.45 CPU-s and 56 MB before the run does anything. The
template pays that once per launcher: it imports the daemon's modules, parses the packaged
tasks, serves one short episode of its own (:mod:`srez_daemon.rehearsal`: the pages a run's
first steps write are then written once, in the template, and shared), freezes what it holds
out of the garbage collector (``gc.freeze()``: a collection would otherwise write to every
object's header and unshare the pages) and waits. Each run is then an ``os.fork()`` of it, which
shares every page it does not write, and runs exactly what ``python -m srez_daemon`` runs from
there (:func:`srez_daemon.__main__.main`): it binds its socket, loads its task and starts its
sandboxed agent as a fresh daemon does.

What the template holds, and does not:

* no run state, no token and no file of any run: it never reads a run's folder, and the two
  descriptors a request carries (the run's go pipe and its output file) are closed in the template
  as soon as it has forked (the rehearsal's own folder and throwaway token are removed before
  the first fork, and nothing of its episode is left running or open);
* its standard streams and one socket, the launcher's pair (:mod:`srez_daemon.protocol.template`;
  any other descriptor the launcher let it inherit is closed at its start): nothing else can
  reach it, and when the launcher exits, however it exits, the pair reads end-of-file and the
  template exits too. Runs already forked keep running (each leads its own session, as a fresh
  daemon does);
* its children's exit statuses: it reaps each run when it ends (``SIGCHLD``), so the launcher,
  which is not their parent, sees an ended run gone rather than a zombie.

What a forked run inherits and a fresh one would not, and why it does not matter:

* the template's random state: ``random`` reseeds itself in a forked child, and every secret of a
  run (its token, nonces) comes from ``os.urandom`` through :mod:`secrets`, never from a seeded
  generator; the simulator's randomness is seeded from the task and the run seed, by design;
* the template's hash seed (``PYTHONHASHSEED``): runs of one launcher share it. Nothing a run
  writes depends on the order of a set or dict of strings (the grades of forked and fresh runs are
  compared byte for byte in ``tests/client/test_run_template.py``);
* the interpreter's start-up: ``site`` ran in the template, under the template's environment.
  The fork runs the start-up hooks (``sitecustomize``, ``usercustomize``) again under the run's,
  so a hook that depends on the environment acts as in a fresh daemon; a launcher whose
  interpreter settings (``PYTHON*`` variables) differ from the template's starts its daemon afresh
  (:mod:`srez_client.backends.local.template`);
* ``/proc/<pid>/environ`` shows the template's starting environment (:func:`passed_environment`
  of the launcher, no run's variable), while ``os.environ`` is the run's. The backend finds a dead
  daemon's agent by the agent's own environment, which is set when the daemon starts it.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Final

from srez_daemon.protocol.template import CHANNEL_FD, GO, receive, send
from srez_daemon.rehearsal import rehearse

_START_CWD = str(Path.cwd())
"""The folder the template started in: ``python -m`` put it first on ``sys.path``."""
STARTUP_HOOKS: Final = ("sitecustomize", "usercustomize")
"""The modules ``site`` imports when an interpreter starts (docs of :mod:`site`)."""


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What a forked run becomes: the daemon's arguments, its environment and working folder."""

    args: list[str]
    env: dict[str, str]
    cwd: str

    @classmethod
    def of(cls, message: dict[str, Any]) -> RunRequest:
        """The request in ``message``; raises ValueError on a malformed one."""
        args, env, cwd = message.get("args"), message.get("env"), message.get("cwd")
        if not (
            isinstance(args, list)
            and all(isinstance(a, str) for a in args)
            and isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            and isinstance(cwd, str)
        ):
            msg = "a run request needs args (strings), env (strings) and cwd"
            raise ValueError(msg)
        return cls(args, env, cwd)


def warm() -> None:
    """Import what every run's daemon imports, and parse the packaged tasks."""
    import srez_daemon.__main__
    import srez_daemon.agent_start
    import srez_daemon.runtime  # noqa: F401  (the simulator, the services, the wire models)
    from srez_env.tasks import load_tasks

    load_tasks()


def _reap(_signum: int, _frame: FrameType | None) -> None:
    """Collect every ended run (the template has no other children)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(channel: socket.socket) -> tuple[RunRequest, int, int] | None:
    """Fork one run per request until the launcher goes.

    Returns:
        In a forked run only: its request, its go pipe and its output file. In the template,
        None once the launcher's end is closed.
    """
    try:
        return _serve(channel)
    except (EOFError, OSError):  # the launcher is gone (a run it was forking never starts)
        return None


def _serve(channel: socket.socket) -> tuple[RunRequest, int, int]:
    while True:
        try:
            message, fds = receive(channel, max_fds=2)
        except ValueError as e:
            send(channel, {"error": str(e)})
            continue
        try:
            request = RunRequest.of(message)
            if len(fds) != 2:
                msg = f"a run request carries 2 descriptors, not {len(fds)}"
                raise ValueError(msg)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
        except (ValueError, OSError) as e:
            for fd in fds:
                os.close(fd)
            send(channel, {"error": str(e)})
            continue
        if pid == 0:
            channel.close()  # this process's copy only: the template keeps its own
            return request, fds[0], fds[1]
        for fd in fds:  # the template keeps nothing of a run
            os.close(fd)
        send(channel, {"pid": pid})


def _rerun_startup_hooks() -> None:
    """Run the interpreter's start-up hooks again, now under the run's environment, as a fresh
    interpreter would have run them: a hook that looks at the environment (a site's set-up, a
    test's fault injection) saw the template's when the template started. A hook that acts
    whatever the environment acts twice in the fork's memory, once inherited and once again."""
    for name in STARTUP_HOOKS:
        hook = sys.modules.get(name)
        if hook is not None and hook.__spec__ is not None:
            importlib.reload(hook)


def become_run(request: RunRequest, go: int, output: int) -> None:
    """Turn this fork into the run's daemon process, as ``posix_spawn`` would have started it:
    its own session, stdin from ``/dev/null``, stdout and stderr to its output, the run's
    environment, arguments and working folder. Waits for the launcher's go first, and exits
    without touching anything when it does not come."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    if os.read(go, 1) != GO:
        os._exit(0)  # the launcher never learnt this pid: it starts the run afresh
    os.close(go)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.chdir(request.cwd)
    if sys.path and sys.path[0] == _START_CWD:
        sys.path[0] = request.cwd  # what ``python -m`` puts first, from the run's folder
    os.environ.clear()
    os.environ.update(request.env)
    _rerun_startup_hooks()
    import srez_daemon.__main__ as daemon_main

    sys.argv = [daemon_main.__file__ or "srez_daemon", *request.args]


def main() -> int:
    """Warm up, tell the launcher, fork runs; in a run, serve it as ``srez-daemon`` does."""
    # whatever else the launcher let this process inherit (a descriptor opened without
    # close-on-exec) is closed, so no run forked from here holds it
    os.closerange(CHANNEL_FD + 1, os.sysconf("SC_OPEN_MAX"))
    channel = socket.socket(fileno=CHANNEL_FD)
    try:
        warm()
    except Exception as e:  # the launcher falls back to fresh starts and says why
        send(channel, {"error": f"the run template could not import the daemon: {e}"})
        return 1
    try:
        rehearse()
    except Exception as e:  # the imports alone still make every fork cheap
        print(f"srez-template: {e}; runs are forked without the rehearsal", file=sys.stderr)
    if threading.active_count() != 1:  # a fork copies one thread only: refuse to be forked
        send(channel, {"error": "the run template started a thread while importing"})
        return 1
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, _reap)
    try:
        send(channel, {"ready": os.getpid()})
    except OSError:  # the launcher is gone already
        return 0
    job = serve(channel)
    if job is None:
        return 0
    become_run(*job)
    import srez_daemon.__main__ as daemon_main

    daemon_main.main()  # exits with the daemon's code
    return 0


if __name__ == "__main__":
    sys.exit(main())
