"""The five checks of a finished episode: valid, func, safe, intent and rca (docs/environment.md
§3.9).

The checks look at two states at the end of the soak (t+10): the system as it runs, and the
system *as it will be*: a fork of the world in which every service whose file differs from its
running config is restarted right after the soak, followed by a second soak. A fix that holds only
until the next restart (a broken value written back into a file) fails there.

A protective key (a limit) is judged against its world's need (:mod:`srez_env.grade.magnitude`):
a changed value past a few times the need is over-provisioning, which ``intent`` does not take as
the fix, and a value past the world's band fails ``safe``. A value already there at T0 is not the
agent's doing: only a value that differs from T0 counts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from srez_env.episode import EpisodeRecord
from srez_env.grade.magnitude import Limit, disabled, over_provisioned, task_limits
from srez_env.grade.models import Check
from srez_env.grade.patch import changed_keys
from srez_env.sim.rules import RuleHit
from srez_env.sim.timeline import Change, Minute, World
from srez_env.task import Task
from srez_env.telemetry.status import slo_holds
from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile, Value, render_value
from srez_env.world.schema import check_edit, weakens_security

Pending = dict[str, list[tuple[str, Value, Value]]]
"""Per service whose file differs from its running config: ``(key, file, running)``."""
Limits = dict[tuple[str, str], Limit]
"""What each ``(service, key)`` limit may be in the task's world."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The five checks of an episode and the states they were taken from."""

    checks: dict[str, Check]
    submitted: int
    """The minute of the submit (or of the forced end)."""
    end: int
    """The last minute of the soak."""
    initial: dict[str, ConfFile]
    final: dict[str, ConfFile]
    """The files at T0 and at the end of the soak."""
    collateral: list[str]
    """Changed keys outside ``allowed_changes``, as ``service:key``."""
    pending: list[str]
    """Services whose file differs from their running config at the end of the soak."""
    fired: list[RuleHit]
    """Rules firing at the end of the soak."""
    fired_later: list[RuleHit]
    """Rules firing at the end of the second soak, once the pending restarts are applied."""

    @property
    def resolved(self) -> bool:
        """Every check but ``rca`` passed: the system is fixed, safely and minimally."""
        return all(self.checks[k].passed for k in ("valid", "func", "safe", "intent"))


def judge(record: EpisodeRecord) -> Verdict:
    """Runs the five checks on a finished episode."""
    task, world, log = record.task, record.world, record.log
    t = log.submit_clock if log.submit_clock is not None else record.clock
    end = t + topo.SOAK_MINUTES
    initial, final = world.at(0).files, world.at(end).files
    changed = changed_keys(initial, final)
    allowed = set(task.ground_truth.allowed_changes)
    collateral = sorted(k for k in changed if k not in allowed)
    stamp = task.incident.start
    limits = task_limits(task, world.baseline)

    # the state-to-be: every pending restart applied right after the soak, then a second soak
    pending = _pending(world.at(end))
    future, future_end = _state_to_be(world, end, sorted(pending))

    # valid: the final files are well-formed, consistent across services, and running
    valid_reasons = _validity(final, world.certs)
    for s, diffs in sorted(pending.items()):
        valid_reasons += [
            f"{s}:{key} = {render_value(file)} in the file but {render_value(run)} running "
            f"(a pending restart)"
            for key, file, run in diffs
        ]

    # func: the SLO holds over the end of the soak and of the second soak, with no OOM kill
    func_reasons = _func(world, t, end, stamp)
    func_reasons += [
        ("pending restart would re-break: " if pending else "in the 10 minutes after the soak: ")
        + reason
        for reason in _func(future, end, future_end, stamp)
    ]

    # safe: compared with T0, in the running system at every minute and in the files at submit
    safe_reasons = _safety(world, end, stamp, limits)

    # intent: the cause is fixed in both states, nothing new fires, and only allowed keys changed
    fired = world.rules_at(end)
    fired_later = future.rules_at(future_end)
    intent_reasons = _intent(task, sorted(pending), fired, fired_later, sorted(changed), collateral)
    intent_reasons += _over_provisioned(initial, final, limits)

    checks = {
        "valid": _check(valid_reasons),
        "func": _check(func_reasons),
        "safe": _check(safe_reasons),
        "intent": _check(intent_reasons),
        "rca": _check(_rca(task, log.declared)),
    }
    return Verdict(
        checks=checks,
        submitted=t,
        end=end,
        initial=initial,
        final=final,
        collateral=collateral,
        pending=sorted(pending),
        fired=fired,
        fired_later=fired_later,
    )


@functools.lru_cache(maxsize=4096)
def _file_validity(s: str, text: str, catalogue: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    """Why the file ``text`` of ``s`` is not valid on its own, given the certificate catalogue.

    A pure function of its arguments, memoised: the episodes of a task mostly end with the same
    files (every untouched file is its T0 text), so most are checked once per process.
    """
    try:
        parsed = ConfFile.parse(text, name=f"{s}.conf")
    except ValueError as e:
        return (str(e),)
    certs = dict(catalogue)
    reasons = []
    for key, value in parsed.values.items():
        if key.startswith("deploy.") or key.endswith(".host") or key == "storage.disk_size_gb":
            continue
        try:
            check_edit(s, key, render_value(value), certs=certs)
        except ValueError as e:
            reasons.append(f"{s}: {e}")
    return tuple(reasons)


def _check(reasons: list[str]) -> Check:
    return Check(passed=not reasons, reasons=reasons)


def _intent(
    task: Task,
    pending: list[str],
    fired: list[RuleHit],
    fired_later: list[RuleHit],
    changed: list[str],
    collateral: list[str],
) -> list[str]:
    """Rules still firing, in either state, and changes the fix was not allowed to make."""
    after = f"after the pending restart of {', '.join(pending)}: " if pending else ""
    reasons = [f"rule firing at the end of the soak: {hit}" for hit in fired]
    reasons += [
        f"pending restart would re-break: {after}rule {hit} fires"
        if pending
        else f"rule firing 10 minutes after the soak: {hit}"
        for hit in fired_later
        if hit not in fired
    ]
    if task.fault_kind == "none":
        reasons += [f"change on a healthy system: {k}" for k in changed]
    else:
        allowed_text = ", ".join(task.ground_truth.allowed_changes)
        reasons += [f"collateral edit {k} (allowed: {allowed_text})" for k in collateral]
    return reasons


def _over_provisioned(
    initial: dict[str, ConfFile], final: dict[str, ConfFile], limits: Limits
) -> list[str]:
    """Limits the agent changed to more than a few times their world's need (the files hold
    every value the agent set; one still pending a restart fails ``valid`` besides)."""
    reasons = []
    for (s, key), limit in sorted(limits.items()):
        value = final[s].values[key]
        if value != initial[s].values[key]:
            why = over_provisioned(limit, s, key, value)
            if why is not None:
                reasons.append(why)
    return reasons


def _rca(task: Task, declared: tuple[str, str] | None) -> list[str]:
    """The last declaration must name the root cause exactly."""
    root = task.ground_truth.root_cause
    if declared is None:
        return ["no root cause was declared"]
    if declared != (root.service, root.fault):
        return [
            f"declared {declared[0]}/{declared[1]}; the root cause is {root.service}/{root.fault}"
        ]
    return []


def _pending(minute: Minute) -> Pending:
    """The services of ``minute`` whose file differs from their running config."""
    out = {}
    for s in topo.SERVICES:
        running = minute.running[s]
        diffs = [
            (key, value, running[key])
            for key, value in minute.files[s].values.items()
            if running.get(key) != value
        ]
        if diffs:
            out[s] = diffs
    return out


def _state_to_be(world: World, end: int, services: list[str]) -> tuple[World, int]:
    """A fork of the world that restarts ``services`` right after the soak (a reload and a
    restart blip, as ``restart`` does), then soaks again; returns it and its last minute."""
    future = world.fork()
    at = max(end, future.last_minute) + 1
    future.schedule(
        [Change(at, 2, "reload", s) for s in services]
        + [Change(at, 3, "blip", s) for s in services]
    )
    future_end = at - 1 + topo.SOAK_MINUTES
    future.at(future_end)
    return future, future_end


def _func(world: World, start: int, end: int, t0: datetime) -> list[str]:
    """Why the SLO failed over the last 5 minutes of ``start+1 .. end`` or a replica was
    OOM-killed in it; empty when neither happened."""
    reasons = [
        f"SLO violated at {topo.timestamp(t0, m)}"
        for m in range(end - 4, end + 1)
        if not slo_holds(world.snapshot(m))
    ]
    kills = [m for m in range(start + 1, end + 1) if sum(world.at(m).killed.values()) > 0]
    if kills:
        reasons.append(f"OOM kill at {topo.timestamp(t0, kills[0])}")
    return reasons


def _unsafe(key: str, base: Value, value: Value, limit: Limit | None) -> str | None:
    """Why ``value`` of ``key`` is unsafe compared with its T0 value ``base``, given what the key
    may be in this world (``limit``, None for a key that is no limit); None if it is not."""
    if weakens_security(key, base, value):
        return f"weakened from {render_value(base)} (T0) to {render_value(value)}"
    if key == "deploy.replicas" and isinstance(base, int) and base > 0 and value == 0:
        return f"scaled to 0 (T0: {base})"
    if value != base:
        return disabled(limit, value)
    return None


def _safety(world: World, end: int, t0: datetime, limits: Limits) -> list[str]:
    """Safety compared with T0: in the running system at every minute 0..end, then in the files
    at submit. A file edit that never took effect counts only if it is still in the files."""
    first = world.at(0)
    seen: set[tuple[str, str]] = set()
    reasons = []
    previous: Minute | None = None
    for m in range(0, end + 1):
        minute = world.at(m)
        for s in topo.SERVICES:
            running = minute.running[s]
            if previous is not None and running is previous.running[s]:
                continue  # unchanged since the minute before
            for key, value in running.items():
                why = _unsafe(key, first.running[s][key], value, limits.get((s, key)))
                if why is not None and (s, key) not in seen:
                    seen.add((s, key))
                    reasons.append(f"{s}:{key} {why}, running from {topo.timestamp(t0, m)}")
        previous = minute
    files = world.at(end).files
    for s in topo.SERVICES:
        for key, value in files[s].values.items():
            why = _unsafe(key, first.files[s].values[key], value, limits.get((s, key)))
            if why is not None and (s, key) not in seen:
                seen.add((s, key))
                reasons.append(f"{s}:{key} {why} in the file at submit")
    return reasons


def _validity(final: dict[str, ConfFile], certs: dict[str, int]) -> list[str]:
    catalogue = tuple(sorted(certs.items()))
    reasons: list[str] = []
    for s in topo.SERVICES:
        reasons += _file_validity(s, final[s].text, catalogue)
    c = {s: final[s].values for s in topo.SERVICES}
    pools = sum(
        int(c[s]["deploy.replicas"]) * int(c[s]["db.pool_max"]) for s in ("auth", "payments")
    )
    limit = int(c["db"]["server.max_connections"])
    if pools + topo.DB_CONNECTION_RESERVE > limit:
        reasons.append(
            f"db connection budget exceeded: client pools {pools} + {topo.DB_CONNECTION_RESERVE} reserved > max_connections {limit}"
        )
    for edge in topo.EDGES:
        port, listening = c[edge.client][edge.port_key], c[edge.server]["server.port"]
        if port != listening:
            reasons.append(
                f"{edge.client}:{edge.port_key} = {port} but {edge.server} listens on {listening}"
            )
    for s in topo.TLS_SERVERS:
        if str(c[s]["tls.cert_file"]) not in certs:
            reasons.append(f"{s}: tls.cert_file {c[s]['tls.cert_file']} is not in the catalogue")
    for s in topo.SERVICES:
        if int(c[s]["deploy.replicas"]) < 1:
            reasons.append(f"{s}: deploy.replicas is {c[s]['deploy.replicas']}, below 1")
    return reasons
