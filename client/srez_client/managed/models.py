"""The files of a managed run (docs/design.md §10), as pydantic models; pure, no I/O.

``run.json`` is :class:`ManagedRun`; each ``targets/<target>/output.json`` is a
:class:`Checkpoint` holding one :class:`TaskRecord` per task; ``PAUSE`` is a :class:`PauseInfo`;
``runner.json`` is a :class:`RunnerState`. Every one of them is rewritten atomically, so a reader
sees the old or the new version, never a mix.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from srez_client.errors import UsageError
from srez_client.layout import model_slug
from srez_core.field_docs import field_docstrings
from srez_env import agent_registry

MANAGED_SCHEMA_VERSION: Final = 1
"""Version of the managed-run file formats."""
NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""What the name of a managed run or of a target looks like (a single, safe path component)."""
BASELINES: Final = agent_registry.MANAGED_BASELINES
"""The agents that need no model (and cost nothing) a managed evaluation offers."""

AgentKind = Literal["random", "heuristic", "scripted", "llm", "llm-json"]
"""The registry's managed baselines and LLM agents, spelled out for the schema (a test holds
them equal to :mod:`srez_env.agent_registry`)."""
TaskStatus = Literal["running", "completed", "interrupted", "provider_error", "failed"]
"""``running``: the attempt was started and not yet recorded as ended (after a crash, the resume
decides what it was); ``completed``: graded, counted in the scores; ``interrupted``: stopped by
``srez managed stop`` or found unfinished after a crash; ``provider_error``: the model provider
failed (not counted, retried on resume); ``failed``: the harness failed (not counted, not retried
unless ``--retry-failed``)."""
PauseReason = Literal["user", "budget", "provider"]

_FROZEN = ConfigDict(frozen=True, extra="forbid", json_schema_extra=field_docstrings)


def check_name(name: str, what: str) -> str:
    """Return ``name`` if it is a valid managed-run or target name.

    Raises:
        UsageError: Saying what is allowed.
    """
    if not NAME_RE.match(name):
        msg = (
            f"{what} {name!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
        raise UsageError(msg)
    return name


class Target(BaseModel):
    """An (agent, model) pair: one line of the queue."""

    model_config = _FROZEN

    name: str
    """``random``, ``heuristic``, ``scripted``, ``llm-<model slug with / as __>`` or
    ``llm-json-<slug>`` (each mode of a model is a target, a results folder and a row of its own)."""
    agent: AgentKind
    """The agent."""
    model: str = "none"
    """The litellm model slug (``none`` for the baselines)."""

    @property
    def is_llm(self) -> bool:
        """Whether the target calls a model (and so costs money)."""
        return self.agent in ("llm", "llm-json")


def make_target(agent: str, model: str = "none") -> Target:
    """The target of a baseline (``model`` none) or of ``llm``/``llm-json`` with a model slug.

    Raises:
        UsageError: Unknown agent, a baseline with a model, or llm without a usable slug.
    """
    if agent in BASELINES:
        if model not in ("none", ""):
            msg = f"baseline {agent!r} takes no model (got {model!r})"
            raise UsageError(msg)
        return Target(name=agent, agent=agent, model="none")
    if agent not in ("llm", "llm-json"):
        msg = f"unknown agent {agent!r} (known: {', '.join((*BASELINES, *agent_registry.LLM))})"
        raise UsageError(msg)
    from srez_client.models_catalog import valid_slug

    if not valid_slug(model):
        msg = f"{model!r} is not a model slug (expected provider/model, e.g. openai/gpt-4o)"
        raise UsageError(msg)
    name = check_name(f"{agent}-{model_slug(model)}"[:64], "target")
    return Target(name=name, agent="llm-json" if agent == "llm-json" else "llm", model=model)


def parse_target(spec: str) -> Target:
    """A target from the command line: a baseline name, ``llm:SLUG``, ``llm-json:SLUG`` or a
    bare model slug (``llm``).

    Raises:
        UsageError: If ``spec`` is none of these.
    """
    spec = spec.strip()
    if spec in BASELINES:
        return make_target(spec)
    if spec.startswith("llm-json:"):
        return make_target("llm-json", spec.removeprefix("llm-json:"))
    return make_target("llm", spec.removeprefix("llm:"))


class ManagedFile(BaseModel):
    """What every JSON file of a managed run starts with: its format version (and no field it
    does not know)."""

    model_config = _FROZEN

    schema_version: Literal[1] = MANAGED_SCHEMA_VERSION
    """Version of this format."""


class ManagedRun(ManagedFile):
    """``run.json``: the targets, tasks, backend and budget of a managed run."""

    name: str
    """Name of the managed run (its folder under ``results/managed/``)."""
    created_at: str
    """When it was created (UTC ISO-8601)."""
    backend: str
    """Where its runs execute (``inline``, ``local``, ``docker``)."""
    results_root: str
    """Absolute results root: runs go to ``<root>/<task>/...``, this run to ``<root>/managed/``."""
    tasks: list[str]
    """Task ids, in the order each target runs them."""
    targets: list[Target]
    """Targets in queue order."""
    run_seed: int = 0
    """Seed of every run."""
    daily_budget_usd: float | None = Field(default=None, ge=0)
    """Spend allowed per calendar day for all managed runs sharing ``$SREZ_STATE``; None: none."""
    cost_cap_usd: float | None = Field(default=None, gt=0)
    """Cost cap of one LLM task (passed to the agent; reserved in the ledger before the task)."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """Agent-phase time limit of one task."""

    def target(self, name: str) -> Target | None:
        """The target called ``name``, if any."""
        return next((t for t in self.targets if t.name == name), None)


class Attempt(BaseModel):
    """One attempt at a task. Earlier attempts are kept (``previous``), never deleted.

    Fields added since version 1 have defaults, so every ``output.json`` written before still
    loads as it is.
    """

    model_config = _FROZEN

    attempt: int = Field(ge=1)
    """1 for the first attempt, then 2, 3 ..."""
    status: TaskStatus
    """See :data:`TaskStatus`."""
    started_at: str
    """When the attempt started (UTC ISO-8601)."""
    finished_at: str | None = None
    """When it ended (None while ``running``)."""
    run_id: str | None = None
    """The run's id, once the backend named it."""
    results_dir: str | None = None
    """The run's results folder (kept even for interrupted attempts)."""
    result_sha256: str | None = None
    """sha256 of the results folder's ``result.json``: a completed task is verified against it."""
    reward: float | None = None
    """``reward.total``, None when not graded."""
    resolved: bool | None = None
    """Whether the incident was resolved."""
    passed: bool | None = None
    """Resolved with the right root cause."""
    cost_usd: float = 0.0
    """What the attempt cost (0 for the baselines)."""
    error_kind: str | None = None
    """``provider``, ``agent``, ``harness`` or None (from ``summary.json``); an ``interrupted``
    attempt says why: ``stopped`` (a stop ended its run) or ``crashed`` (the runner died)."""
    claimed_error_kind: str | None = None
    """What the agent's exit claimed when the harness did not attest it (``summary.json``): a
    custom agent that exits as if its provider failed is recorded so, and counted as ``agent``."""
    error: str | None = None
    """One line: what went wrong."""
    budget_day: str | None = None
    """The ledger day its cost was reserved on (None: nothing reserved)."""


class TaskRecord(Attempt):
    """The latest attempt at a task, plus the earlier ones."""

    task_id: str
    """Task id."""
    previous: list[Attempt] = []
    """Earlier attempts, oldest first."""

    def attempts(self) -> list[Attempt]:
        """Every attempt, oldest first, the latest included."""
        latest = Attempt.model_validate(self.model_dump(exclude={"task_id", "previous"}))
        return [*self.previous, latest]


class Checkpoint(ManagedFile):
    """``targets/<target>/output.json``: one record per task started, in run order."""

    target: str
    """The target's name."""
    tasks: dict[str, TaskRecord] = {}
    """Records by task id."""

    def with_record(self, record: TaskRecord) -> Checkpoint:
        """A copy with ``record`` set (replacing the task's previous record)."""
        return self.model_copy(update={"tasks": {**self.tasks, record.task_id: record}})


class PauseInfo(BaseModel):
    """``PAUSE``: the run-local pause flag, and why."""

    model_config = _FROZEN

    reason: PauseReason
    """``user`` (``srez managed pause``), ``budget`` (the day's budget is spent) or
    ``provider`` (the model provider failed on several tasks in a row: a cooldown)."""
    at: str
    """When it was written (UTC ISO-8601)."""
    day: str
    """The ledger day then (a ``budget`` pause lifts itself on a later day)."""
    message: str = ""
    """One line for people."""


class RunnerState(BaseModel):
    """``runner.json``: the runner process, for ``status`` and ``stop``."""

    model_config = _FROZEN

    pid: int
    """The runner's process id."""
    started_at: str
    """When it started."""
    target: str | None = None
    """The target it runs now."""
    task: str | None = None
    """The task it runs now."""
