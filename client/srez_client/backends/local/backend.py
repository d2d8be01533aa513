"""The ``local`` backend: one ``srez-daemon`` process per run on 127.0.0.1 (docs/design.md §9).

State of a run, in ``$SREZ_STATE/live/<run-id>/`` (folders 0700):

* ``run/``: the run folder (``SREZ_RUN_DIR``), holding ``run.json`` before the daemon starts;
* ``token``: the run's token (0600), outside ``run/`` so no mirror ever copies it;
* ``task.json``: the run's task when it is not packaged (``LaunchSpec.task_file``: a
  ``--tasks-dir`` or ``--task-seed`` set's), 0600 and outside ``run/`` like the token; the daemon
  loads it (``SREZ_TASK_FILE``) and the sandbox hides it with the rest of ``$SREZ_STATE``, and the
  set's own folder too;
* ``record.json``: the labels of docs/design.md §8 (here fields of a state file), the daemon's pid
  and start time, and the manifest, written atomically;
* ``endpoint.json``: ``{"host", "port", "pid"}``, written by the daemon once it listens;
* ``daemon.out``: the daemon's stdout and stderr (``logs/container.log`` in the mirror).

The agent runs in a bubblewrap sandbox when ``bwrap`` works here (:mod:`.sandbox`,
:mod:`srez_daemon.sandbox`): it sees no task file (packaged, or of the run's set), no token and
nothing of ``$SREZ_STATE``, and
nothing it started outlives its phase. Without one, every launch says so on stderr and
``run.json`` records ``isolation: "none"``. A relative file in ``SREZ_AGENT_CMD`` is made absolute
against the launcher's working folder.

The daemon gets only the environment it needs (:mod:`.environment`); never the token (a file),
and never a provider key for the built-in LLM agents (``llm``, ``llm-json``): their runs
reach the model through the host's model relay (docs/security.md A12), as on ``docker``: the relay
listens on :meth:`LocalBackend.host_address` (``127.0.0.1``) in the launching process, and the run
is told only its URL and a scoped token (``LaunchSpec.model_env``, :mod:`srez_client.lifecycle`).
The keys stay in the launcher's environment, where the relay's litellm reads them.
A custom command given ``--model`` (``cmd:NAME``, ``mcp:NAME``) is a program of yours that may
speak its provider's own protocol, so it gets the provider's variables (:mod:`.environment`).

Authority (docs/security.md A10): every run is listed, but copy-out, stop, remove, logs, endpoint
and token act only on runs whose labels carry this user's uid and the nonce of this state's ledger
(:mod:`srez_client.backends.state`), unless ``any_owner`` is set. ``stop`` is SIGTERM to the
daemon's process group, SIGKILL after 10 s; ``remove`` stops, then renames the live folder aside
(atomic: one of many concurrent callers wins) and deletes it. Both are idempotent and never touch
``results/``.

A daemon killed with ``kill -9`` cannot kill its agent, which runs in its own session. Whatever
the sandbox, the backend does it: ``stop``, ``remove`` and ``copy_out`` of a run whose daemon is
gone first SIGKILL every process of this user whose environment names the run's agent socket
(``SREZ_AGENT_SOCKET=<path>``, unique to the run; the agent and whatever it started carry it),
with the process groups they lead. So the mirror of a run copies files that no longer change.

A run whose launcher died stays in ``live/`` until the host mirrors it
(:mod:`srez_client.lifecycle.recovery`), runs of this state only.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import errno
import logging
import os
import secrets
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, Final, NoReturn, Self

import aiohttp

from srez_client.backends.base import Backend, LaunchSpec, RunHandle, not_found
from srez_client.backends.config import BackendConfig
from srez_client.backends.local.config import LocalConfig, SandboxMode
from srez_client.backends.local.environment import daemon_environment
from srez_client.backends.local.files import (
    LocalRecord,
    agent_socket_path,
    copy_out_folder,
    plan_manifest,
    prepare_folder,
    read_endpoint,
    write_record,
)
from srez_client.backends.local.sandbox import Isolation, choose_isolation, warning
from srez_client.backends.local.template import RunTemplate
from srez_client.backends.process import (
    is_alive,
    kill_orphans,
    spawn_session,
    start_time,
    tail_text,
    terminate,
)
from srez_client.backends.state import (
    Ledger,
    is_owned,
    private_dir,
    read_record,
    read_token,
)
from srez_client.backends.wait import poll_until_finished
from srez_client.errors import BackendError, NoDaemonError, NotOwnedError
from srez_client.layout import RUN_ID_RE

logger = logging.getLogger(__name__)

BACKEND: Final = "local"
LOOPBACK: Final = "127.0.0.1"
"""Where a local backend's model relay listens: its runs' agents are processes of this host."""
FULL_DISK_BYTES: Final = 1 << 20
"""Free space below which a failed launch blames the full state folder."""


class LocalBackend(Backend):
    """One daemon subprocess per run, state under ``state_dir/live``.

    Args:
        state_dir: The client's state folder (``$SREZ_STATE``).
        any_owner: Act on runs this state did not launch.
        daemon_argv: The daemon command (default ``python -m srez_daemon`` of this interpreter).
        ready_timeout_s: How long a launch waits for the daemon to answer ``/api/health``.
        stop_grace_s: How long ``stop`` waits after SIGTERM before SIGKILL.
        sandbox: ``auto``, ``bubblewrap`` or ``none`` (:mod:`.sandbox`); the command line
            reads it from ``$SREZ_SANDBOX`` (:class:`~.config.LocalConfig`).
        run_template: Fork each daemon from a warm run template (:mod:`.template`) rather than
            start a fresh interpreter; ``$SREZ_RUN_TEMPLATE=0`` turns it off. Only with the
            default ``daemon_argv``.
    """

    name: ClassVar[str] = BACKEND
    runs_agent_commands: ClassVar[bool] = True
    reaches_host: ClassVar[bool] = True

    def __init__(
        self,
        state_dir: Path,
        *,
        any_owner: bool = False,
        daemon_argv: Sequence[str] | None = None,
        ready_timeout_s: float = 10.0,
        stop_grace_s: float = 10.0,
        sandbox: SandboxMode = "auto",
        run_template: bool = True,
    ) -> None:
        self.state_dir = state_dir
        """The client's state folder."""
        self.live = state_dir / "live"
        """One folder per run."""
        self.ledger = Ledger(state_dir)
        """Which runs this state launched."""
        self.any_owner = any_owner
        self.daemon_argv = tuple(daemon_argv or (sys.executable, "-m", "srez_daemon"))
        self.ready_timeout_s = ready_timeout_s
        self.stop_grace_s = stop_grace_s
        self.sandbox: SandboxMode = sandbox
        """How runs' agents are isolated (checked again at each launch)."""
        self._template = (
            RunTemplate(state_dir / "template.out")
            if run_template and daemon_argv is None
            else None
        )
        """The warm run template daemons are forked from (:mod:`.template`); None: every
        daemon starts afresh."""
        self._owns_template = True

    @classmethod
    def from_config(cls, config: BackendConfig) -> Self:
        """The backend a :class:`~.config.LocalConfig` describes."""
        return cls(config.state_dir, **LocalConfig.of(config).options())

    async def host_address(self) -> str:
        """``127.0.0.1``: the runs' agents are processes of this host."""
        return LOOPBACK

    # ------------------------------------------------------------------ launch

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        """Write the run's state, spawn its daemon and wait until it answers ``/api/health``. A
        run with a model reaches it through ``spec.model_env`` (the host's model relay, listening
        on :meth:`host_address`)."""
        isolation = await asyncio.to_thread(choose_isolation, self.sandbox, os.environ)
        now = datetime.now(UTC)
        manifest = await asyncio.to_thread(
            plan_manifest, spec, now, backend=BACKEND, isolation=isolation.kind
        )  # fails fast on a bad task or agent
        private_dir(self.live)  # and the state folder, where the template's output goes
        if self._template is not None:  # before the run exists: see RunTemplate.start
            await self._template.start()
        folder = self.live / manifest.run_id
        try:
            folder.mkdir(mode=0o700)
            labels = self.ledger.claim(
                manifest,
                backend=BACKEND,
                results_root=spec.results_root.resolve(),
                created_at=manifest.started_at,
            )
            record = LocalRecord(
                run_id=manifest.run_id,
                labels=labels,
                manifest=manifest,
                keep=spec.keep,
                created_at=manifest.started_at,
            )
            task_file = spec.task_file.content if spec.task_file is not None else None
            await asyncio.to_thread(prepare_folder, folder, record, task_file)
        except OSError as e:  # a full disk, most often: nothing of the run is left behind
            await asyncio.to_thread(self._discard, folder, manifest.run_id)
            msg = (
                f"run {manifest.run_id}: cannot write its state in {folder}: {e.strerror or e}"
                f" (free space in {self.state_dir}; nothing of the run was kept, launch it again)"
            )
            raise BackendError(msg) from e
        return await self._start(folder, spec, record, isolation)

    def _discard(self, folder: Path, run_id: str) -> None:
        """Removes what a launch that failed before its daemon started had written."""
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.ledger.forget(run_id)

    async def _start(
        self, folder: Path, spec: LaunchSpec, record: LocalRecord, isolation: Isolation
    ) -> RunHandle:
        """Spawn the prepared run's daemon and wait until it is ready."""
        run_id = record.run_id
        env = daemon_environment(folder, spec, self.state_dir, isolation)
        if isolation.kind == "none":
            sys.stderr.write(warning(run_id, isolation) + "\n")
            sys.stderr.flush()
        args = ["--keep"] if spec.keep else []
        argv = [*self.daemon_argv, *args]
        try:
            pid = None
            if self._template is not None:
                pid = await self._template.spawn(args, env, folder / "daemon.out")
            if pid is None:
                pid = spawn_session(argv, env, folder / "daemon.out")
        except OSError as e:
            msg = f"run {run_id}: cannot start the daemon {argv[0]}: {e.strerror or e}"
            raise BackendError(msg) from e
        record = record.model_copy(update={"pid": pid, "pid_start": start_time(pid)})
        write_record(folder, record)
        logger.info("launched run %s (daemon pid %d)", run_id, pid)
        await self._wait_ready(folder, record)
        return self._handle(record)

    async def _wait_ready(self, folder: Path, record: LocalRecord) -> None:
        """Wait until ``/api/health`` reports the run past ``starting`` (the daemon answers health
        at once and loads the run behind it); stop the daemon otherwise. A run that finished and
        exited before a poll saw it is ready too (its folder holds summary.json)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.ready_timeout_s
        delay = 0.005
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
            while loop.time() < deadline:
                if not is_alive(record.pid, record.pid_start):
                    if (folder / "run" / "summary.json").exists():
                        return
                    self._failed(folder, record, "the daemon exited during start-up")
                base = read_endpoint(folder, record.pid)
                if base is not None:
                    with contextlib.suppress(
                        aiohttp.ClientError, TimeoutError, ValueError, KeyError
                    ):
                        async with http.get(f"{base}/api/health") as resp:
                            if resp.status == 200 and (await resp.json())["phase"] != "starting":
                                return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.02)  # start-up is short: poll it closely
        if record.pid is not None:
            await terminate(record.pid, record.pid_start, grace_s=2.0)
        why = f"the daemon did not answer /api/health within {self.ready_timeout_s:g} s"
        if not (folder / "run" / "archive" / "transcript.jsonl").exists():
            # it never began an episode: nothing of the run is worth keeping, nor left to sweep
            tail = self._tail(folder)
            await asyncio.to_thread(self._discard, folder, record.run_id)
            self._failed(folder, record, why + "; nothing of the run was kept", tail=tail)
        self._failed(folder, record, why)

    def _tail(self, folder: Path) -> str:
        return " | ".join(tail_text(folder / "daemon.out", 1000).splitlines()[-5:])

    def _failed(
        self, folder: Path, record: LocalRecord, why: str, *, tail: str | None = None
    ) -> NoReturn:
        tail = self._tail(folder) if tail is None else tail
        full = self._full_disk()
        msg = f"run {record.run_id}: {why}; daemon output: {tail or '(none)'}{full}"
        if full:  # the likeliest cause, said as such: a managed queue stops rather than go on
            no_space = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.state_dir))
            raise BackendError(msg) from no_space
        raise BackendError(msg)

    def _full_disk(self) -> str:
        """A hint when the state folder has (almost) no space left: the likeliest cause."""
        try:
            free = shutil.disk_usage(self.state_dir).free
        except OSError:
            return ""
        if free >= FULL_DISK_BYTES:
            return ""
        return f" (the state folder {self.state_dir} has {free} bytes free: free space there)"

    # ------------------------------------------------------------------ discovery

    def _record(self, run_id: str) -> LocalRecord | None:
        record = read_record(self.live, run_id, LocalRecord)
        if record is None or not record.labels.get("srez.run") == run_id == record.run_id:
            return None
        return record

    def _handle(self, record: LocalRecord) -> RunHandle:
        return RunHandle.from_labels(
            BACKEND,
            record.labels,
            status="running" if is_alive(record.pid, record.pid_start) else "exited",
            finished=(self.live / record.run_id / "run" / "summary.json").is_file(),
            owned=is_owned(record.labels, self.ledger, BACKEND),
        )

    async def list(self, include_exited: bool = False) -> builtins.list[RunHandle]:
        """Every run with a valid record under ``live/``, oldest first."""
        try:
            names = sorted(p.name for p in self.live.iterdir() if RUN_ID_RE.match(p.name))
        except FileNotFoundError:
            return []
        handles = [self._handle(r) for r in map(self._record, names) if r is not None]
        return [h for h in handles if include_exited or h.status == "running"]

    def _owned(self, run: RunHandle) -> LocalRecord | None:
        """The run's record if it is ours; None if it is gone."""
        record = self._record(run.run_id)
        if record is None:
            return None
        if not self.any_owner and not is_owned(record.labels, self.ledger, BACKEND):
            msg = f"local run {run.run_id} was not launched from this state ({self.state_dir}); pass --any to act on it"
            raise NotOwnedError(msg)
        return record

    def _require(self, run: RunHandle) -> LocalRecord:
        record = self._owned(run)
        if record is None:
            raise not_found(BACKEND, run.run_id)
        return record

    async def endpoint(self, run: RunHandle) -> str:
        """``http://127.0.0.1:<port>`` of the run's daemon (it must be running)."""
        record = self._require(run)
        base = read_endpoint(self.live / run.run_id, record.pid)
        if base is None or not is_alive(record.pid, record.pid_start):
            msg = f"run {run.run_id} has no daemon serving (it exited); its files are in results/ once mirrored"
            raise NoDaemonError(msg)
        return base

    async def token(self, run: RunHandle) -> str:
        """The run's token, from its token file."""
        self._require(run)
        return read_token(self.live, BACKEND, run.run_id)

    # ------------------------------------------------------------------ lifecycle

    async def wait(self, run: RunHandle, timeout_s: float | None = None) -> RunHandle:
        """Poll until ``summary.json`` exists or the daemon exited."""

        async def probe() -> RunHandle | None:
            record = self._record(run.run_id)
            return None if record is None else self._handle(record)

        return await poll_until_finished(
            BACKEND, run.run_id, probe, timeout_s, first_delay_s=0.01, max_delay_s=0.2
        )

    async def stop(self, run: RunHandle) -> None:
        """SIGTERM the daemon's group, SIGKILL after the grace, then kill an agent it left
        behind; nothing if all are gone."""
        record = self._owned(run)
        if record is None or record.pid is None:
            return
        await terminate(record.pid, record.pid_start, self.stop_grace_s)
        await self._reap(record)

    async def _reap(self, record: LocalRecord) -> None:
        """Kill what a dead daemon left running (its agent above all); see the module docs."""
        if is_alive(record.pid, record.pid_start):
            return
        socket = agent_socket_path(self.live / record.run_id)
        killed = await asyncio.to_thread(kill_orphans, "SREZ_AGENT_SOCKET", str(socket))
        if killed:
            logger.warning(
                "run %s: its daemon is gone; killed %d process(es) it left running: %s",
                record.run_id,
                len(killed),
                " ".join(map(str, killed)),
            )

    async def remove(self, run: RunHandle) -> None:
        """Stop the run, then delete ``live/<run-id>`` and its ledger entry (not its results)."""
        record = self._owned(run)
        if record is None:
            if not (self.live / run.run_id).exists():
                self.ledger.forget(run.run_id)  # a removal that stopped half-way
            return
        if record.pid is not None:
            await terminate(record.pid, record.pid_start, self.stop_grace_s)
        await self._reap(record)
        trash = self.live / f".removing-{run.run_id}-{secrets.token_hex(4)}"
        try:
            # one of many concurrent callers wins the rename; the others find the run gone
            (self.live / run.run_id).rename(trash)
        except FileNotFoundError:
            return
        await asyncio.to_thread(shutil.rmtree, trash, True)
        agent_socket_path(self.live / run.run_id).unlink(missing_ok=True)  # when it was elsewhere
        self.ledger.forget(run.run_id)
        logger.info("removed run %s", run.run_id)

    async def logs(self, run: RunHandle, *, follow: bool = False) -> AsyncIterator[str]:
        """The daemon's output (``daemon.out``); following it until the daemon exits."""
        record = self._require(run)
        path = self.live / run.run_id / "daemon.out"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        with os.fdopen(fd, "rb") as f:
            while True:
                chunk = await asyncio.to_thread(f.read, 1 << 16)
                if chunk:
                    yield chunk.decode("utf-8", "replace")
                    continue
                if not follow or not is_alive(record.pid, record.pid_start):
                    if not (chunk := await asyncio.to_thread(f.read)):
                        return
                    yield chunk.decode("utf-8", "replace")
                    return
                await asyncio.sleep(0.1)

    async def copy_out(self, run: RunHandle, dest: Path) -> Path:
        """Copy ``live/<run-id>/run`` into ``dest`` safely, plus ``logs/container.log`` (once an
        agent left by a dead daemon is killed)."""
        record = self._require(run)
        await self._reap(record)
        folder = self.live / run.run_id
        if not (folder / "run").is_dir():
            raise not_found(BACKEND, run.run_id)
        await asyncio.to_thread(copy_out_folder, folder, dest, run.run_id)
        return dest

    # ------------------------------------------------------------------ optional

    def share_template(self, template: RunTemplate) -> None:
        """Fork daemons from ``template``, which outlives this backend (a Ray worker's, kept for
        the runs it executes one after another); :meth:`close` leaves it running. Nothing
        changes for a backend whose template is off."""
        if self._template is not None:
            self._template, self._owns_template = template, False

    def close(self) -> None:
        """End the run template (runs it forked keep running), unless it is shared."""
        if self._template is not None and self._owns_template:
            self._template.close()

    async def stopped_run_folder(self, run: RunHandle) -> Path | None:
        """``live/<run-id>/run``, once an agent its dead daemon left is killed."""
        await self.stop(run)  # checks ownership too
        return self.live / run.run_id / "run"
