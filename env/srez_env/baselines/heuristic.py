"""The heuristic expert: a SimpleRCA-style difficulty calibrator (docs/environment.md §6.12,
exactly).

It sees observations only: no task file, no base configs, no engine internals. It reads the
alerts and the service list, walks the unhealthy or alerting services leaves first, matches a
fixed table of log signatures, then fixes what the first match names with a recipe whose values
come from observations. The hard tier is built so that this fails (§6.14).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any, Final

from srez_env.baselines.policy import (
    Action,
    Observation,
    Policy,
    PolicyAgent,
    call,
    config_values,
    json_list,
    json_object,
    output_text,
)
from srez_env.catalogue import SIGNATURES  # (kind, regex, target), tested in this order
from srez_env.world.conffile import Value
from srez_env.world.topology import MIN_REPLICAS

ORDER: Final = ("cache", "db", "auth", "payments", "gateway")  # leaves first
_PORT_KEY: Final = {"db": "db.port", "cache": "cache.port"}


def match_signature(service: str, lines: list[str]) -> tuple[str, str, str] | None:
    """(kind, target, line body) of the first signature row any line matches, else None."""
    for kind, pattern, rule in SIGNATURES:
        hits = [line for line in lines if re.search(pattern, line)]
        if not hits:
            continue
        line = hits[-1]  # the newest matching line decides the target
        body = line.split(" ", 2)[2]  # "<LEVEL> <text>"
        target = {"db": "db", "cache": "cache", "self": service}.get(rule, service)
        if rule == "cluster":
            found = re.search(pattern, line)
            target = found.group(1) if found else service
        elif rule == "peer":
            peer = re.match(r"ERROR (\w+): tls", body)
            target = peer.group(1) if peer else service
        return kind, target, body
    return None


class HeuristicAgent(PolicyAgent):
    """The §6.12 heuristic expert."""

    name = "heuristic"

    def policy(self, prompt: Observation) -> Policy:
        obs = yield call("get_alerts")
        alerting = {a["service"] for a in json_object(obs)["alerts"] if a["state"] == "active"}
        obs = yield call("list_services")
        listing = json_list(obs)
        unhealthy = {row["name"] for row in listing if row["status"] != "healthy"}
        desired = {row["name"]: int(str(row["replicas"]).split("/")[1]) for row in listing}
        verdict = None
        for service in (s for s in ORDER if s in alerting | unhealthy):
            obs = yield call("get_logs", service=service)
            lines = output_text(obs).splitlines()[
                :-1
            ]  # the last line is the "showing k of n" footer
            verdict = match_signature(service, lines)
            if verdict:
                break
        if verdict is None:
            yield call("declare_root_cause", service="none", fault="none")
            return
        kind, target, body = verdict
        recipe = _Recipe(target, body, desired, prompt.get("clock", ""))
        reads = recipe.reads(kind)
        observed: list[Observation] = []
        for read in reads:
            observed.append((yield read))
        mutations = recipe.mutations(kind, observed)
        yield call("declare_root_cause", service=target, fault=kind)
        # not `yield from mutations`: a list iterator cannot receive the observations we send
        for action in mutations:  # noqa: UP028
            yield action


class _Recipe:
    """Fix recipes (§6.12): the reads each kind needs, then mutations from what was read."""

    def __init__(self, target: str, body: str, desired: dict[str, int], clock: str) -> None:
        self.target = target
        self.body = body
        self.desired = desired
        self.clock = clock

    def _peer_of_target(self) -> str:
        return next(s for s in ("gateway", "auth", "payments") if s != self.target)

    def reads(self, kind: str) -> list[Action]:
        t = self.target
        match kind:
            case "wrong_upstream_port":
                return [call("get_config", service=self._dependency())]
            case "expired_tls_cert" | "memory_leak" | "bad_deploy":
                return [call("get_status", service=t)]
            case "conn_pool_exhaustion":
                other = "auth" if t == "payments" else "payments"
                return [call("get_config", service="db"), call("get_config", service=other)]
            case "db_max_connections_low":
                return [call("get_config", service="auth"), call("get_config", service="payments")]
            case "disk_full":
                return [call("get_config", service="payments")]
            case "dns_misconfig":
                return [call("get_config", service=self._peer_of_target())]
            case "cache_eviction_stampede":
                return [call("get_config", service="cache")]
            case "dependency_timeout":
                return [
                    call(
                        "get_metrics", service=self._deadline_dependency(), metric="latency_p99_ms"
                    )
                ]
            case "replicas_zero":
                return [call("get_events", service=t, since="7d")]
            case "cpu_throttling":
                return [call("get_config", service=t)]
            case _:
                return []

    def mutations(self, kind: str, observed: list[Observation]) -> list[Action]:
        t = self.target
        configs = [config_values(o) for o in observed]
        match kind:
            case "wrong_upstream_port":
                dep = self._dependency()
                key = _PORT_KEY.get(dep, f"upstream.{dep}.port")
                return [_set(t, key, configs[0]["server.port"])]
            case "expired_tls_cert":
                return [
                    _set(t, "tls.cert_file", self._freshest_cert(json_object(observed[0]))),
                    call("restart", service=t),
                ]
            case "conn_pool_exhaustion":
                db, other = configs
                spare = int(db["server.max_connections"]) - 10
                spare -= int(other["deploy.replicas"]) * int(other["db.pool_max"])
                return [_set(t, "db.pool_max", spare // self.desired[t])]
            case "db_max_connections_low":
                pools = sum(int(c["deploy.replicas"]) * int(c["db.pool_max"]) for c in configs) + 10
                return [
                    _set("db", "server.max_connections", math.ceil(pools / 50) * 50),
                    call("restart", service="db"),
                ]
            case "memory_leak" | "bad_deploy":
                status = json_object(observed[0])
                history = sorted(status["deploy_history"], key=lambda v: v["deployed_at"])
                names = [v["version"] for v in history]
                current = status["version"]
                previous = names[names.index(current) - 1]
                return [call("rollback", service=t, version=previous)]
            case "disk_full":
                return [_set("db", "logging.retention_days", configs[0]["logging.retention_days"])]
            case "dns_misconfig":
                return [_set(t, "resolver.nameserver", configs[0]["resolver.nameserver"])]
            case "cache_eviction_stampede":
                if "maxmemory=" in self.body:
                    return [
                        _set(
                            "cache",
                            "memory.maxmemory_mb",
                            int(configs[0]["resources.memory_limit_mb"]) // 2,
                        )
                    ]
                return [_set("cache", "keys.default_ttl_s", 300)]  # the runbook default
            case "rate_limit_misconfig":
                found = re.search(
                    r"rejected (\d+) (req|logins)/s.*\(limit (\w+)=(\d+)\)", self.body
                )
                if found is None:
                    return []
                rejected, key, limit = int(found.group(1)), found.group(3), int(found.group(4))
                value = (
                    2 * (60 * rejected + limit)
                    if key == "login_per_minute"
                    else 2 * (rejected + limit)
                )
                return [_set(t, f"ratelimit.{key}", value)]
            case "feature_flag_regression":
                found = re.search(r"\(flag (\w+)=on\)", self.body)
                return [_set(t, f"flags.{found.group(1)}", "false")] if found else []
            case "dependency_timeout":
                dep = self._deadline_dependency()
                key = "db.timeout_ms" if dep == "db" else f"upstream.{dep}.timeout_ms"
                return [_set(t, key, math.ceil(4 * float(json_object(observed[0])["baseline_1h"])))]
            case "replicas_zero":
                events = json_object(observed[0])["events"]
                n = MIN_REPLICAS[t] + 1
                for line in events:  # newest first
                    found = re.search(rf"scale {t} (\d+) -> 0\b", line)
                    if found:
                        n = int(found.group(1))
                        break
                return [call("scale", service=t, replicas=n)]
            case "cpu_throttling":
                limit = int(configs[0]["resources.cpu_limit_millicores"])
                return [
                    _set(t, "resources.cpu_limit_millicores", min(16000, 4 * limit)),
                    call("restart", service=t),
                ]
            case _:
                return []

    def _dependency(self) -> str:
        found = re.match(r"(?:ERROR|WARN) (\w+): dial", self.body)
        return found.group(1) if found else "db"

    def _deadline_dependency(self) -> str:
        found = re.match(r"ERROR (\w+): context", self.body)
        return found.group(1) if found else "db"

    def _freshest_cert(self, status: dict[str, Any]) -> str:
        """The target's catalogue cert issued to it with the latest not_after more than a day
        away."""
        now = _parse_ts(self.clock)
        subject = f"CN={self.target}.svc.internal"
        best: tuple[datetime, str] | None = None
        for entry in status["tls"]["available"]:
            found = re.match(r"(\S+) \((\S+), valid until (\d{4}-\d{2}-\d{2})\)", entry)
            if not found or found.group(2) != subject:
                continue
            until = datetime.fromisoformat(found.group(3) + "T00:00:00+00:00")
            if until > now + timedelta(days=1) and (best is None or until > best[0]):
                best = (until, found.group(1))
        return best[1] if best else str(status["tls"]["cert_file"])


def _set(service: str, key: str, value: Value) -> Action:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return call("set_config", service=service, key=key, value=text)


def _parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
