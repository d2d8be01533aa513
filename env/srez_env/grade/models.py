"""``result.json``: the grade of one run as pydantic models (docs/environment.md §6.11).

Every check carries its reasons and the grade carries the ground truth, so a reader can see why a
run passed or failed without rerunning it.
"""

from __future__ import annotations

from typing import Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

GRADE_SCHEMA_VERSION: Final = 3
"""Bumped whenever a change could move any run's checks or reward: 3 judges every limit against
its own world's need (over-provisioning is a mitigation, a per-world band fails ``safe``)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Check(_Model):
    passed: bool = Field(alias="pass")
    reasons: list[str] = []


class Reward(_Model):
    total: float
    weights: dict[str, float]
    """The weights of the tier the run is in (see :func:`reward_total`)."""
    components: dict[str, float]
    """``rca``, ``evidence``, ``mitigation``, ``minimal``, ``eff`` (each in [0, 1]) and
    ``resolved`` (1 or 0: the tier)."""


class Declared(_Model):
    service: str
    fault: str


class GradeMetrics(_Model):
    end_reason: str
    invalid_actions: int
    max_repeat_invalid: int
    mutations: int
    restarts: list[str]
    evidence_witnessed: list[str]
    time_to_mitigate_min: int | None
    declared: Declared | None
    rca_service_correct: bool
    rca_kind_correct: bool
    collateral_keys: list[str]
    unneeded_ops: int
    rules_firing_at_end: list[str]
    pending_restarts: list[str]
    """Services whose file differs from their running config at the end of the soak."""
    rules_firing_after_restarts: list[str]
    """Rules firing at the end of the second soak, once the pending restarts are applied."""


class GroundTruthView(_Model):
    root_cause: Declared
    propagation: list[str]
    required_evidence: list[str]
    allowed_changes: list[str]
    allowed_restarts: list[str]


class Grade(_Model):
    """``result.json``: the grade of one run."""

    schema_version: int = GRADE_SCHEMA_VERSION
    task_id: str
    difficulty: str
    fault_kind: str
    agent: str
    model: str
    run_seed: int
    steps: int
    max_steps: int
    expert_steps: int
    checks: dict[str, Check]
    resolved: bool
    passed: bool
    reward: Reward
    metrics: GradeMetrics
    diff: str
    reference_patch: str
    ground_truth: GroundTruthView
    error_kind: Literal["provider", "harness", "model_limit", "agent"] | None = None
    """Why the run failed, when it did (:mod:`srez_env.agents.failures`): ``provider`` (the model
    provider failed for good; not the model's failure, a managed run retries it),
    ``model_limit`` (the model's context window or content filter ended the episode; counted),
    ``agent`` (the agent crashed, exited non-zero
    or ran out of time), ``harness`` (the run could not be set up or was stopped); None when the
    agent phase ended normally. Set by the host of the run, never by the grader."""

    def to_json(self) -> bytes:
        """The canonical ``result.json`` bytes (field order stable, indented, newline-terminated)."""
        options = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
        return orjson.dumps(self.model_dump(mode="json", by_alias=True), option=options)
