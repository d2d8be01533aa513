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

A backend runs runs and nothing else: it knows nothing of the results, the mirror or the model
relay. What the host gives a run (the agent's resolved command, the task's provenance, the model
relay's address and token) reaches it as data in the :class:`LaunchSpec`; mirroring, recovery of
stranded runs, regrade and the relay live in :mod:`srez_client.lifecycle`, which composes a backend
with them through this interface and the capability flags (:attr:`Backend.writes_results`,
:attr:`Backend.runs_agent_commands`, :attr:`Backend.reaches_host`, :attr:`Backend.follows_stops`,
:attr:`Backend.copies_unowned`, :attr:`Backend.relays_dialog`). Backends are made by name through
:mod:`srez_client.backends.registry`; this module imports none of them.
"""

from __future__ import annotations

import builtins
import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from srez_client.backends.config import BackendConfig
from srez_client.errors import AmbiguousRunError, NotOwnedError, RunNotFoundError, some_of
from srez_core.field_docs import field_docstrings

if TYPE_CHECKING:  # the task model is imported when a run's task is read
    from srez_env.task import Task

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


class RelayedRun(BaseModel):
    """A run a backend hands to another one to execute (``ray`` hands each run to its node's own
    backend): the run keeps the id the first backend gave it, and says so in ``run.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=field_docstrings)

    run_id: str
    """The run's id, chosen by the backend that relays it (the same on every attempt)."""
    backend: str
    """That backend's name (``run.json``'s ``backend``)."""
    attempt: str
    """This attempt's id (``run.json``'s ``attempt``)."""


class TaskFile(BaseModel):
    """A task that is not packaged (one of a ``--tasks-dir`` or ``--task-seed`` set: a held-out
    set's, say), handed to the run by the host. The run's daemon loads it instead of the packaged
    task of its id, from a file the agent cannot read (``$SREZ_STATE`` on ``local``, hidden by the
    sandbox; a root-only file in a container), so the agent meets it as it meets a packaged task."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=field_docstrings)

    content: str
    """The task, as its model's JSON (``Task.model_dump_json()``): what the daemon validates,
    so its digest is the one the host recorded."""
    set_digest: str
    """The digest of the whole set it was chosen from (:func:`srez_env.provenance.task_set_digest`)."""
    set_folder: Path | None = None
    """Where that set's files are on the launching host: hidden from a sandboxed agent, as the
    packaged task folders are (None: nowhere on this host, or not known)."""


class LaunchSpec(BaseModel):
    """What to run."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=field_docstrings)

    task_id: str
    """Task id, e.g. ``sre-007``."""
    agent_spec: str
    """``scripted``, ``heuristic``, ``random``, ``replay:PATH``, ``llm``, ``llm-json`` or
    ``cmd:NAME`` (a custom agent command, :mod:`srez_client.agent_command`)."""
    agent_cmd: tuple[str, ...] | None = None
    """The command of a ``cmd:NAME`` agent, resolved by the host (its file arguments absolute;
    :mod:`srez_client.agent_command`); only for ``cmd:`` specs."""
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
    run_id: str | None = None
    """The run's id when the host chose it (the model relay's grant names the run); None: the
    backend names the run (or :attr:`relayed` does)."""
    model_env: dict[str, str] = {}
    """What the run's agent is told about its model: the model relay's URL, the run's scoped
    token and its other ``SREZ_LLM_*`` settings, put into the run's environment as they are
    (set by the host, :mod:`srez_client.lifecycle.launch`); empty: the run calls no model
    through the host."""
    provenance: dict[str, JsonValue] = {}
    """What ``run.json`` records of the task (its world's origin, its set and its digest), as the
    host read it from the task (:func:`srez_env.provenance.task_provenance`)."""
    task_file: TaskFile | None = None
    """The task itself when it is not the packaged task of :attr:`task_id` (None: the packaged
    one)."""

    def task(self) -> Task:
        """The task the run plays: :attr:`task_file`'s, or the packaged task of its id.

        Raises:
            srez_env.errors.TaskError: If the id is unknown, or the task file is not a valid task
                of that id.
        """
        from srez_env.errors import TaskError
        from srez_env.tasks import load_tasks, parse_task_json

        if self.task_file is None:
            return load_tasks([self.task_id])[0]
        task = parse_task_json(self.task_file.content, f"the task file of {self.task_id}")
        if task.id != self.task_id:
            msg = f"the task file handed over for {self.task_id} holds task {task.id}"
            raise TaskError(msg)
        return task

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

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=field_docstrings)

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


class Backend(ABC):
    """One place runs execute. All methods are coroutines; none blocks the event loop.

    Subclasses set :attr:`name` and the capability flags that differ from the defaults, implement
    :meth:`from_config` and the abstract methods, and override the optional ones their flags
    promise.
    """

    name: ClassVar[str]
    """The backend's name (``inline``, ``local`` ...), as ``run.json`` records it."""
    writes_results: ClassVar[bool] = False
    """True when :meth:`launch` runs the episode in this process and writes the results folder
    itself: no daemon, nothing to mirror, and ``srez eval`` may drive the episodes directly."""
    runs_agent_commands: ClassVar[bool] = False
    """True when it runs custom agent commands (``cmd:NAME``)."""
    follows_stops: ClassVar[bool] = False
    """True when :meth:`stops` reports runs as they stop (``srez mirror --watch`` follows them)."""
    reaches_host: ClassVar[bool] = False
    """True when its runs reach a service of this host at :meth:`host_address` (the host's model
    relay for their LLM agents)."""
    copies_unowned: ClassVar[bool] = False
    """True when :meth:`copy_out_read_only` copies runs another state launched, never changing
    them (``srez mirror`` of such a run)."""
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

    def close(self) -> None:  # noqa: B027 (most backends hold nothing to release)
        """Release what the backend holds (connections to an engine). Default: nothing."""

    async def host_address(self) -> str | None:
        """The address of this host that the backend's runs reach it by (where the host's model
        relay listens for them): ``127.0.0.1`` for runs that are processes of this host, the
        bridge's gateway for containers. Only on backends that set :attr:`reaches_host`.
        Default: None (its runs reach no service of this host).

        Raises:
            BackendError: If the address cannot be known (no engine).
        """
        return None

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

    # ------------------------------------------------------------------ optional, by capability

    async def copyable(self) -> builtins.list[RunHandle]:
        """The runs whose process has ended and whose folder :meth:`copy_out` can copy now,
        oldest first. Default: every run of :meth:`list` that is not ``running``."""
        return [r for r in await self.list(include_exited=True) if r.status != "running"]

    async def copy_out_read_only(self, run: RunHandle, dest: Path) -> Path:
        """Like :meth:`copy_out`, for any run (owned or not), never changing it: a run that
        still runs is refused rather than paused. Only on backends that set
        :attr:`copies_unowned`.

        Raises:
            NotOwnedError: The default: only runs this state launched are copied.
        """
        if not run.owned:
            msg = f"{self.name} run {run.run_id} was not launched from this state"
            raise NotOwnedError(msg)
        return await self.copy_out(run, dest)

    @contextlib.asynccontextmanager
    async def stops(self, timeout_s: float | None = None) -> AsyncIterator[AsyncIterator[str]]:
        """Follow runs as they stop: the context opens the follow at once (a run that stops
        after it is entered is reported), and yields the ids of the runs as they stop, until
        ``timeout_s`` passes (None: until cancelled). A run may be reported twice. Only on
        backends that set :attr:`follows_stops`.

        Default: nothing is reported.
        """
        yield _no_run_ids()

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
        """The folder of a stopped run on this host (where ``srez regrade`` grades it in place),
        once nothing of the run is left running (the caller checked ``status``).

        Raises:
            NotOwnedError: If the run is not ours.

        Default: None (the backend keeps no run folder here).
        """
        return None


async def _no_run_ids() -> AsyncIterator[str]:
    empty: tuple[str, ...] = ()
    for run_id in empty:
        yield run_id


def not_found(backend: str, run_id: str) -> RunNotFoundError:
    """The error for a run a backend no longer knows."""
    return RunNotFoundError(f"no {backend} run {run_id!r}; see 'srez runs list --all'")
