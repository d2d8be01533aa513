""":class:`~.source.ManagedSource` on the real managed-run API (:mod:`srez_client.managed.api`).

Every method blocks (small file reads and writes; ``stop`` waits for the runner to exit), so the
screens call them through ``asyncio.to_thread``.

The runner is started as ``python -m srez_client.cli managed run NAME --target T --results ROOT``
with this interpreter, in a new session (its own process group, so a Ctrl-C or a hang-up of the
terminal does not reach it, and quitting the TUI leaves it running) and with ``SREZ_STATE`` set
to the TUI's state folder. It writes its own ``console.log`` and ``runner.log``; what it prints
before those are open (a bad argument, a runner already running) goes to
``$SREZ_STATE/tui/launch-<run>-<target>.log``, and :meth:`ManagedApiSource.ended_launches`
reports every runner that exited (the dashboard and the monitor poll it, which also reaps it), so
a failed start is never silent and a finished runner never stays a zombie. A model target
without its provider key is refused before the runner starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from srez_client.errors import ClientError
from srez_client.managed import api
from srez_client.managed.models import Target, check_name
from srez_client.managed.store import ManagedPaths, load_checkpoint
from srez_client.provider_keys import check_provider_keys
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.source import QUIET_EXITS, CreateRequest, EndedLaunch, RunStatus


class ManagedApiSource:
    """The managed runs of one results root, with the budget ledger of one state folder."""

    def __init__(self, results_root: Path, state_dir: Path) -> None:
        """Act on ``results_root/managed/`` with ``state_dir`` as ``$SREZ_STATE``."""
        self.results_root = results_root
        self.state_dir = state_dir
        self._launched: dict[tuple[str, str], tuple[subprocess.Popen[bytes], Path]] = {}
        self._lock = threading.Lock()  # start() runs in a worker thread, the reaping on the loop

    def list_runs(self) -> list[RunStatus]:
        """Every readable managed run (a broken one is left out, not fatal)."""
        out = []
        for name in api.list_managed(self.results_root):
            try:
                out.append(self.status(name))
            except (ClientError, ValueError, OSError):
                continue
        return out

    def status(self, name: str) -> RunStatus:
        """``run.json``, the API's status and every target's checkpoint."""
        run = api.read_run(self.results_root, name)
        status = api.status(self.results_root, name, state_dir=self.state_dir)
        paths = ManagedPaths.of(self.results_root, name)
        checkpoints = {t.name: load_checkpoint(paths, t.name) for t in run.targets}
        return RunStatus(run, paths.root, status, checkpoints)

    def create(self, request: CreateRequest) -> RunStatus:
        """Creates the run; no task ids means every packaged task."""
        from srez_env.tasks import load_tasks

        tasks = [t.id for t in load_tasks(list(request.tasks) if request.tasks else None)]
        api.create_managed(
            self.results_root,
            request.name,
            targets=request.targets,
            tasks=tasks,
            backend=request.backend,
            daily_budget_usd=request.daily_budget_usd,
            cost_cap_usd=request.cost_cap_usd,
        )
        return self.status(request.name)

    def add_target(self, name: str, target: Target) -> None:
        """Appends ``target`` to the queue."""
        spec = f"{target.agent}:{target.model}" if target.is_llm else target.name
        api.add_target(self.results_root, name, spec)

    def remove_target(self, name: str, target: str) -> None:
        """Takes ``target`` out of the queue."""
        api.remove_target(self.results_root, name, target)

    def start(self, name: str, target: str) -> int:
        """Starts ``srez managed run NAME --target T`` detached; its pid.

        A model target whose provider litellm does not know, or whose key is not set, is refused
        here, before anything starts (as ``srez managed run`` refuses it), so the dashboard says
        why at once rather than in a runner's log a poll later.
        """
        check_name(name, "managed run name")
        check_name(target, "target name")
        queued = {t.name: t for t in self.status(name).run.targets}
        if target in queued:
            check_provider_keys([queued[target].model], os.environ)
        self.ended_launches()  # reap what ended before starting anew
        argv = [sys.executable, "-m", "srez_client.cli", "managed", "run", name]
        argv += ["--target", target, "--results", str(self.results_root)]
        log = self.state_dir / "tui" / f"launch-{name}-{target}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SREZ_STATE": str(self.state_dir)}
        with log.open("wb") as out:
            proc = subprocess.Popen(  # noqa: S603 - our own interpreter and CLI, no shell
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        with self._lock:
            self._launched[(name, target)] = (proc, log)
        return proc.pid

    def ended_launches(self) -> list[EndedLaunch]:
        """The runners started here that exited since the last call, failed or not.

        Polling also reaps the runners that ended, so none stays a zombie: every screen that is
        shown while a runner may end (the dashboard, the monitor) calls it on each poll.
        """
        ended = []
        with self._lock:
            for key, (proc, log) in list(self._launched.items()):
                code = proc.poll()
                if code is not None:
                    del self._launched[key]
                    ended.append((key, code, log))
        return [
            EndedLaunch(run, target, code, "" if code in QUIET_EXITS else _last_line(log))
            for (run, target), code, log in ended
        ]

    def pause(self, name: str) -> None:
        """Writes ``PAUSE``."""
        api.pause(self.results_root, name)

    def stop(self, name: str) -> None:
        """Ends the runner and its in-flight run (waits for it, up to the API's timeout)."""
        api.stop(self.results_root, name)

    def clear_pause(self, name: str) -> None:
        """Removes ``PAUSE``."""
        api.clear_pause(self.results_root, name)

    def summarize(self, name: str) -> Sequence[Path]:
        """Rebuilds every summary; the combined files."""
        api.summarize(self.results_root, name)
        folder = ManagedPaths.of(self.results_root, name).root
        return [p for p in (folder / f"summary.{x}" for x in ("json", "md", "png")) if p.exists()]

    def export_queue(self, name: str) -> Sequence[Path]:
        """Writes ``command.sh`` and ``command.ps1``."""
        return api.export_queue(self.results_root, name)

    def delete_target_artifacts(self, name: str, target: str) -> None:
        """Deletes the target's folder and its results folders."""
        api.delete_target_artifacts(self.results_root, name, target)

    def delete(self, name: str) -> None:
        """Deletes the managed run's folder."""
        api.delete_managed(self.results_root, name)


def _last_line(log: Path) -> str:
    try:
        data = log.read_bytes()[-4096:]
    except OSError:
        return f"(no output; {log})"
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return sanitize_line(lines[-1]) if lines else f"(no output; {log})"


__all__ = ["ManagedApiSource"]
