"""Runs the agent process: its own session, a minimal environment, and a group kill at the end.

The agent gets the agent socket's path and nothing else of the run: no token, no task file, no
provider keys unless the harness passes them explicitly (docs/security.md A3, A12). A run that names
a model (``SREZ_MODEL`` is not ``none``) passes its agent the daemon's variables that match
:data:`~srez_daemon.protocol.agent.MODEL_PASS_PATTERNS`: the LLM agent's own settings
(``SREZ_LLM_*``) and the usual provider credentials and endpoints (``OPENAI_API_KEY``,
``ANTHROPIC_API_BASE``, ``OLLAMA_HOST``, ``AZURE_API_VERSION`` ...). A baseline run gets none of
them. It runs in a new session so the daemon can kill its whole process group (and anything that
escaped with ``setsid``, found by a descendant scan) before anything private is read (docs/design.md
§2).

On ``local`` the agent runs in a bubblewrap :class:`~srez_daemon.sandbox.Sandbox`: the process
started is ``bwrap``, the agent is inside its PID namespace, and :meth:`AgentProcess.kill` kills
the namespace's init first, which kills everything inside. Every kill then waits until each
process it signalled is gone, so nothing of the agent runs once the agent phase is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from srez_core.aio import spawn
from srez_daemon.agent_network import ContainedNetwork, refuse_routes
from srez_daemon.errors import RunSetupError
from srez_daemon.protocol.agent import model_variables
from srez_daemon.record.folder import AGENT_LOG_MAX_BYTES
from srez_daemon.sandbox import Sandbox

logger = logging.getLogger(__name__)

PASS_THROUGH: Final = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TZ",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "TMPDIR",
)


def agent_environment(
    environ: Mapping[str, str], socket: Path, extra: Mapping[str, str]
) -> dict[str, str]:
    """The agent's environment: a few harmless variables, the socket, and ``extra``; plus the
    model settings and credentials when ``extra`` names a model (``SREZ_MODEL``)."""
    env = {k: environ[k] for k in PASS_THROUGH if k in environ}
    if extra.get("SREZ_MODEL", "none") not in ("", "none"):
        env.update(model_variables(environ))
    env["SREZ_AGENT_SOCKET"] = str(socket)
    # srez-agent never imports litellm; a custom agent that does makes no network call at import
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.update(extra)
    return env


@dataclass(frozen=True, slots=True)
class AgentUser:
    """The unprivileged user the agent runs as."""

    name: str
    uid: int
    gid: int
    home: str

    @classmethod
    def lookup(cls, name: str) -> AgentUser:
        """Resolves a user name; raises RunSetupError when it does not exist or the daemon cannot
        switch to it (only root can)."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            msg = f"SREZ_AGENT_USER={name!r} names no user on this machine"
            raise RunSetupError(msg) from None
        if os.geteuid() != 0 and os.geteuid() != entry.pw_uid:
            msg = f"the daemon must run as root to start the agent as {name!r}"
            raise RunSetupError(msg)
        return cls(name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


COPY_DRAIN_S: Final = 2.0
"""How long, once the agent exited, its output is still read before the log is closed."""


class AgentProcess:
    """One agent process and the tree it spawns."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        *,
        sandbox: Sandbox | None = None,
        network: ContainedNetwork | None = None,
        log_max: int = AGENT_LOG_MAX_BYTES,
    ) -> None:
        self.argv = list(argv)
        self.log_max = log_max
        """Bytes of the agent's output kept in ``logs/agent.log``; the rest is read and dropped."""
        self.output_dropped = 0
        """Bytes of the agent's output past :attr:`log_max`, read and not written."""
        self._copier: asyncio.Task[None] | None = None
        self._forward: asyncio.Server | None = None
        self.env = dict(env)
        self.log_path = log_path
        self.sandbox = sandbox
        """The agent's bubblewrap sandbox, or None: the agent runs as a plain process."""
        self.network = network
        """How the agent is cut off the network in its container, or None."""
        self._proc: asyncio.subprocess.Process | None = None
        self._descendants: set[int] = set()
        self._uid: int | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    async def start(self, cwd: Path, user: AgentUser | None = None) -> None:
        """Starts the agent with its output appended to ``logs/agent.log`` up to
        :attr:`log_max` bytes (a copier reads the agent's pipe; past the cap it writes one line
        saying so and drops the rest, so a flooding agent never blocks on a full pipe); as
        ``user`` when given (the daemon is root in a container, the agent is not). In a sandbox,
        ``cwd`` is ignored: the agent starts in its scratch folder."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(self.env)
        argv = self.argv
        if user is not None:
            env["HOME"] = user.home
            self._uid = user.uid
        if self.sandbox is not None:
            env = self.sandbox.environment(env)
            argv = self.sandbox.argv(argv)
            cwd = Path("/")
            if self.sandbox.model_socket is not None and self.sandbox.model_target is not None:
                from srez_daemon.model_forward import forward

                self._forward = await forward(self.sandbox.model_socket, *self.sandbox.model_target)
        if self.network is not None:
            env = self.network.environment(env)
            await self._contain(self.network)
        self._proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            user=user.uid if user else None,
            group=user.gid if user else None,
            extra_groups=[] if user else None,
        )
        assert self._proc.stdout is not None
        self._copier = spawn(self._copy(self._proc.stdout), name="agent output")
        logger.info("agent started: pid %s", self._proc.pid)

    async def _contain(self, network: ContainedNetwork) -> None:
        """Takes the agent's routes and opens its way to the relay, before the agent starts.

        Raises:
            OSError: Either could not be done (the agent then does not start).
        """
        await asyncio.to_thread(refuse_routes, network.uid)
        if network.model_socket is not None and network.model_target is not None:
            from srez_daemon.model_forward import forward

            self._forward = await forward(
                network.model_socket, *network.model_target, owner=(network.uid, network.gid)
            )

    async def _copy(self, output: asyncio.StreamReader) -> None:
        """The agent's output into its log, up to :attr:`log_max` bytes."""
        kept = 0
        with self.log_path.open("ab", buffering=0) as log:
            while chunk := await output.read(1 << 16):
                room = max(0, self.log_max - kept)
                if room:
                    await asyncio.to_thread(log.write, chunk[:room])
                    kept += min(room, len(chunk))
                if len(chunk) > room:
                    if not self.output_dropped:
                        notice = f"\n[srez] the agent's output passed {self.log_max} bytes: the rest is dropped\n"
                        log.write(notice.encode())
                    self.output_dropped += len(chunk) - room

    async def wait(self) -> int:
        """Waits for the agent to exit; its exit code."""
        if self._proc is None:
            msg = "the agent was never started"
            raise RuntimeError(msg)
        code = await self._proc.wait()
        self._close_forward()
        if self._copier is not None:  # the rest of what it wrote; an escapee holding the
            # pipe open is not waited for (it is killed with the agent's tree)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._copier), COPY_DRAIN_S)
        return code

    def _close_forward(self) -> None:
        if self._forward is not None:
            self._forward.close()
            self._forward = None
            for owner in (self.sandbox, self.network):
                if owner is not None and owner.model_socket is not None:
                    owner.model_socket.unlink(missing_ok=True)

    def remember_descendants(self) -> None:
        """Notes the agent's current descendants, so a later kill finds setsid escapees."""
        if self._proc is None:
            return
        import psutil  # only needed when killing; keeps the daemon's start-up short

        try:
            parent = psutil.Process(self._proc.pid)
            self._descendants |= {c.pid for c in parent.children(recursive=True)}
        except psutil.Error:
            pass

    def _same_user(self) -> set[int]:
        """Every process of the agent's own user: an escapee (setsid, double fork) is still one."""
        if self._uid is None or self._uid == os.geteuid():
            return set()
        import psutil

        found = set()
        for proc in psutil.process_iter(["uids"]):
            uids = proc.info.get("uids")
            if uids is not None and uids.real == self._uid:
                found.add(proc.pid)
        return found

    def _sandbox_init(self) -> set[int]:
        """The sandbox's init (pid 1 of its PID namespace): ``bwrap``'s child."""
        if self._proc is None or self.sandbox is None:
            return set()
        import psutil

        try:
            return {c.pid for c in psutil.Process(self._proc.pid).children()}
        except psutil.Error:
            return set()

    async def kill(self) -> None:
        """Kills the sandbox's init (and with it everything in the sandbox), the agent's process
        group and every descendant seen, then waits until each is gone; idempotent."""
        if self._proc is None:
            return
        inits = self._sandbox_init()
        for init in inits:  # first: the kernel then kills every process of the namespace
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(init, signal.SIGKILL)
        self.remember_descendants()
        pid = self._proc.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        signalled = self._descendants | self._same_user() | inits
        for child in sorted(signalled):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        if self._proc.returncode is None:
            try:
                async with asyncio.timeout(5):
                    await self._proc.wait()
            except TimeoutError:
                logger.error("agent pid %s did not die after SIGKILL", pid)
        self._close_forward()
        await _wait_gone(signalled, 5.0)


async def _wait_gone(pids: set[int], timeout_s: float) -> None:
    """Waits until none of ``pids`` runs (a zombie has stopped running); logs what is left."""
    if not pids:
        return
    import psutil

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    left = set(pids)
    while True:
        for pid in list(left):
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    left.discard(pid)
            except psutil.Error:
                left.discard(pid)
        if not left or loop.time() >= deadline:
            break
        await asyncio.sleep(0.002)
    if left:
        logger.error("agent processes %s still run after SIGKILL", sorted(left))
