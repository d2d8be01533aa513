"""The tools: argument models, tool specs (the registry :data:`TOOLS`) and the closed set of error
codes (docs/environment.md §3.7).

Arguments are pydantic models with ``extra="forbid"``; the OpenAI-style function specs handed to
LLM agents are exported from the same models, so the schema an agent sees is the one we validate.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from srez_core.field_docs import field_docstrings
from srez_env.catalogue import GLOSSARY
from srez_env.vocab import FaultKind, ServiceName

ErrorCode = Literal[
    "PARSE_ERROR",
    "UNKNOWN_TOOL",
    "BAD_ARGS",
    "UNKNOWN_SERVICE",
    "UNKNOWN_METRIC",
    "UNKNOWN_KEY",
    "READ_ONLY_KEY",
    "KEY_MANAGED_BY_TOOL",
    "INVALID_VALUE",
    "UNKNOWN_VERSION",
    "ALREADY_SUBMITTED",
]
ERROR_CODES: Final[tuple[str, ...]] = get_args(ErrorCode)

Duration = Annotated[str, StringConstraints(pattern=r"^\d+[mhd]$", max_length=8)]


# Every free string an action takes is bounded, and the bound is in the tools' JSON schema: a
# server that holds a model to the schema by grammar (``llm-json``'s ``response_format``) then
# cannot let it run on inside one string until the completion cap cuts the reply into JSON that
# does not parse.
Text32 = Annotated[str, StringConstraints(max_length=32)]
Text64 = Annotated[str, StringConstraints(max_length=64)]
Text128 = Annotated[str, StringConstraints(max_length=128)]
Text500 = Annotated[str, StringConstraints(max_length=500)]

FAULT_GLOSSARY: Final = GLOSSARY
"""Every kind an agent may declare with its meaning, from the fault catalogue."""


class Args(BaseModel):
    """Base of every argument model: unknown arguments are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)


class NoArgs(Args):
    """The tool takes no arguments."""


class ServiceArgs(Args):
    service: ServiceName
    """One of gateway, auth, payments, cache, db."""


class LogsArgs(ServiceArgs):
    since: Duration = "15m"
    """How far back to read, e.g. 15m or 2h (at most 3h)."""
    grep: Text64 | None = None
    """Keep only lines containing this text (case-insensitive)."""
    limit: int = Field(default=40, ge=1, le=100)
    """How many of the most recent matching lines to return."""


class MetricsArgs(ServiceArgs):
    metric: Text64 | None = None
    """A metric name; omit it to list the service's metrics."""
    window: Duration = "30m"
    """How far back to read, e.g. 30m or 3h (at most 3h); at most 30 points are returned."""


class EventsArgs(Args):
    service: ServiceName | None = None
    """Only this service's events; omit for all."""
    since: Duration = "2h"
    """How far back to read, e.g. 2h or 7d (at most 7d)."""


class WaitArgs(Args):
    minutes: int = Field(ge=1, le=15)
    """Minutes to let pass (1-15); costs one step."""


class SetConfigArgs(ServiceArgs):
    key: Text64
    """A key as section.key, e.g. db.pool_max or upstream.auth.timeout_ms."""
    value: Text128
    """The new value as text, e.g. "20", "true", "/etc/certs/db-2025.pem"."""

    @field_validator("value", mode="before")
    @classmethod
    def _value_as_text(cls, value: object) -> object:
        # LLMs often send numbers and booleans unquoted; the file holds text either way.
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return value


class RollbackArgs(ServiceArgs):
    version: Text32
    """A version from the service's deploy history other than the running one."""


class ScaleArgs(ServiceArgs):
    replicas: int = Field(ge=0, le=10)
    """The desired replica count (0-10)."""


class DeclareArgs(Args):
    service: ServiceName | Literal["none"]
    """The root-cause service, or none when there is no fault."""
    fault: FaultKind
    """The fault kind; see the glossary."""


class SubmitArgs(Args):
    summary: Text500 = ""
    """A short summary of what you found and did (logged, not graded)."""


ToolClass = Literal["read", "time", "mutate", "declare", "terminal"]


class ToolSpec(BaseModel):
    """One tool as the agent is told about it."""

    model_config = ConfigDict(frozen=True)

    name: str
    tool_class: ToolClass
    description: str
    args: type[Args]

    def openai(self) -> dict[str, Any]:
        """The OpenAI-style function definition, built from the argument model."""
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("properties", {})
        schema["additionalProperties"] = False
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }


TOOLS: Final = {
    t.name: t
    for t in (
        ToolSpec(
            name="list_services",
            tool_class="read",
            description="Name, status, version, ready/desired replicas and dependencies of all 5 services.",
            args=NoArgs,
        ),
        ToolSpec(
            name="get_status",
            tool_class="read",
            description="One service in detail: status, deploy history, replicas, restarts in the last hour, uptime, pending restart, resources, disk (db) and TLS certificates.",
            args=ServiceArgs,
        ),
        ToolSpec(
            name="get_logs",
            tool_class="read",
            description="The most recent log lines of a service over a window, optionally filtered by a substring.",
            args=LogsArgs,
        ),
        ToolSpec(
            name="get_metrics",
            tool_class="read",
            description="A metric's recent points (at most 30), min, max, last and its baseline_1h (the mean of a normal hour). Without a metric: the service's metric names.",
            args=MetricsArgs,
        ),
        ToolSpec(
            name="get_config",
            tool_class="read",
            description="The service's configuration file as it is on disk.",
            args=ServiceArgs,
        ),
        ToolSpec(
            name="get_events",
            tool_class="read",
            description="Audit events (deploys, config changes by key name, restarts, scaling, certificate renewals, jobs), newest first.",
            args=EventsArgs,
        ),
        ToolSpec(
            name="get_alerts",
            tool_class="read",
            description="Active alerts and alerts resolved in the last hour.",
            args=NoArgs,
        ),
        ToolSpec(
            name="wait",
            tool_class="time",
            description="Let 1-15 minutes pass without acting (one step).",
            args=WaitArgs,
        ),
        ToolSpec(
            name="set_config",
            tool_class="mutate",
            description="Set one key of a service's configuration file. Live keys apply next minute; restart keys only after restart(service).",
            args=SetConfigArgs,
        ),
        ToolSpec(
            name="restart",
            tool_class="mutate",
            description="Rolling restart of a service; reloads its configuration file.",
            args=ServiceArgs,
        ),
        ToolSpec(
            name="rollback",
            tool_class="mutate",
            description="Deploy an earlier version from the service's deploy history (counts as a restart).",
            args=RollbackArgs,
        ),
        ToolSpec(
            name="scale",
            tool_class="mutate",
            description="Set a service's replica count.",
            args=ScaleArgs,
        ),
        ToolSpec(
            name="declare_root_cause",
            tool_class="declare",
            description="Declare the root-cause service and fault kind (the last declaration counts).",
            args=DeclareArgs,
        ),
        ToolSpec(
            name="submit",
            tool_class="terminal",
            description="End the incident. The system is then observed for 10 minutes and graded.",
            args=SubmitArgs,
        ),
    )
}
"""The action registry: every tool by name, in the order agents are told about them. What else
names tools (the mutating set, the read tools, what an evidence item or the random agent may
use) is derived from it, never copied."""


def tools_of(tool_class: ToolClass) -> tuple[str, ...]:
    """The registry's tools of one class, in registry order (read at each call, so a tool added
    to :data:`TOOLS` belongs to its class at once)."""
    return tuple(name for name, tool in TOOLS.items() if tool.tool_class == tool_class)


MUTATING: Final = frozenset(tools_of("mutate"))
READ_TOOLS: Final = tools_of("read")

_DURATION = re.compile(r"^(\d+)([mhd])$")
_UNIT_MIN: Final = {"m": 1, "h": 60, "d": 1440}


def duration_minutes(text: str) -> int:
    """``"15m"`` -> 15, ``"2h"`` -> 120, ``"7d"`` -> 10080."""
    match = _DURATION.match(text)
    if match is None:
        msg = f"duration {text!r} must look like 15m, 2h or 7d"
        raise ValueError(msg)
    return int(match.group(1)) * _UNIT_MIN[match.group(2)]


@functools.cache
def _openai_tools_json() -> str:
    return json.dumps([t.openai() for t in TOOLS.values()])


def openai_tools() -> list[dict[str, Any]]:
    """All the tools as OpenAI-style function definitions, in a fixed order (a fresh copy)."""
    return list(json.loads(_openai_tools_json()))
