"""The backend interface (docs/design.md §9): where a run executes and how the client reaches it.

Every backend implements :class:`Backend`, and one conformance suite
(``tests/client/backend_contract.py``) runs against each. A run is named by a :class:`RunHandle`;
its labels (docs/design.md §8) say what it is and whose it is. Discovery uses labels, authority does
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

Besides the lifecycle, a backend answers the command line through hooks whose defaults do
nothing, so the commands never ask which backend they hold: :meth:`Backend.recover_unmirrored`
(``srez runs list``), :meth:`Backend.mirror_stopped` (``srez mirror RUN``),
:meth:`Backend.watch_stopped` (``srez mirror --watch``), :meth:`Backend.stopped_run_folder`
(``srez regrade``) and :meth:`Backend.close`; and through traits (:attr:`Backend.writes_results`,
:attr:`Backend.runs_agent_commands`, :attr:`Backend.follows_stops`, :attr:`Backend.relays_dialog`). Backends are made by name
through :mod:`srez_client.backends.registry`; this module imports none of them.
"""

from __future__ import annotations

import builtins
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator

from srez_client.backends.config import BackendConfig
from srez_client.errors import AmbiguousRunError, RunNotFoundError, some_of

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
"""The labels every run carries (docs/design.md §8)."""

AGENT_ENV_KEY: Final = re.compile(r"^SREZ_LLM_[A-Z0-9_]+$")
"""Names :attr:`LaunchSpec.agent_env` accepts."""

Outcome = Literal["mirrored", "skipped", "refused", "failed"]
"""What mirroring a stopped run did; ``failed``: copying or writing went wrong (the run can be
mirrored again later)."""


class RelayedRun(BaseModel):
    """A run a backend hands to another one to execute (``ray`` hands each run to its node's own
    backend): the run keeps the id the first backend gave it, and says so in ``run.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    run_id: str
    """The run's id, chosen by the backend that relays it (the same on every attempt)."""
    backend: str
    """That backend's name (``run.json``'s ``backend``)."""
    attempt: str
    """This attempt's id (``run.json``'s ``attempt``)."""


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

    relayed: RelayedRun | None = None
    """Set when another backend relays the run here (its id, name and attempt); None: the
    backend names the run itself."""

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
    """The labels of docs/design.md §8 (``srez.run``, ``srez.task`` ...)."""

    @property
    def results_root(self) -> Path:
        """The results root the run mirrors to (label ``srez.results``)."""
        return Path(self.labels.get("srez.results", "results"))

    @classmethod
    def from_labels(
        cls,
        backend: str,
        labels: Mapping[str, str],
        *,
        status: RunStatus,
        finished: bool,
        owned: bool,
    ) -> Self:
        """A run named by its labels (``srez.run``, ``srez.task`` ...)."""
        return cls(
            run_id=labels.get("srez.run", ""),
            backend=backend,
            task_id=labels.get("srez.task", ""),
            agent=labels.get("srez.agent", ""),
            model=labels.get("srez.model", "none"),
            status=status,
            finished=finished,
            owned=owned,
            labels=dict(labels),
        )


@dataclass(frozen=True, slots=True)
class MirrorOutcome:
    """What happened to one stopped run that was to be mirrored."""

    run_id: str
    outcome: Outcome
    detail: str
    """The results folder, or why."""


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """How :meth:`Backend.watch_stopped` watches (``srez mirror --watch``)."""

    results_root: Path
    """The only results root accepted for runs this state did not launch."""
    once: bool = False
    """Only the runs stopped now; do not follow stops."""
    timeout_s: float | None = None
    """Stop following after this long (None: until cancelled)."""
    remove: bool = False
    """Remove the runs this state launched once mirrored."""
    report: Callable[[MirrorOutcome], None] | None = None
    """Receives each outcome as it happens."""


class Backend(ABC):
    """One place runs execute. All methods are coroutines; none blocks the event loop.

    Subclasses set :attr:`name` and the traits that differ from the defaults, implement
    :meth:`from_config`, and override the hooks that apply to them.
    """

    name: ClassVar[str]
    """The backend's name (``inline``, ``local`` ...), as ``run.json`` records it."""
    writes_results: ClassVar[bool] = False
    """True when :meth:`launch` runs the episode in this process and writes the results folder
    itself: no daemon, nothing to mirror, and ``srez eval`` may drive the episodes directly."""
    runs_agent_commands: ClassVar[bool] = False
    """True when it runs custom agent commands (``cmd:NAME``)."""
    follows_stops: ClassVar[bool] = False
    """True when :meth:`watch_stopped` follows runs as they stop (``srez mirror --watch``)."""
    relays_dialog: ClassVar[bool] = False
    """True when a run's daemon cannot be reached from here but :meth:`relayed_dialog` follows
    its dialog (``srez attach``)."""

    @classmethod
    def from_config(cls, config: BackendConfig) -> Self:
        """The backend its config describes (how the registry makes it). Every backend of the
        registry implements it; a test double made directly need not.

        Raises:
            TypeError: If ``config`` is another backend's.
            NotImplementedError: The default: the class has no config.
        """
        msg = f"{cls.__name__} is not made from a config"
        raise NotImplementedError(msg)

    def close(self) -> None:  # noqa: B027 (a hook: most backends hold nothing to release)
        """Release what the backend holds (connections, a model relay). Default: nothing."""

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
        ids = some_of([r.run_id for r in matches])
        msg = f"run prefix {run!r} matches {len(matches)} {self.name} runs ({ids}); give more of the id"
        raise AmbiguousRunError(msg)

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

    # ------------------------------------------------------------------ hooks of the commands

    async def recover_unmirrored(self, scratch: Path) -> builtins.list[MirrorOutcome]:
        """Mirror every stopped run this state launched that nobody mirrored (its ``srez run``
        or ``srez eval`` was killed), oldest first: what ``srez runs list`` does first.

        Default: nothing to recover (a backend that writes its results itself).
        """
        return []

    async def mirror_stopped(
        self, run: RunHandle, scratch: Path, *, results_root: Path, remove: bool = False
    ) -> MirrorOutcome:
        """Mirror one run that has stopped into its results folder (``srez mirror RUN``).

        Args:
            run: The run.
            scratch: A private folder for the copy before the mirror.
            results_root: The only results root accepted for a run this state did not launch
                (where the backend mirrors such runs at all).
            remove: Remove the run's state once its results folder exists (ours only).

        Default: nothing to copy (the backend writes its results itself): ``skipped``.
        """
        return MirrorOutcome(run.run_id, "skipped", f"the {self.name} backend writes its results")

    async def watch_stopped(
        self, scratch: Path, options: WatchOptions
    ) -> builtins.list[MirrorOutcome]:
        """Mirror every stopped run, then (unless ``options.once``) each one as it stops, into
        their results folders (``scratch``: a private folder for copies). Only on backends that
        set :attr:`follows_stops`.

        Returns:
            Every outcome, in order. Default: none (nothing to follow).
        """
        return []

    async def relayed_dialog(self, run: RunHandle, offset: int = 0) -> AsyncIterator[bytes]:
        """The run's dialog lines as they are relayed from where it runs, from line ``offset``,
        until the run ends (``srez attach`` of a run whose daemon is out of reach); an empty
        line marks a new attempt of the run. Only on backends that set :attr:`relays_dialog`.

        Raises:
            NotOwnedError: If the run is not ours.

        Default: nothing.
        """
        empty: tuple[bytes, ...] = ()
        for line in empty:
            yield line

    async def stopped_run_folder(self, run: RunHandle) -> Path | None:
        """The folder of a stopped run on this host, where ``srez regrade`` grades it in place,
        once nothing of the run is left running (the caller checked ``status``).

        Raises:
            NotOwnedError: If the run is not ours.

        Default: None (the backend keeps no run folder here).
        """
        return None


def not_found(backend: str, run_id: str) -> RunNotFoundError:
    """The error for a run a backend no longer knows."""
    return RunNotFoundError(f"no {backend} run {run_id!r}; see 'srez runs list --all'")
