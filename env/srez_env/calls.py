"""Parsing and validating one tool call (docs/environment.md §3.7).

A call is ``{"tool": name, "args": {...}}``, or JSON text as a text adapter would send it. Anything
wrong becomes :class:`InvalidCall` with one of the closed error codes, a message that says what
was wrong and a hint that says what is allowed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from srez_env.actions import TOOLS, ErrorCode, duration_minutes
from srez_env.observe import (
    MAX_EVENT_WINDOW_MIN,
    MAX_LOG_WINDOW_MIN,
    MAX_METRIC_WINDOW_MIN,
    canonical,
)
from srez_env.telemetry.metrics import METRICS
from srez_env.vocab import SERVICES


class InvalidCall(Exception):
    """An invalid call: carries the observation's error fields."""

    def __init__(self, message: str, code: ErrorCode, hint: str = "") -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.hint = hint


def unpack(action: Mapping[str, Any] | str) -> tuple[str, dict[str, Any]]:
    if isinstance(action, str):
        try:
            parsed = json.loads(action)
        except json.JSONDecodeError as e:
            msg = f"the reply is not one JSON object: {e.msg} at char {e.pos}"
            hint = 'reply with exactly one object like {"tool": "get_alerts", "args": {}}'
            raise InvalidCall(msg, "PARSE_ERROR", hint) from e
        if not isinstance(parsed, dict):
            msg = f"the reply is JSON {type(parsed).__name__}, not an object"
            raise InvalidCall(msg, "PARSE_ERROR", 'reply with {"tool": ..., "args": {...}}')
        action = parsed
    tool = action.get("tool")
    args = action.get("args", {})
    extra = sorted(set(action) - {"tool", "args"})
    if not isinstance(tool, str) or not isinstance(args, dict) or extra:
        msg = "a call must be an object with a string 'tool' and an object 'args'"
        if extra:
            msg += f" (unexpected fields: {', '.join(extra)})"
        raise InvalidCall(msg, "BAD_ARGS", 'e.g. {"tool": "get_logs", "args": {"service": "db"}}')
    return tool, dict(args)


def validate(tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    spec = TOOLS.get(tool)
    if spec is None:
        msg = f"unknown tool {tool!r}"
        raise InvalidCall(msg, "UNKNOWN_TOOL", "tools: " + ", ".join(TOOLS))
    service = args.get("service")
    allowed = (*SERVICES, "none") if tool == "declare_root_cause" else SERVICES
    if "service" in args and service is not None and service not in allowed:
        msg = f"unknown service {service!r}"
        raise InvalidCall(msg, "UNKNOWN_SERVICE", "services: " + ", ".join(allowed))
    try:
        parsed = spec.args.model_validate(args)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "args"
        msg = f"{tool}: {where}: {first['msg']}"
        raise InvalidCall(msg, "BAD_ARGS", f"arguments of {tool}: {_arg_names(tool)}") from e
    values = parsed.model_dump()
    _check_ranges(tool, values)
    return tool, values


def _check_ranges(tool: str, values: dict[str, Any]) -> None:
    limits = {
        "get_logs": MAX_LOG_WINDOW_MIN,
        "get_metrics": MAX_METRIC_WINDOW_MIN,
        "get_events": MAX_EVENT_WINDOW_MIN,
    }
    field_name = "window" if tool == "get_metrics" else "since"
    if tool in limits:
        minutes = duration_minutes(values[field_name])
        low = 1 if tool == "get_metrics" else 0
        if not low <= minutes <= limits[tool]:
            msg = f"{tool}: {field_name} {values[field_name]!r} is out of range"
            longest = "7d" if limits[tool] >= 1440 else f"{limits[tool] // 60}h"
            raise InvalidCall(msg, "BAD_ARGS", f"{field_name} may be {low}m to {longest}")
    if tool == "get_metrics" and values["metric"] is not None:
        known = METRICS[values["service"]]
        if values["metric"] not in known:
            msg = f"{values['service']} has no metric {values['metric']!r}"
            raise InvalidCall(msg, "UNKNOWN_METRIC", "metrics: " + ", ".join(known))


def _arg_names(tool: str) -> str:
    fields = TOOLS[tool].args.model_fields
    return ", ".join(fields) if fields else "none"


def tool_name(action: Mapping[str, Any] | str) -> str:
    tool = action.get("tool") if isinstance(action, Mapping) else None
    return tool if isinstance(tool, str) else ""


def args_of(action: Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(action, Mapping) and isinstance(action.get("args"), dict):
        return dict(action["args"])
    return {}


def raw_text(action: Mapping[str, Any] | str) -> str:
    return action if isinstance(action, str) else canonical(dict(action))
