"""Helpers for the managed-run tests: the real ``srez`` CLI and runner as subprocesses.

Every test gets its own ``$SREZ_STATE`` and results root under ``tmp_path``. A slow agent (for a
task in flight) is the real ``srez-agent``, still the built-in agent (a custom command would be
an agent of its own, ``cmd:NAME``, and never the oracle), that sleeps before it starts: a
``sitecustomize`` module on ``PYTHONPATH``, which the ``local`` backend passes to its daemons and
they to their agents, sleeps in the one process that has ``SREZ_AGENT_SPEC`` (the agent).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SLOW_START = """\
import os, time
if os.environ.get("SREZ_AGENT_SPEC"):  # the agent process alone has it
    time.sleep({seconds!r})
"""


def baseline_queue(name: str, tasks: str, backend: str, baselines: str = "scripted") -> list[str]:
    """The arguments of ``srez managed create`` for a queue of baselines only (no model)."""
    return ["create", name, "--baselines", baselines, "--models", "none", "--tasks", tasks,
            "--backend", backend]  # fmt: skip


@dataclass
class Kit:
    """One test's world: the folders, the environment, and ways to call ``srez``."""

    tmp: Path
    env: dict[str, str]

    @property
    def results(self) -> Path:
        return self.tmp / "results"

    @property
    def state(self) -> Path:
        return Path(self.env["SREZ_STATE"])

    def managed(self, name: str) -> Path:
        return self.results / "managed" / name

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "srez_client.cli", *args]

    def srez(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None, **more: str
    ) -> subprocess.CompletedProcess[str]:
        """Run ``srez ARGS --results <root>`` (for ``managed`` commands) and wait; ``env`` and
        ``more`` are added to the environment."""
        full = [*args, "--results", str(self.results)] if args[0] == "managed" else list(args)
        proc = subprocess.run(
            self.argv(*full),
            env={**self.env, **(env or {}), **more},
            cwd=self.tmp,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if check and proc.returncode != 0:
            msg = f"srez {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}"
            raise AssertionError(msg)
        return proc

    def runner(
        self, name: str, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """Start ``srez managed run NAME`` without waiting."""
        argv = self.argv("managed", "run", name, "--results", str(self.results), *extra)
        with (self.tmp / "runner.err").open("a") as err:  # the child keeps its own copy
            return subprocess.Popen(
                argv,
                env={**self.env, **(env or {})},
                cwd=self.tmp,
                stdout=subprocess.DEVNULL,
                stderr=err,
                text=True,
            )

    def runner_err(self) -> str:
        """What the runners started by :meth:`runner` wrote to stderr."""
        path = self.tmp / "runner.err"
        return path.read_text()[-3000:] if path.exists() else ""

    def slow(self, seconds: float) -> dict[str, str]:
        """Environment for runs whose agent sleeps ``seconds`` first (``local`` backend).

        The delay is written into the module: the daemon gives its agent only a short list of
        variables (``PYTHONPATH`` among them), so a variable of its own would never reach it.
        """
        site = self.tmp / f"slow_start_{seconds:g}"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(SLOW_START.format(seconds=seconds))
        path = os.pathsep.join(p for p in (str(site), self.env.get("PYTHONPATH", "")) if p)
        return {"PYTHONPATH": path}

    def output(self, name: str, target: str) -> dict[str, dict[str, object]]:
        """The target's checkpoint records by task ({} before the first)."""
        path = self.managed(name) / "targets" / target / "output.json"
        if not path.exists():
            return {}
        tasks: dict[str, dict[str, object]] = json.loads(path.read_text())["tasks"]
        return tasks


def make_kit(tmp: Path) -> Kit:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SREZ_") and not k.startswith("PYTEST")
    }
    env["SREZ_STATE"] = str(tmp / "state")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    (tmp / "results").mkdir(exist_ok=True)
    return Kit(tmp, env)


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = 60.0) -> None:
    """Poll ``check`` until it is true; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            msg = f"timed out waiting for {what}"
            raise AssertionError(msg)
        time.sleep(0.02)


def results_dirs(results: Path, agent: str) -> set[str]:
    """Every final results folder of ``agent`` (baselines, model ``none``) under ``results``."""
    return {
        str(p)
        for p in results.glob(f"sre-*/none/{agent}/*")
        if p.is_dir() and not p.name.startswith(".")
    }


def running_local_runs(state: Path) -> list[str]:
    """Run ids of ``local`` daemons still alive in ``state``."""
    import asyncio

    from srez_client.backends.local.backend import LocalBackend

    handles = asyncio.run(LocalBackend(state).list())
    return [h.run_id for h in handles if h.status == "running"]
