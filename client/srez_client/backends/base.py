"""The backend interface (DESIGN.md §9): where a run executes and how the client reaches it.

Every backend implements :class:`Backend`, and one conformance suite
(``tests/client/backend_contract.py``) runs against each. A run is named by a :class:`RunHandle`;
its labels (DESIGN.md §8) say what it is and whose it is. Discovery uses labels, authority does
not: a backend acts (copy out, stop, remove) only on runs its own state launched, where both the
owner uid and the 128-bit nonce match, unless it was made with ``any_owner=True``.

Lifecycle of a run::

    launch ──▶ running ──(agent done, graded, summary.json written)──▶ finished
                  │                                                     │
                  └──────── stop (SIGTERM; summary.json is written) ────┴──▶ exited ──remove──▶ gone

``wait`` returns once the run is finished (``summary.json`` exists) or its process has exited;
a run launched with ``keep=True`` keeps serving after it is finished, until it is stopped.
``stop`` and ``remove`` are idempotent: repeating them, or calling them on a run that is already
stopped or gone, returns without error.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from srez_client.errors import RunNotFoundError

RunStatus = Literal["running", "exited", "removed"]
"""``running``: its process (daemon, container) is alive; ``exited``: it is not; ``removed``:
its state is gone."""

LABEL_KEYS: Final = (
    "srez.run",
    "srez.task",
    "srez.model",
    "srez.agent",
    "srez.results",
    "srez.nonce",
    "srez.owner",
    "srez.version",
)
"""The labels every run carries (DESIGN.md §8)."""

BACKEND_NAMES: Final = ("inline", "local", "docker")
AGENT_ENV_KEY: Final = re.compile(r"^SREZ_LLM_[A-Z0-9_]+$")
"""Names :attr:`LaunchSpec.agent_env` accepts."""
"""Backends :func:`~srez_client.backends.registry.get_backend` knows."""


class LaunchSpec(BaseModel):
    """What to run."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    task_id: str
    """Task id, e.g. ``sre-007``."""
    agent_spec: str
    """``scripted``, ``heuristic``, ``random``, ``replay:PATH``, ``llm``, ``llm-json`` or
    ``cmd:NAME`` (a custom agent command, :mod:`srez_client.agent_command`)."""
    agent_cmd: tuple[str, ...] | None = None
    """The command of a ``cmd:NAME`` agent (None: ``SREZ_AGENT_CMD`` at launch); only for
    ``cmd:`` specs."""
    model: str = "none"
    """Model slug (``none`` for the baselines)."""
    run_seed: int = 0
    """Seed of the run."""
    keep: bool = False
    """Keep the daemon serving after the run is done, until it is stopped."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """Wall-time limit of the agent phase (provider cooldown does not count)."""
    results_root: Path
    """Root of the results layout the run is mirrored into (label ``srez.results``)."""
    agent_env: dict[str, str] = {}
    """Settings of the LLM agent (``SREZ_LLM_*`` only, e.g. ``SREZ_LLM_COST_CAP_USD``), put into
    the run's environment; provider credentials come from the launcher's own environment."""

    @field_validator("agent_env")
    @classmethod
    def _llm_settings_only(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(k for k in value if not AGENT_ENV_KEY.fullmatch(k))
        if bad:
            msg = f"agent_env accepts SREZ_LLM_* settings only (names matching {AGENT_ENV_KEY.pattern}); got {', '.join(map(repr, bad))}"
            raise ValueError(msg)
        return value


class RunHandle(BaseModel):
    """A run as a backend knows it."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    run_id: str
    """Run id, ``YYYYMMDDTHHMMSSZ-<8 hex>``."""
    backend: str
    """Name of the backend that runs it."""
    task_id: str
    """Task id."""
    agent: str
    """Agent name (as the results layout uses it)."""
    model: str
    """Model slug (``none`` for the baselines)."""
    status: RunStatus
    """Whether its process is alive (see :data:`RunStatus`)."""
    finished: bool = False
    """Whether the run wrote ``summary.json`` (it ended and is graded, or failed)."""
    owned: bool = True
    """Whether this state launched it (owner uid and nonce match); others are listed, not acted on."""
    labels: dict[str, str] = {}
    """The labels of DESIGN.md §8 (``srez.run``, ``srez.task`` ...)."""

    @property
    def results_root(self) -> Path:
        """The results root the run mirrors to (label ``srez.results``)."""
        return Path(self.labels.get("srez.results", "results"))


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """How the client's backends are configured; built once by :meth:`from_env`."""

    state_dir: Path
    """Where backends keep their state (``$SREZ_STATE``, default ``~/.local/state/srez``)."""
    any_owner: bool = False
    """Act on runs another owner or state launched (``--any``)."""
    docker_image: str | None = None
    """The run image of the ``docker`` backend (``$SREZ_DOCKER_IMAGE``; default
    ``srez-run:<version>``)."""
    docker_labels: tuple[tuple[str, str], ...] = ()
    """More labels for the containers it creates (``$SREZ_DOCKER_LABELS``, ``k=v,k=v``)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, any_owner: bool = False) -> BackendSettings:
        """Read ``SREZ_STATE`` (else ``$HOME/.local/state/srez``), ``SREZ_DOCKER_IMAGE`` and
        ``SREZ_DOCKER_LABELS`` from an environment mapping."""
        state = environ.get("SREZ_STATE", "").strip()
        if state:
            state_dir = Path(state).expanduser()
        else:
            home = environ.get("HOME", "").strip() or os.path.expanduser("~")  # noqa: PTH111
            state_dir = Path(home) / ".local" / "state" / "srez"
        labels = tuple(
            (key.strip(), value.strip())
            for key, sep, value in (
                item.partition("=") for item in environ.get("SREZ_DOCKER_LABELS", "").split(",")
            )
            if sep and key.strip()
        )
        image = environ.get("SREZ_DOCKER_IMAGE", "").strip() or None
        return cls(state_dir, any_owner, image, labels)


class Backend(ABC):
    """One place runs execute. All methods are coroutines; none blocks the event loop.

    Subclasses set :attr:`name` and :attr:`writes_results`.
    """

    name: ClassVar[str]
    """The backend's name (``inline``, ``local`` ...), as ``run.json`` records it."""
    writes_results: ClassVar[bool] = False
    """True when :meth:`launch` writes the results folder itself (nothing to mirror)."""

    @abstractmethod
    async def launch(self, spec: LaunchSpec) -> RunHandle:
        """Start a run.

        Returns:
            The run, ``running`` (or already ``exited`` on backends that run synchronously).

        Raises:
            srez_env.errors.EnvError: If the task or the agent is unknown (nothing started).
            BackendError: If the run could not be started (the message says why, with the
                daemon's last output when it died).
        """

    @abstractmethod
    async def list(self, include_exited: bool = False) -> builtins.list[RunHandle]:
        """The runs this backend knows, oldest first.

        Args:
            include_exited: Also list runs whose process is gone.

        Returns:
            The runs, including those launched by another owner (``owned=False``).
        """

    async def get(self, run: str) -> RunHandle:
        """The run with id ``run``, or the only run whose id starts with ``run``.

        Raises:
            RunNotFoundError: If no run matches, or the prefix matches several.
        """
        runs = await self.list(include_exited=True)
        exact = [r for r in runs if r.run_id == run]
        matches = exact or [r for r in runs if run and r.run_id.startswith(run)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            msg = f"no {self.name} run {run!r}; see 'srez runs list --all'"
            raise RunNotFoundError(msg)
        msg = f"run prefix {run!r} matches {len(matches)} {self.name} runs; give more of the id"
        raise RunNotFoundError(msg)

    @abstractmethod
    async def endpoint(self, run: RunHandle) -> str:
        """The base URL of the run's daemon (``http://127.0.0.1:<port>``).

        Raises:
            NoDaemonError: If the run has no daemon (inline) or it is not serving.
            NotOwnedError: If the run is not ours.
        """

    @abstractmethod
    async def token(self, run: RunHandle) -> str:
        """The run's token (for ``Authorization: Bearer``).

        Raises:
            NoDaemonError: If the run has no daemon (inline).
            NotOwnedError: If the run is not ours.
        """

    @abstractmethod
    async def wait(self, run: RunHandle, timeout_s: float | None = None) -> RunHandle:
        """Wait until the run is finished (``summary.json`` written) or its process exited.

        Returns:
            The run as it is then.

        Raises:
            TimeoutError: If ``timeout_s`` passed first (the run is left as it is).
            RunNotFoundError: If the run disappeared.
        """

    @abstractmethod
    async def stop(self, run: RunHandle) -> None:
        """Stop the run: SIGTERM (the daemon writes ``summary.json``), SIGKILL after a grace.

        Idempotent: a stopped or missing run is not an error.

        Raises:
            NotOwnedError: If the run is not ours.
        """

    @abstractmethod
    async def remove(self, run: RunHandle) -> None:
        """Stop the run and delete its state (never anything under ``results/``).

        Idempotent and safe to call concurrently: a removed run is not an error.

        Raises:
            NotOwnedError: If the run is not ours.
        """

    @abstractmethod
    def logs(self, run: RunHandle, *, follow: bool = False) -> AsyncIterator[str]:
        """The run's process output (``logs/container.log`` of the mirror), as text chunks.

        Args:
            run: The run.
            follow: Keep yielding what is appended until the process exits.

        Raises:
            NotOwnedError: If the run is not ours.
        """

    @abstractmethod
    async def copy_out(self, run: RunHandle, dest: Path) -> Path:
        """Copy the run's folder into ``dest`` (created; it must not exist), safely.

        Regular files and folders only; links and special files are skipped and listed in
        ``dest/mirror.json``. The process output is added as ``logs/container.log``.

        Returns:
            ``dest``.

        Raises:
            NotOwnedError: If the run is not ours.
            FileExistsError: If ``dest`` exists.
            RunNotFoundError: If the run's folder is gone.
        """


def not_found(backend: str, run_id: str) -> RunNotFoundError:
    """The error for a run a backend no longer knows."""
    return RunNotFoundError(f"no {backend} run {run_id!r}; see 'srez runs list --all'")


def read_token(folder: Path, backend: str, run_id: str) -> str:
    """A run's token from the client's own state folder (``<folder>/<run-id>/token``); never from
    the run itself."""
    try:
        return (folder / run_id / "token").read_text().strip()
    except OSError as e:
        raise not_found(backend, run_id) from e


async def poll_until_finished(
    backend: str,
    run_id: str,
    probe: Callable[[], Awaitable[RunHandle | None]],
    timeout_s: float | None,
    *,
    first_delay_s: float,
    max_delay_s: float,
) -> RunHandle:
    """Polls ``probe`` (None: the run is gone) until the run finished or stopped running."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    delay = first_delay_s
    while True:
        handle = await probe()
        if handle is None:
            raise not_found(backend, run_id)
        if handle.finished or handle.status != "running":
            return handle
        if deadline is not None and loop.time() >= deadline:
            msg = f"run {run_id} did not finish within {timeout_s:g} s"
            raise TimeoutError(msg)
        await asyncio.sleep(delay)
        delay = min(delay * 2, max_delay_s)
