"""How the ``local`` backend isolates its agents: a bubblewrap sandbox when ``bwrap`` works here,
else none, said on every run (docs/design.md §13.2; the daemon builds the sandbox, with
the options of :mod:`srez_daemon.protocol.sandbox`).

``SREZ_SANDBOX`` (:class:`~.config.LocalConfig`, or ``LocalBackend(sandbox=...)``) chooses:

* ``auto`` (default): bubblewrap when ``bwrap`` is on ``PATH`` and starts a sandbox here (user
  namespaces may be disabled, e.g. in an unprivileged container), else none;
* ``bubblewrap``: bubblewrap or no run (the launch fails, saying how to get it);
* ``none``: no sandbox.

A run without one records ``isolation: "none"`` in ``run.json`` and writes one warning line on
stderr; the agent then runs as this user, in the run folder.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from srez_client.backends.local.config import SandboxMode
from srez_client.errors import BackendError
from srez_client.shell_words import absolute_argv
from srez_daemon.protocol.sandbox import find_bwrap, namespace_options

INSTALL_HINT: Final = "apt-get install bubblewrap"


@dataclass(frozen=True, slots=True)
class Isolation:
    """What a run's agent gets: ``bubblewrap`` (with the program) or ``none`` (with why)."""

    kind: Literal["bubblewrap", "none"]
    bwrap: Path | None = None
    why: str = ""


NO_ISOLATION: Final = Isolation("none")


@functools.cache
def bwrap_problem(bwrap: Path) -> str | None:
    """Why ``bwrap`` cannot start a sandbox here (None: it can). Tried once per process, with the
    namespace options every run uses."""
    true = shutil.which("true") or "/bin/true"
    argv = [str(bwrap), *namespace_options(network=False)]
    argv += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", true]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{bwrap} did not run: {e}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{bwrap} cannot make a sandbox here: {detail[-1] if detail else done.returncode}"
    return None


def choose_isolation(mode: SandboxMode, environ: Mapping[str, str]) -> Isolation:
    """The isolation a run gets in ``mode``; blocking (the first call may try ``bwrap``).

    Raises:
        BackendError: ``mode`` is ``bubblewrap`` and bwrap is missing or does not work.
    """
    if mode == "none":
        return Isolation("none", why="SREZ_SANDBOX=none")
    bwrap = find_bwrap(environ)
    problem = f"bwrap is not installed ({INSTALL_HINT})" if bwrap is None else bwrap_problem(bwrap)
    if problem is None and bwrap is not None:
        return Isolation("bubblewrap", bwrap)
    if mode == "bubblewrap":
        msg = (
            f"SREZ_SANDBOX=bubblewrap, but {problem}; or run untrusted agents with --backend docker"
        )
        raise BackendError(msg)
    return Isolation("none", why=problem or "")


def warning(run_id: str, isolation: Isolation) -> str:
    """The one line a run without a sandbox writes on stderr."""
    return (
        f"srez: warning: run {run_id}: the agent is not isolated ({isolation.why}): it runs as"
        " you and can read the task files and rewrite its own grade; use --backend docker for"
        f" agents you do not trust, or install bubblewrap ({INSTALL_HINT})"
    )


def absolute_command(raw: str, cwd: Path) -> str:
    """``SREZ_AGENT_CMD`` with each argument that names an existing file relative to ``cwd`` made
    absolute: the daemon starts the agent elsewhere (in its sandbox's scratch folder, or the run
    folder), and a sandbox shows it the files its command names. Unparsable text is returned as
    it is (the daemon refuses it with its own message)."""
    try:
        argv = json.loads(raw)
    except ValueError:
        return raw
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        return raw
    return json.dumps(list(absolute_argv(argv, cwd)))
