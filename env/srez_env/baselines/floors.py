"""The trivial-agent floors: what a score must clear to mean anything.

* ``noop`` submits at once and declares nothing. On a fault task it earns nothing (the fault
  still fires); on a no-fault control, doing nothing is the right remedy and it keeps the
  restraint credit (fix, minimal, efficiency), but no RCA credit: it never declared
  ``(none, none)``.
* ``restart-all`` reads the alerts once, restarts every service, declares the loudest one (the
  service with the most active alerts, critical ones counting twice; ties go to the earlier
  service in :data:`~srez_env.task.SERVICES`, and with no alert at all the entry point,
  ``gateway``) as a ``memory_leak`` (the fault a restart is the remedy for), then submits.

Both see observations only, like any agent; neither can pass a fault task, and on the controls
only the restraint of ``noop`` scores (``tests/env/test_floors.py`` holds them to that on the
canonical set and on generated ones).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from srez_env.vocab import SERVICES

FLOOR_AGENTS: Final = ("noop", "restart-all")
"""The floors' names, as every leaderboard lists them."""
SEVERITY_WEIGHT: Final = {"critical": 2, "warning": 1}
BELIEVED_FAULT: Final = "memory_leak"


class NoopAgent:
    """Submits at once."""

    name = "noop"

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        return {"tool": "submit", "args": {}}


def loudest_service(alerts_output: str) -> str:
    """The service with the heaviest active alerts in a ``get_alerts`` output (``gateway`` when
    none is active or the output does not read)."""
    try:
        alerts = json.loads(alerts_output).get("alerts", [])
    except (ValueError, AttributeError):
        alerts = []
    weight = dict.fromkeys(SERVICES, 0)
    for alert in alerts if isinstance(alerts, list) else []:
        if isinstance(alert, dict) and alert.get("state") == "active":
            service = alert.get("service")
            if service in weight:
                weight[service] += SEVERITY_WEIGHT.get(str(alert.get("severity")), 1)
    best = max(SERVICES, key=lambda s: (weight[s], -SERVICES.index(s)))
    return best if weight[best] else "gateway"


class RestartAllAgent:
    """Reads the alerts, restarts everything, declares the loudest service, submits."""

    name = "restart-all"

    def __init__(self) -> None:
        self.plan: list[dict[str, Any]] = []
        self.started = False

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        if not self.started:
            self.started = True
            return {"tool": "get_alerts", "args": {}}
        if not self.plan and observation.get("tool") == "get_alerts":
            output = observation.get("output")
            blamed = loudest_service(output if isinstance(output, str) else "")
            self.plan = [{"tool": "restart", "args": {"service": s}} for s in SERVICES]
            self.plan.append(
                {"tool": "declare_root_cause", "args": {"service": blamed, "fault": BELIEVED_FAULT}}
            )
            self.plan.append({"tool": "submit", "args": {}})
        return self.plan.pop(0) if self.plan else {"tool": "submit", "args": {}}
