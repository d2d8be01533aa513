"""Headless runs: ``srez-daemon --task ID --agent NAME --out DIR`` runs one episode with no client.

This is what a CI job does with the run image (``docker run --rm -v "$PWD/out:/out" srez-run:<v>
--task sre-007 --agent scripted --out /out``): the daemon makes its own run folder and a random
token nobody is told (its API stays closed), runs the episode, and copies the finished run folder
to ``--out``. The LLM agents (``--agent llm`` or ``llm-json``) take their model from
``SREZ_MODEL`` and their settings from ``SREZ_LLM_*`` (:mod:`srez_env.agents.llm`). Exit code 0 when the run completed (whatever its score), 1 when it failed to run,
2 on bad input.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import orjson

from srez_core.atomic import atomic_write_bytes
from srez_core.clock import utc_timestamp
from srez_core.wire_version import srez_version
from srez_daemon.errors import RunSetupError
from srez_env import agent_registry

AGENTS = agent_registry.LAUNCHABLE
"""The built-in agents headless mode runs by name (``replay:FILE`` too)."""


def check_agent(spec: str) -> None:
    """Refuses an agent spec no agent answers to, before anything starts."""
    if spec in AGENTS:
        return
    if spec.startswith("replay:") and Path(spec.removeprefix("replay:")).is_file():
        return
    msg = f"unknown agent {spec!r} (known: {', '.join(AGENTS)}, replay:FILE with an existing file)"
    raise RunSetupError(msg)


def prepare_headless(
    environ: Mapping[str, str],
    task_id: str,
    agent_spec: str,
    seed: int,
    *,
    token_dir: Path | None = None,
) -> dict[str, str]:
    """Writes a run folder with ``run.json`` and a private token (in a new folder under
    ``token_dir``, default the temporary folder); the environment to serve it."""
    check_agent(agent_spec)
    model = environ.get("SREZ_MODEL", "").strip() or "none"
    if agent_spec.startswith("llm") and model == "none":
        msg = f"--agent {agent_spec} needs a model: set SREZ_MODEL to a litellm slug (e.g. openai/gpt-4o-mini)"
        raise RunSetupError(msg)
    run_dir = Path(environ.get("SREZ_RUN_DIR") or tempfile.mkdtemp(prefix="srez-run-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix="srez-token-", dir=token_dir))
    token = private / "token"
    token.write_text(secrets.token_urlsafe(32))
    token.chmod(0o400)
    now = datetime.now(UTC)
    manifest = {
        "schema_version": 1,
        "run_id": f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}",
        "task_id": task_id,
        "agent": agent_spec.split(":", 1)[0],
        "agent_spec": agent_spec,
        "model": model,
        "backend": "headless",
        "run_seed": seed,
        "srez_version": srez_version(),
        "started_at": utc_timestamp(now),
    }
    atomic_write_bytes(run_dir / "run.json", orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return {**environ, "SREZ_RUN_DIR": str(run_dir), "SREZ_TOKEN_FILE": str(token)}


def copy_run(run_dir: Path, out: Path) -> None:
    """Copies the finished run folder to ``out``: regular files and folders only (the agent's
    socket, links and special files stay behind)."""
    out.mkdir(parents=True, exist_ok=True)

    def keep(folder: str, names: list[str]) -> list[str]:
        skipped = []
        for name in names:
            mode = os.lstat(Path(folder) / name).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                skipped.append(name)
        return skipped

    ignore: Callable[[str, list[str]], list[str]] = keep
    shutil.copytree(run_dir, out, symlinks=True, ignore=ignore, dirs_exist_ok=True)


def outcome(run_dir: Path) -> int:
    """0 when the run completed and was graded, 1 otherwise."""
    try:
        state = orjson.loads((run_dir / "state.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return 1
    return 0 if state.get("phase") == "done" and (run_dir / "summary.json").is_file() else 1
