"""The world over time: timed changes replayed into one resolved :class:`Minute` per minute.

Configuration changes only through timed changes: the task's injection and decoy events (all at
or before T0) and the agent's mutations (a mutation at clock ``c`` takes effect at ``c + 1``). The
only autonomous dynamics are the OOM schedule of leaky versions (§6.5), certificate expiry and the
decoy effects, all pure functions of (task, actions, minute). Minutes are computed in order and
never change once computed, so a past minute can be shared between episodes: :meth:`World.fork`
copies the cursor and shares the frozen history.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from srez_env.sim.baseline import CANONICAL, Baseline, baseline_of
from srez_env.sim.engine import MinuteInputs, Snapshot, evaluate, num
from srez_env.sim.rules import RuleHit, firing
from srez_env.world import topology as topo
from srez_env.world.base import expected_subject
from srez_env.world.conffile import ConfFile, Value

ChangeKind = Literal["edit_both", "edit_file", "edit_running", "reload", "blip", "rollout"]
Props = Mapping[str, float | str]


@dataclass(frozen=True, slots=True)
class Change:
    """One timed change. Changes of a minute apply in ``order``, then in insertion order."""

    minute: int
    order: int
    kind: ChangeKind
    service: str
    key: str = ""
    value: Value = ""


@dataclass(frozen=True, slots=True)
class Version:
    """A deployed version: when it was deployed (minutes from T0) and its hidden props."""

    name: str
    deployed_at: int
    props: Props


@dataclass(frozen=True, slots=True)
class Event:
    """An audit event as ``get_events`` shows it."""

    minute: int
    service: str
    kind: str
    text: str


@dataclass(slots=True)
class Minute:
    """The resolved world at one minute. Immutable once built (the snapshot is a memo)."""

    minute: int
    files: dict[str, ConfFile]
    running: dict[str, dict[str, Value]]
    props: dict[str, Props]
    killed: dict[str, int]
    restarting: dict[str, int]
    replica_memory: dict[str, tuple[float, ...]]
    cert_rejected: dict[str, bool]
    extra_rps: dict[str, float]
    lat_mult: dict[str, float]
    restarts_1h: dict[str, int]
    restarts_15m: dict[str, int]
    last_restart: dict[str, int | None]
    baseline: Baseline | None = None  # the world's derived constants (traffic, p99 thresholds)
    same_inputs_as: Minute | None = None  # the previous minute, when the engine inputs are equal
    _snapshot: Snapshot | None = None
    log_memo: dict[str, list[str]] = field(default_factory=dict)  # filled by telemetry.logs
    alert_memo: dict[tuple[str, str], str] | None = None  # filled by telemetry.alerts
    alert_fold: object | None = None  # telemetry.alerts' state machine after this minute

    def memory_mb(self, service: str) -> float:
        """Mean replica memory of a service (its base memory when it does not leak)."""
        replicas = self.replica_memory.get(service)
        if not replicas:
            return topo.BASE_MEMORY_MB[service]
        return sum(replicas) / len(replicas)

    def snapshot(self) -> Snapshot:
        """The engine's evaluation of this minute (computed once; shared with the previous
        minute when nothing the engine reads has changed, as in most of the history)."""
        if self._snapshot is None and self.same_inputs_as is not None:
            self._snapshot = self.same_inputs_as.snapshot()
        if self._snapshot is None:
            base = self.baseline or CANONICAL
            self._snapshot = evaluate(
                MinuteInputs(
                    ingress_rps=base.ingress_rps,
                    p99_base=base.p99,
                    running=self.running,
                    props=self.props,
                    cert_rejected=self.cert_rejected,
                    killed=self.killed,
                    restarting=self.restarting,
                    extra_rps=self.extra_rps,
                    lat_mult=self.lat_mult,
                    memory_mb={s: self.memory_mb(s) for s in self.replica_memory},
                )
            )
        return self._snapshot


@dataclass(frozen=True, slots=True)
class Effect:
    """A decoy effect window (minutes relative to T0, inclusive)."""

    service: str
    effect: Literal["extra_rps", "lat_mult"]
    value: float
    from_min: int
    to_min: int


@dataclass(slots=True)
class _Cursor:
    """The mutable state carried from one minute to the next."""

    files: dict[str, ConfFile]
    running: dict[str, dict[str, Value]]
    phases: dict[str, list[int]] = field(default_factory=dict)  # replica reset minutes (leaky only)
    restarts: dict[str, list[int]] = field(default_factory=dict)
    last_restart: dict[str, int | None] = field(default_factory=dict)

    def copy(self) -> _Cursor:
        return _Cursor(
            files=dict(self.files),
            running=dict(self.running),
            phases={s: list(p) for s, p in self.phases.items()},
            restarts={s: list(r) for s, r in self.restarts.items()},
            last_restart=dict(self.last_restart),
        )


class World:
    """The simulated world of one episode, advanced minute by minute."""

    def __init__(
        self,
        *,
        files: Mapping[str, ConfFile],
        registry: Mapping[str, list[Version]],
        certs: Mapping[str, int],
        changes: list[Change],
        effects: list[Effect],
        events: list[Event],
        t0: datetime = topo.DEFAULT_T0,
        subjects: Mapping[str, str] | None = None,
        ingress_rps: float = topo.INGRESS_RPS,
    ) -> None:
        self.t0 = t0
        self.registry = {s: sorted(v, key=lambda x: x.deployed_at) for s, v in registry.items()}
        self.certs = dict(certs)
        self.subjects = (
            dict(subjects) if subjects is not None else {p: topo.cert_subject(p) for p in certs}
        )
        self.baseline = baseline_of({s: f.values for s, f in files.items()}, ingress_rps)
        self.effects = list(effects)
        self.events = list(events)
        self._pending = sorted(changes, key=lambda c: (c.minute, c.order))
        self._cursor = _Cursor(
            files=dict(files),
            running={s: dict(f.values) for s, f in files.items()},
            restarts={s: [] for s in topo.SERVICES},
            last_restart={s: None for s in topo.SERVICES},
        )
        self._minutes: list[Minute] = []
        self.memo: dict[tuple[str, ...], int] = {}  # per-episode facts derived from history
        self._turns = _turning_minutes(self.certs, self.effects)

    # ------------------------------------------------------------------ cursor and history
    @property
    def last_minute(self) -> int:
        """The newest computed minute (``HISTORY_START - 1`` before anything is computed)."""
        return topo.HISTORY_START + len(self._minutes) - 1

    def fork(self) -> World:
        """An independent copy that shares the frozen minutes computed so far."""
        twin = World.__new__(World)
        twin.t0 = self.t0
        twin.registry = self.registry
        twin.certs = self.certs
        twin.subjects = self.subjects
        twin.baseline = self.baseline
        twin.effects = self.effects
        twin.events = list(self.events)
        twin._pending = list(self._pending)
        twin._cursor = self._cursor.copy()
        twin._minutes = list(self._minutes)
        twin.memo = dict(self.memo)
        twin._turns = self._turns
        return twin

    def at(self, minute: int) -> Minute:
        """The world at ``minute``, computing any minutes not yet computed."""
        if minute < topo.HISTORY_START:
            msg = f"minute {minute} is before the history starts ({topo.HISTORY_START})"
            raise ValueError(msg)
        while self.last_minute < minute:
            self._minutes.append(self._advance(self.last_minute + 1))
        return self._minutes[minute - topo.HISTORY_START]

    def snapshot(self, minute: int) -> Snapshot:
        """The engine's output at ``minute``."""
        return self.at(minute).snapshot()

    def rules_at(self, minute: int) -> list[RuleHit]:
        """Rule instances firing in the running state at ``minute``."""
        m = self.at(minute)
        return firing(m.running, m.props, self.certs, self.subjects, minute, self.baseline)

    def schedule(self, changes: list[Change], event: Event | None = None) -> None:
        """Adds agent changes; they must lie after every computed minute (the past is frozen)."""
        for change in changes:
            if change.minute <= self.last_minute:
                msg = f"change at minute {change.minute} would rewrite computed history"
                raise ValueError(msg)
        self._pending = sorted(self._pending + changes, key=lambda c: (c.minute, c.order))
        if event is not None:
            self.events.append(event)

    def cert_rejected(self, running: Mapping[str, Value], service: str, minute: int) -> bool:
        """True when clients that verify TLS reject the service's certificate at ``minute``:
        it has expired, or it was issued to another name."""
        path = str(running["tls.cert_file"])
        return self.certs[path] <= minute or self.subjects[path] != expected_subject(service)

    def version(self, service: str, name: str) -> Version | None:
        """A version of the service's registry by name."""
        return next((v for v in self.registry[service] if v.name == name), None)

    def history(self, service: str, minute: int) -> list[Version]:
        """Versions deployed at or before ``minute``, oldest first."""
        return [v for v in self.registry[service] if v.deployed_at <= minute]

    # ------------------------------------------------------------------ one minute
    def _advance(self, m: int) -> Minute:
        previous = self._minutes[-1] if self._minutes else None
        if previous is not None and self._quiet(m, previous):
            return _repeat(previous, m)
        return self._compute(m)

    def _quiet(self, m: int, previous: Minute) -> bool:
        """True when minute ``m`` resolves exactly as ``previous`` did: no change is due, nothing
        leaks or restarts, no certificate expires and no effect starts or ends at ``m``, and no
        restart leaves a counting window. Most of a four-hour history is such minutes."""
        return (
            not (self._pending and self._pending[0].minute <= m)
            and not previous.replica_memory
            and not previous.restarting
            and m not in self._turns
            and not any(
                m - 60 in restarts or m - 15 in restarts
                for restarts in self._cursor.restarts.values()
            )
        )

    def _compute(self, m: int) -> Minute:
        cur = self._cursor
        blips: set[str] = set()
        rollouts: set[str] = set()
        while self._pending and self._pending[0].minute <= m:
            change = self._pending.pop(0)
            s = change.service
            if change.kind in ("edit_both", "edit_file"):
                cur.files[s] = cur.files[s].with_value(change.key, change.value)
            if change.kind in ("edit_both", "edit_running"):
                cur.running[s] = {**cur.running[s], change.key: change.value}
            elif change.kind == "reload":
                cur.running[s] = dict(cur.files[s].values)
            elif change.kind == "blip":
                blips.add(s)
            elif change.kind == "rollout":
                rollouts.add(s)
        props: dict[str, Props] = {}
        for s in topo.SERVICES:
            running_version = self.version(s, str(cur.running[s]["deploy.version"]))
            props[s] = running_version.props if running_version else {}
        killed: dict[str, int] = {}
        memory: dict[str, tuple[float, ...]] = {}
        for s in topo.SERVICES:
            replicas = int(num(cur.running[s], "deploy.replicas"))
            if s in blips:
                cur.restarts[s] += [m] * replicas
            if s in blips or s in rollouts:
                cur.last_restart[s] = m
            leak = float(props[s].get("leak_mb_per_min", 0.0))
            if leak <= 0:
                cur.phases.pop(s, None)
                continue
            killed[s], memory[s] = self._leak(s, m, leak, replicas, s in rollouts, s in blips)
        restarting = {
            s: 1 for s in blips if num(cur.running[s], "deploy.replicas") > 0
        }  # a rolling restart takes one replica out for its minute
        extra: dict[str, float] = {}
        lat: dict[str, float] = {}
        for eff in self.effects:
            if eff.from_min <= m <= eff.to_min:
                if eff.effect == "extra_rps":
                    extra[eff.service] = extra.get(eff.service, 0.0) + eff.value
                else:
                    lat[eff.service] = lat.get(eff.service, 1.0) * eff.value
        minute = Minute(
            minute=m,
            files=dict(cur.files),
            running=dict(cur.running),
            props=props,
            killed=killed,
            restarting=restarting,
            replica_memory=memory,
            cert_rejected={s: self.cert_rejected(cur.running[s], s, m) for s in topo.TLS_SERVERS},
            extra_rps=extra,
            lat_mult=lat,
            restarts_1h={
                s: sum(1 for x in cur.restarts[s] if m - 60 < x <= m) for s in topo.SERVICES
            },
            restarts_15m={
                s: sum(1 for x in cur.restarts[s] if m - 15 < x <= m) for s in topo.SERVICES
            },
            last_restart=dict(cur.last_restart),
            baseline=self.baseline,
        )
        if self._minutes and _same_engine_inputs(self._minutes[-1], minute):
            minute.same_inputs_as = self._minutes[-1]
        return minute

    def _leak(
        self, s: str, m: int, leak: float, replicas: int, rollout: bool, blip: bool
    ) -> tuple[int, tuple[float, ...]]:
        """The OOM schedule of §6.5: kills this minute and per-replica memory."""
        cur = self._cursor
        limit = num(cur.running[s], "resources.memory_limit_mb")
        period = math.ceil((limit - topo.BASE_MEMORY_MB[s]) / leak)
        if rollout:
            cur.phases[s] = [m + 2 * r for r in range(replicas)]  # a staggered rollout
        elif blip or s not in cur.phases:
            cur.phases[s] = [m] * replicas
        phases = cur.phases[s]
        while len(phases) < replicas:
            phases.append(m)  # new replicas start fresh
        killed = 0
        memory = []
        for r in range(replicas):
            age = m - phases[r]
            if age > 0 and age % period == 0:
                killed += 1
                phases[r] = m
                cur.restarts[s].append(m)
                age = 0
            memory.append(topo.BASE_MEMORY_MB[s] + leak * max(0, age))
        return killed, tuple(memory)


def _turning_minutes(certs: Mapping[str, int], effects: list[Effect]) -> frozenset[int]:
    """Minutes at which a certificate expires or an effect window opens or closes: the
    autonomous changes a minute with no timed change can still see."""
    turns = set(certs.values())
    for eff in effects:
        turns |= {eff.from_min, eff.to_min + 1}
    return frozenset(turns)


def _repeat(previous: Minute, m: int) -> Minute:
    """Minute ``m`` resolved as ``previous`` was (see :meth:`World._quiet`). Minutes are never
    changed once built, so the two share their maps, and the engine's snapshot too."""
    return Minute(
        minute=m,
        files=previous.files,
        running=previous.running,
        props=previous.props,
        killed=previous.killed,
        restarting=previous.restarting,
        replica_memory=previous.replica_memory,
        cert_rejected=previous.cert_rejected,
        extra_rps=previous.extra_rps,
        lat_mult=previous.lat_mult,
        restarts_1h=previous.restarts_1h,
        restarts_15m=previous.restarts_15m,
        last_restart=previous.last_restart,
        baseline=previous.baseline,
        same_inputs_as=previous,
    )


def _same_engine_inputs(a: Minute, b: Minute) -> bool:
    """True when two minutes feed the engine identical inputs.

    Running configs are compared by identity: the cursor replaces a service's dict whenever it
    changes, and both minutes hold a reference, so equal identities mean equal contents.
    """
    return (
        all(a.running[s] is b.running[s] for s in topo.SERVICES)
        and all(a.props[s] is b.props[s] for s in topo.SERVICES)
        and a.killed == b.killed
        and a.restarting == b.restarting
        and a.replica_memory == b.replica_memory
        and a.cert_rejected == b.cert_rejected
        and a.extra_rps == b.extra_rps
        and a.lat_mult == b.lat_mult
    )
