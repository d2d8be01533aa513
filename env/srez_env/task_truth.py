"""The answer blocks of a task file (docs/environment.md §3.9, §3.11): the ground truth the grader
and the oracle read, the reference fix and the calibration, never shown to the agent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from srez_env import actions
from srez_env.task_scenario import KEY_RE, SERVICE_RE
from srez_env.task_world import Strict
from srez_env.vocab import SERVICES, FaultKind, ServiceName


def evidence_tool_args(tool: str) -> frozenset[str] | None:
    """The arguments of ``tool`` if an evidence item may name it, else None: an evidence item
    names any read tool of the action registry (§3.7), read at each call, never copied."""
    if tool not in actions.tools_of("read"):
        return None
    return frozenset(actions.TOOLS[tool].args.model_fields)


MUTATING_TOOL_ARGS: Mapping[str, frozenset[str]] = {
    name: frozenset(spec.args.model_fields)
    for name, spec in actions.TOOLS.items()
    if name in actions.MUTATING
}
"""The mutating tools and their exact arguments; a reference fix uses only these."""

_CHANGE_RE = re.compile(rf"^(?:{SERVICE_RE}):{KEY_RE}$")


class EvidenceItem(Strict):
    """An observation an expert makes before acting (§3.9): matched by args and a witness."""

    id: str = Field(min_length=1)
    tool: str
    """A read tool of the action registry (:func:`evidence_tool_args`)."""
    match: dict[str, str] = {}
    """Arguments a call must have, compared by equality; the others are free."""
    oracle_args: dict[str, StrictInt | str] = {}
    """Extra arguments the oracle adds to reach the witness (not matched)."""
    witness: str | None = None
    """A substring the observation must contain (for ``get_config``: a whole line)."""
    why: str = Field(min_length=1)

    @field_validator("tool")
    @classmethod
    def _a_read_tool(cls, tool: str) -> str:
        if evidence_tool_args(tool) is None:
            tools = ", ".join(actions.tools_of("read"))
            msg = f"{tool!r} is not a read tool (allowed: {tools})"
            raise ValueError(msg)
        return tool

    @model_validator(mode="after")
    def _args_of_tool(self) -> EvidenceItem:
        allowed = evidence_tool_args(self.tool) or frozenset()
        shown = ", ".join(sorted(allowed)) or "none"
        for field, args in (("match", self.match), ("oracle_args", self.oracle_args)):
            unknown = sorted(set(args) - allowed)
            if unknown:
                names = ", ".join(unknown)
                msg = f"{field}: {names} not an argument of {self.tool} (allowed: {shown})"
                raise ValueError(msg)
        both = sorted(set(self.match) & set(self.oracle_args))
        if both:
            msg = f"oracle_args: {', '.join(both)} already in match; the two must be disjoint"
            raise ValueError(msg)
        return self


class RootCause(Strict):
    """The (service, fault kind) the agent must declare."""

    service: ServiceName | Literal["none"]
    fault: FaultKind


class GroundTruth(Strict):
    """What the grader and the oracle know and the agent does not."""

    root_cause: RootCause
    propagation: list[ServiceName]
    """The root first, then the services its failure reaches, in causal order."""
    required_evidence: list[EvidenceItem] = Field(min_length=1)
    allowed_changes: list[str]
    """Keys the fix may change, as ``"service:key"``; anything else is collateral."""
    allowed_restarts: list[ServiceName] = []
    """Services the fix may restart (``restart`` or ``rollback``) without penalty."""

    @field_validator("allowed_changes")
    @classmethod
    def _change_refs(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            if not _CHANGE_RE.match(ref):
                msg = f"{ref!r} must look like 'service:key' (e.g. 'payments:db.pool_max')"
                raise ValueError(msg)
        return refs

    @field_validator("required_evidence")
    @classmethod
    def _unique_ids(cls, items: list[EvidenceItem]) -> list[EvidenceItem]:
        seen: set[str] = set()
        for item in items:
            if item.id in seen:
                msg = f"evidence id {item.id!r} is used twice; ids must be unique"
                raise ValueError(msg)
            seen.add(item.id)
        return items

    @field_validator("propagation")
    @classmethod
    def _no_repeats(cls, services: list[ServiceName]) -> list[ServiceName]:
        if len(set(services)) != len(services):
            msg = f"{services} lists a service twice"
            raise ValueError(msg)
        return services


class Calibration(Strict):
    """Expected outcomes of the two calibrators (§6.12, §6.13), asserted per task by CI."""

    heuristic_expected: bool
    """Whether the heuristic expert passes the task."""
    loudest_expected: ServiceName | Literal["none"]
    """The service the loudest-anomaly calibrator blames at T0."""


class Action(Strict):
    """One tool call, ``{tool, args}``."""

    tool: str = Field(min_length=1)
    args: dict[str, StrictInt | str] = {}
    """Arguments; integers stay integers (``replicas``) and strings stay strings (``"5432"``)."""

    def changed_key(self) -> str | None:
        """The ``service:key`` this mutation changes in the files; None if it changes none."""
        service = self.args.get("service")
        if self.tool == "set_config":
            return f"{service}:{self.args['key']}"
        if self.tool == "rollback":
            return f"{service}:deploy.version"
        if self.tool == "scale":
            return f"{service}:deploy.replicas"
        return None

    def restarted_service(self) -> str | None:
        """The service this mutation restarts (a rollback redeploys it); None if none."""
        return str(self.args["service"]) if self.tool in ("restart", "rollback") else None


def check_fix_action(where: str, action: Action) -> None:
    """Checks one reference-fix action: a mutating tool with exactly its arguments, typed.

    Raises:
        ValueError: naming ``where`` and the field that is wrong.
    """
    allowed = MUTATING_TOOL_ARGS.get(action.tool)
    if allowed is None:
        tools = ", ".join(MUTATING_TOOL_ARGS)
        msg = f"{where}.tool: {action.tool!r} is not a mutating tool (allowed: {tools})"
        raise ValueError(msg)
    if set(action.args) != allowed:
        msg = f"{where}.args: {action.tool} takes exactly {', '.join(sorted(allowed))}"
        raise ValueError(msg)
    service = action.args["service"]
    if service not in SERVICES:
        msg = f"{where}.args.service: {service!r} is not one of {', '.join(SERVICES)}"
        raise ValueError(msg)
    for arg, value in action.args.items():
        wants_int = arg == "replicas"
        if isinstance(value, int) != wants_int:
            kind = "an integer" if wants_int else "a string"
            msg = f"{where}.args.{arg}: must be {kind}, got {value!r}"
            raise ValueError(msg)
