"""The read-only tools: what the agent sees, rendered as text (docs/environment.md §3.7, §6.7).

Structured observations are canonical JSON (sorted keys, no ASCII escaping, fixed separators), so
the same state always renders to the same bytes and evidence witnesses can be matched as
substrings. Logs are lines joined by newlines; configs are the file text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from srez_env.actions import duration_minutes
from srez_env.sim.timeline import World
from srez_env.telemetry.alerts import alerts_at, in_scope
from srez_env.telemetry.logs import LogSource
from srez_env.telemetry.metrics import METRICS, metric_window
from srez_env.telemetry.status import events_view, list_services, service_status
from srez_env.world import topology as topo

MAX_LOG_WINDOW_MIN = 180
MAX_METRIC_WINDOW_MIN = 180
MAX_EVENT_WINDOW_MIN = 7 * topo.DAY


def canonical(data: object) -> str:
    """Canonical JSON: the text every structured observation is rendered as."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


@dataclass(frozen=True, slots=True)
class Observer:
    """Renders observations of one episode's world at a given clock minute."""

    world: World
    logs: LogSource
    seed: int
    alert_scope: str
    alert_also: tuple[str, ...]

    def list_services(self, clock: int) -> str:
        return canonical(list_services(self.world, clock))

    def get_status(self, clock: int, service: str) -> str:
        return canonical(service_status(self.world, service, clock))

    def get_config(self, clock: int, service: str) -> str:
        return self.world.at(clock).files[service].text

    def get_logs(self, clock: int, service: str, since: str, grep: str | None, limit: int) -> str:
        window = min(duration_minutes(since), MAX_LOG_WINDOW_MIN)
        lines = self.logs.window(self.world, service, clock - window, clock)
        if grep:
            needle = grep.lower()
            lines = [line for line in lines if needle in line.lower()]
        shown = lines[-limit:]
        footer = f"-- showing {len(shown)} of {len(lines)} lines"
        return "\n".join([*shown, footer])

    def get_metrics(self, clock: int, service: str, metric: str | None, window: str) -> str:
        if metric is None:
            return canonical({"service": service, "metrics": list(METRICS[service])})
        minutes = min(duration_minutes(window), MAX_METRIC_WINDOW_MIN)
        result = metric_window(
            self.world, self.seed, service, metric, clock, minutes, self.world.t0
        )
        return canonical(result)

    def get_events(self, clock: int, service: str | None, since: str) -> str:
        minutes = min(duration_minutes(since), MAX_EVENT_WINDOW_MIN)
        return canonical({"events": events_view(self.world, service, minutes, clock)})

    def alerts(self, clock: int) -> list[dict[str, object]]:
        """In-scope alerts as dicts (the prompt lists the active ones)."""
        out: list[dict[str, object]] = []
        for a in alerts_at(self.world, clock):
            if not in_scope(a, self.alert_scope, self.alert_also):
                continue
            out.append(
                {
                    "name": a.name,
                    "service": a.service,
                    "severity": a.severity,
                    "since": topo.timestamp(self.world.t0, a.since),
                    "state": "active" if a.resolved_at is None else "resolved",
                    "resolved_at": None
                    if a.resolved_at is None
                    else topo.timestamp(self.world.t0, a.resolved_at),
                    "summary": a.summary,
                }
            )
        return out

    def get_alerts(self, clock: int) -> str:
        return canonical({"alerts": self.alerts(clock)})
