"""Models of a run's small JSON files: ``run.json`` (what was launched) and ``summary.json``.

Both are written by whatever hosts the run (the daemon, or the inline backend) and read by the
client's mirror, viewers and summaries (docs/design.md §7). ``summary.json`` is written last, also
when the run ends on an error, so its presence marks a finished run.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from srez_core.field_docs import field_docstrings
from srez_daemon.protocol.dialog import PROTOCOL_VERSION, TokenCount, UtcTimestamp

RUN_FILES_SCHEMA_VERSION: Final = 1
"""Version of the ``run.json`` and ``summary.json`` formats."""


class _RunFile(BaseModel):
    """What both files start with: their format version and whose run they describe."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)

    schema_version: Literal[1] = RUN_FILES_SCHEMA_VERSION
    """Version of this format."""
    run_id: str
    """Run id, ``YYYYMMDDTHHMMSSZ-<8 hex>``."""
    task_id: str
    """Task id, e.g. ``sre-007``."""
    agent: str
    """Agent name as the results layout uses it."""


class RunAttempt(BaseModel):
    """One attempt of a run on a backend that retries runs elsewhere (``ray``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)

    attempt: str
    """Attempt id (8 hex digits), new for every try."""
    node: str
    """Where it ran (the Ray node id)."""
    started_at: UtcTimestamp
    """When it started on its node."""


class RunManifest(_RunFile):
    """``run.json``: what was launched, written before the agent starts."""

    agent_spec: str
    """The agent as requested (``scripted``, ``replay:PATH``, ``cmd:NAME`` ...)."""
    agent_cmd: tuple[str, ...] | None = None
    """The command line of a custom agent (``agent_spec`` ``cmd:NAME``, ``agent`` NAME), as run;
    None for the built-in agents."""
    model: str
    """Model slug as given (``none`` for the baselines)."""
    backend: str
    """Backend that ran it (``inline``, ``local``, ``docker``)."""
    run_seed: int
    """Seed of the run (the environment is deterministic; agents may sample with it)."""
    srez_version: str
    """Version of the ``srez`` distribution that ran it."""
    protocol_version: int = PROTOCOL_VERSION
    """Dialog protocol version of ``archive/dialog.jsonl``."""
    started_at: UtcTimestamp
    """When the run started."""
    world_generator: str | None = None
    """The generator (and its version) that drew the task's base world; None for a task file
    with no ``world`` block (the typical world)."""
    world_seed: int | None = None
    """The seed of the task's world."""
    task_set_seed: int | None = None
    """The seed of the task set the task was generated in: with ``world_generator`` it
    reproduces the set (a held-out set's seed stays private)."""
    isolation: Literal["none", "bubblewrap", "container"] | None = None
    """How the agent was kept from the harness: ``container`` (``docker``: its own container and
    user), ``bubblewrap`` (``local``: a bubblewrap sandbox that shows it no task file, token or run
    folder and kills everything it started when its phase ends), ``none`` (a plain process of the
    launching user, which can read and write what that user can); None in a ``run.json`` written
    before this was recorded, or by a backend that does not say (``inline``)."""
    attempt: str | None = None
    """The attempt that wrote this folder, on a backend that may run a run again elsewhere
    (``ray``: a run whose node was lost is retried under a new attempt id); None elsewhere."""
    attempts: tuple[RunAttempt, ...] = ()
    """Every attempt of the run that started, in order, the last one being :attr:`attempt`;
    written by the launcher once the run came back (empty elsewhere)."""
    task_set: Literal["canonical", "generated", "custom"] | None = None
    """The task set of the task (``srez_env.provenance``): ``canonical`` (the packaged task of
    its id, unchanged), ``generated`` (drawn in a generated set of ``task_set_seed``) or
    ``custom``; None in a ``run.json`` written before this was recorded."""
    task_digest: str | None = None
    """16 hex digits of the SHA-256 of the task's content; None before it was recorded."""
    task_set_digest: str | None = None
    """16 hex digits naming the whole task set the task was chosen from (the packaged 40, or
    every task file of a ``--tasks-dir`` or ``--task-seed`` set; ``srez_env.provenance``); None
    before it was recorded, or for a task handed over alone."""


class Provenance(BaseModel):
    """Where a score comes from, as ``summary.json`` names it: the task set, the project's
    version and the grade's. Scores compare only within one task set and one grade version
    (``srez_client.results.provenance`` says when a leaderboard may merge them)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)

    task_set: Literal["canonical", "generated", "custom"] | None
    """As in ``run.json`` (None when the launcher did not record it)."""
    generator: str | None
    """The world generator and its version (``srez-worlds/1``); None for a task of the typical
    world."""
    task_set_seed: int | None
    """The seed of the generated set (the canonical set's, for the canonical tasks)."""
    task_digest: str | None
    """16 hex digits naming the task's content."""
    task_set_digest: str | None = None
    """As in ``run.json``: the set the task was chosen from (runs of two sets never share a
    leaderboard); None in a summary written before this was recorded."""
    srez_version: str
    """Version of the ``srez`` distribution that ran and graded the run."""
    grade_version: int | None
    """The grade's version (``result.json``'s ``schema_version``), None when not graded."""

    @classmethod
    def of(cls, manifest: RunManifest, grade_version: int | None) -> Provenance:
        """The provenance of a run from its manifest and its grade's version."""
        return cls(
            task_set=manifest.task_set,
            generator=manifest.world_generator,
            task_set_seed=manifest.task_set_seed,
            task_digest=manifest.task_digest,
            task_set_digest=manifest.task_set_digest,
            srez_version=manifest.srez_version,
            grade_version=grade_version,
        )


class RunSummary(_RunFile):
    """``summary.json``: how the run ended, written last."""

    model: str
    """Model slug (``none`` for the baselines)."""
    status: Literal["ok", "error"]
    """``error`` when the agent or the harness failed; the run may still have been graded."""
    reward: float | None
    """``reward.total`` of ``result.json``, or None when the run was not graded."""
    resolved: bool | None
    """Whether the incident was resolved (valid, func, safe and intent), None if not graded."""
    passed: bool | None
    """Resolved and the root cause declared correctly, None if not graded."""
    steps: int | None = Field(ge=0)
    """Steps used, None if not graded."""
    end_reason: str | None = None
    """How the episode ended: ``submit``, ``agent_exit``, ``time_limit`` or ``step_budget``."""
    duration_s: float = Field(ge=0)
    """Wall time from start to the end of grading."""
    finished_at: UtcTimestamp
    """When the run finished."""
    error: str | None = None
    """What went wrong, one line; None on ``ok``."""
    error_kind: Literal["provider", "harness", "model_limit", "agent"] | None = None
    """Whose failure ``error`` is (``srez_env.agents.failures``): ``provider`` (the model provider
    failed for good; retry the task, do not count it), ``model_limit`` (the model's context window
    or content filter ended the episode; graded and counted), ``agent`` (the agent crashed, exited non-zero or ran out of time),
    ``harness`` (the run could not start, grading failed, or it was stopped); None on ``ok``.
    ``provider`` and an agent's ``harness`` count only when attested: the built-in agent's exit
    (``srez_daemon.attest``); a custom agent's claim is ``claimed_error_kind``."""
    claimed_error_kind: Literal["provider", "harness", "model_limit", "agent"] | None = None
    """What the agent's exit claimed when the harness did not attest it (a custom agent exiting 75
    after a ``provider_error`` note): kept for people to read; the run counts as ``error_kind``
    ``agent``, is scored and is not re-run. None when there was no such claim."""
    cost_usd: float | None = Field(default=0.0, ge=0)
    """What the agent's model calls cost, in US dollars: 0 for baselines, None when a call's
    price is unknown (an unpriced model; a budget must then assume the worst)."""
    tokens: TokenCount = TokenCount()
    """Tokens the agent's model used in the run (input and output totals)."""
    notes_dropped: int = Field(default=0, ge=0)
    """Notes of the agent refused and not recorded: over the per-note size cap, or after the
    run's notes reached a cap (the dialog then holds one ``notes_dropped`` entry)."""
    agent_output_dropped: int = Field(default=0, ge=0)
    """Bytes of the agent's stdout and stderr past the log's cap (``SREZ_AGENT_LOG_MAX_BYTES``),
    read and not kept; ``logs/agent.log`` ends its kept part with a line saying so."""
    truncated: bool = False
    """Whether the dialog is missing anything the agent sent: True when ``notes_dropped`` > 0.
    The tool record is never dropped."""
    graded_by: Literal["host"] | None = None
    """``host`` when the launcher graded the run from its transcript because the run's daemon
    died before grading (``srez regrade``, :mod:`srez_client.results.regrade`); None when the run graded
    itself (its daemon, or the inline backend)."""
    provenance: Provenance | None = None
    """Where the score comes from (task set, project and grade versions); None in a summary
    written before this was recorded."""
