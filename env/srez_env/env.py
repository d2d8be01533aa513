"""``SREEnv``: one episode of one task (ENV_DESIGN §3.8, §6.11).

Order inside a step: validate -> execute (a read observes minute ``t``) -> schedule the mutation
for ``t + 1`` -> advance the clock (1 minute, or ``n`` for ``wait``). Every call costs a step,
invalid ones included; an invalid call changes nothing but the clock and says what was wrong and
what is allowed. The episode ends on ``submit``, when the step budget runs out, or through
:meth:`SREEnv.force_submit` (the harness calls it when the agent exits or times out).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from srez_env.actions import (
    FAULT_GLOSSARY,
    MUTATING,
    TOOLS,
    ErrorCode,
    duration_minutes,
    openai_tools,
)
from srez_env.errors import EpisodeError
from srez_env.observe import (
    MAX_EVENT_WINDOW_MIN,
    MAX_LOG_WINDOW_MIN,
    MAX_METRIC_WINDOW_MIN,
    Observer,
    canonical,
)
from srez_env.sim.scenario import AGENT_ACTOR, onset_minute, world_at_t0
from srez_env.sim.timeline import Change, Event, World
from srez_env.task import SERVICES, Task
from srez_env.telemetry.logs import LogSource
from srez_env.telemetry.metrics import METRICS
from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile, render_value
from srez_env.world.schema import KeyRejected, check_edit, reload_mode

if TYPE_CHECKING:
    from srez_env.grade import Grade

EndReason = Literal["submit", "agent_exit", "time_limit", "step_budget"]

PREAMBLE = (
    "You are the on-call SRE for a production system of five services: gateway (the public edge), "
    "auth, payments, cache and db. An incident is in progress. Investigate with the read-only "
    "tools, find the root cause, apply the minimal remediation, declare the root cause with "
    "declare_root_cause, then call submit. Mutations are real and graded: a change that is not "
    "needed, that weakens security, or that masks the symptoms instead of fixing the cause costs "
    "you. Every call, valid or not, uses one step and one simulated minute (wait uses one step "
    "for several minutes). After submit the system is watched for 10 minutes and graded."
)


class _Invalid(Exception):
    """An invalid call: carries the observation's error fields."""

    def __init__(self, message: str, code: ErrorCode, hint: str = "") -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.hint = hint


@dataclass(frozen=True, slots=True)
class StepResult:
    """What :meth:`SREEnv.step` returns."""

    observation: dict[str, Any]
    done: bool
    info: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One executed call, for grading."""

    step: int
    clock: int
    tool: str
    args: dict[str, Any]
    ok: bool
    error: str | None = None
    old_value: Any = None  # set_config: the file value before the edit


@dataclass(slots=True)
class EpisodeLog:
    """Everything the grader reads about the agent's behaviour."""

    calls: list[CallRecord] = field(default_factory=list)
    declared: tuple[str, str] | None = None
    witnessed: list[str] = field(default_factory=list)
    first_mutation_step: int | None = None
    end_reason: EndReason | None = None
    submit_clock: int | None = None
    summary: str = ""


class SREEnv:
    """One episode of a task. Create, :meth:`reset`, then :meth:`step` until ``done``."""

    def __init__(self, task: Task, *, run_seed: int = 0, agent: str = "", model: str = "none"):
        self.task = task
        self.run_seed = run_seed
        self.agent = agent
        self.model = model
        self.clock = 0
        self.steps_used = 0
        self.log = EpisodeLog()
        self.transcript: list[str] = []
        self._world: World | None = None
        self._observer: Observer | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def world(self) -> World:
        if self._world is None:
            msg = "the episode has not started: call reset() first"
            raise EpisodeError(msg)
        return self._world

    @property
    def done(self) -> bool:
        return self.log.end_reason is not None

    @property
    def steps_left(self) -> int:
        return max(0, self.task.max_steps - self.steps_used)

    def reset(self) -> dict[str, Any]:
        """Starts the episode at T0 and returns the prompt: preamble, brief, alerts, tools."""
        task = self.task
        self._world = world_at_t0(task)
        self._observer = Observer(
            world=self._world,
            logs=LogSource(
                seed=task.seed,
                t0=task.incident.start,
                onset=onset_minute(task),
                dedup=task.noise.log_dedup,
                benign_per_min=task.noise.benign_lines_per_min,
                decoys=tuple(task.noise.decoy_logs),
            ),
            seed=task.seed,
            alert_scope=task.noise.alert_scope,
            alert_also=tuple(task.noise.alert_also),
        )
        self.clock = 0
        self.steps_used = 0
        self.log = EpisodeLog()
        self.transcript = []
        alerts = [a for a in self._observer.alerts(0) if a["state"] == "active"]
        prompt: dict[str, Any] = {
            "task_id": task.id,
            "title": task.title,
            "preamble": PREAMBLE,
            "brief": task.incident.brief,
            "alerts": alerts,
            "services": list(SERVICES),
            "max_steps": task.max_steps,
            "clock": topo.timestamp(task.incident.start, 0),
            "tools": openai_tools(),
            "fault_glossary": dict(FAULT_GLOSSARY),
        }
        prompt["text"] = render_prompt(prompt)
        return prompt

    @property
    def observer(self) -> Observer:
        if self._observer is None:
            msg = "the episode has not started: call reset() first"
            raise EpisodeError(msg)
        return self._observer

    # ------------------------------------------------------------------ one step
    def step(self, action: Mapping[str, Any] | str) -> StepResult:
        """Executes one tool call. ``action`` is ``{"tool": ..., "args": {...}}`` or JSON text."""
        observer = self.observer
        if self.done:
            error = {
                "code": "ALREADY_SUBMITTED",
                "message": "the episode is over; nothing was executed",
                "hint": "start a new episode with reset()",
            }
            ended = {
                "ok": False,
                "tool": _tool_name(action),
                "error": error,
                "step": self.steps_used,
                "steps_left": self.steps_left,
                "clock": topo.timestamp(self.task.incident.start, self.clock),
                "done": True,
            }
            return StepResult(ended, True, {"counted": False})
        clock = self.clock
        self.steps_used += 1
        tool = ""
        args: dict[str, Any] = {}
        ok = True
        advance = 1
        body: dict[str, Any]
        record_args: dict[str, Any] = {}
        old_value: Any = None
        try:
            tool, raw_args = _unpack(action)
            tool, args = _validate(tool, raw_args)
            record_args = args
            output, advance, old_value = self._execute(observer, clock, tool, args)
            body = {"output": output}
        except _Invalid as invalid:
            ok = False
            body = {
                "error": {"code": invalid.code, "message": invalid.message, "hint": invalid.hint}
            }
            record_args = args if args else (_args_of(action))
        self.log.calls.append(
            CallRecord(
                self.steps_used,
                clock,
                tool,
                record_args,
                ok,
                None if ok else body["error"]["code"],
                old_value,
            )
        )
        if ok and tool in MUTATING and self.log.first_mutation_step is None:
            self.log.first_mutation_step = self.steps_used
        if ok and tool not in MUTATING and self.log.first_mutation_step is None:
            self._witness(tool, args, body["output"])
        if ok and tool == "submit":
            self._end("submit", clock)
        else:
            self.clock = clock + advance
            if self.steps_used >= self.task.max_steps:
                self._end("step_budget", self.clock)
        obs: dict[str, Any] = {
            "ok": ok,
            "tool": tool,
            **body,
            "step": self.steps_used,
            "steps_left": self.steps_left,
            "clock": topo.timestamp(self.task.incident.start, self.clock),
            "done": self.done,
        }
        action_record = {"tool": tool, "args": record_args} if tool else {"raw": _raw_text(action)}
        line = {
            "step": self.steps_used,
            "clock": clock,
            "action": action_record,
            "ok": ok,
            "observation": obs,
        }
        self.transcript.append(canonical(line))
        return StepResult(obs, self.done, {"counted": True})

    def force_submit(self, reason: Literal["agent_exit", "time_limit", "step_budget"]) -> None:
        """Ends the episode as if ``submit`` were called now, without using a step."""
        if not self.done:
            self._end(reason, self.clock)

    def _end(self, reason: EndReason, clock: int) -> None:
        self.log.end_reason = reason
        self.log.submit_clock = clock
        self.world.at(clock + topo.SOAK_MINUTES)  # the soak: minutes t+1 ... t+10, no agent

    # ------------------------------------------------------------------ execution
    def _execute(
        self, obs: Observer, clock: int, tool: str, args: dict[str, Any]
    ) -> tuple[str, int, Any]:
        """Runs a validated call: (output text, minutes the clock advances, old value)."""
        match tool:
            case "list_services":
                return obs.list_services(clock), 1, None
            case "get_status":
                return obs.get_status(clock, args["service"]), 1, None
            case "get_config":
                return obs.get_config(clock, args["service"]), 1, None
            case "get_logs":
                text = obs.get_logs(
                    clock, args["service"], args["since"], args["grep"], args["limit"]
                )
                return text, 1, None
            case "get_metrics":
                text = obs.get_metrics(clock, args["service"], args["metric"], args["window"])
                return text, 1, None
            case "get_events":
                return obs.get_events(clock, args["service"], args["since"]), 1, None
            case "get_alerts":
                return obs.get_alerts(clock), 1, None
            case "wait":
                minutes = int(args["minutes"])
                stamp = topo.timestamp(self.task.incident.start, clock + minutes)
                return f"waited {minutes} min; the time is now {stamp}", minutes, None
            case "declare_root_cause":
                self.log.declared = (args["service"], args["fault"])
                return f"recorded: root cause {args['service']} / {args['fault']}", 1, None
            case "submit":
                self.log.summary = args["summary"]
                return "submitted; the system is watched for 10 minutes, then graded", 1, None
            case _:
                return self._mutate(clock, tool, args)

    def _mutate(self, clock: int, tool: str, args: dict[str, Any]) -> tuple[str, int, Any]:
        world, at = self.world, clock + 1
        s = args["service"]
        file = world.at(clock).files[s]
        if tool == "set_config":
            key = args["key"]
            try:
                value = check_edit(s, key, args["value"], certs=world.certs)
            except KeyRejected as rejected:
                raise _Invalid(str(rejected), rejected.code, rejected.hint) from rejected
            old = file.values[key]
            changes = [Change(at, 0, "edit_file", s, key, value)]
            live = reload_mode(key) == "live"
            if live:
                changes.append(Change(at, 1, "edit_running", s, key, value))
            world.schedule(
                changes, Event(at, s, "config_change", f"config change {s}: {key} ({AGENT_ACTOR})")
            )
            if live:
                return f"applied (live): {s} {key} = {render_value(value)}", 1, old
            return f"written; pending restart ({key}): restart({s}) to apply it", 1, old
        if tool == "restart":
            changes = [Change(at, 2, "reload", s), Change(at, 3, "blip", s)]
            world.schedule(changes, Event(at, s, "restart", f"restart {s} ({AGENT_ACTOR})"))
            return f"restarted {s}; ready in 1m", 1, None
        if tool == "rollback":
            return self._rollback(world, file, clock, s, args["version"])
        replicas = int(args["replicas"])  # scale
        old = file.values["deploy.replicas"]
        text = f"scale {s} {old} -> {replicas} ({AGENT_ACTOR})"
        world.schedule(
            [Change(at, 0, "edit_both", s, "deploy.replicas", replicas)],
            Event(at, s, "scale", text),
        )
        return f"scaled {s} from {old} to {replicas} replicas", 1, old

    def _rollback(
        self, world: World, file: ConfFile, clock: int, s: str, version: str
    ) -> tuple[str, int, Any]:
        current = str(file.values["deploy.version"])
        history = [v.name for v in world.history(s, clock)]
        if version not in history or version == current:
            allowed = ", ".join(v for v in history if v != current)
            msg = f"{version!r} is not a version {s} can roll back to"
            raise _Invalid(
                msg, "UNKNOWN_VERSION", f"deploy history of {s} (other than {current}): {allowed}"
            )
        at = clock + 1
        changes = [
            Change(at, 0, "edit_both", s, "deploy.version", version),
            Change(at, 2, "reload", s),
            Change(at, 3, "blip", s),
        ]
        world.schedule(
            changes, Event(at, s, "deploy", f"rollback {s} {current} -> {version} ({AGENT_ACTOR})")
        )
        return f"rolled back {s} from {current} to {version}; ready in 1m", 1, current

    # ------------------------------------------------------------------ evidence
    def _witness(self, tool: str, args: dict[str, Any], output: str) -> None:
        """Marks required evidence items this executed read call satisfies (§3.9)."""
        for item in self.task.ground_truth.required_evidence:
            if item.id in self.log.witnessed or item.tool != tool:
                continue
            if any(str(args.get(k)) != str(v) for k, v in item.match.items()):
                continue
            if item.witness is not None:
                found = (
                    item.witness in output.splitlines()
                    if tool == "get_config"
                    else item.witness in output
                )
                if not found:
                    continue
            self.log.witnessed.append(item.id)

    # ------------------------------------------------------------------ results
    def transcript_sha256(self) -> str:
        """Hash of the transcript: equal for equal (task, actions), in any process."""
        return hashlib.sha256("\n".join(self.transcript).encode()).hexdigest()

    def grade(self) -> Grade:
        """The grade of a finished episode (see :mod:`srez_env.grade`)."""
        if not self.done:
            msg = "the episode is still running: grade it after submit or force_submit"
            raise EpisodeError(msg)
        from srez_env.grade import grade_episode  # grade replays episodes: import it lazily

        return grade_episode(self)


def _unpack(action: Mapping[str, Any] | str) -> tuple[str, dict[str, Any]]:
    if isinstance(action, str):
        try:
            parsed = json.loads(action)
        except json.JSONDecodeError as e:
            msg = f"the reply is not one JSON object: {e.msg} at char {e.pos}"
            hint = 'reply with exactly one object like {"tool": "get_alerts", "args": {}}'
            raise _Invalid(msg, "PARSE_ERROR", hint) from e
        if not isinstance(parsed, dict):
            msg = f"the reply is JSON {type(parsed).__name__}, not an object"
            raise _Invalid(msg, "PARSE_ERROR", 'reply with {"tool": ..., "args": {...}}')
        action = parsed
    tool = action.get("tool")
    args = action.get("args", {})
    extra = sorted(set(action) - {"tool", "args"})
    if not isinstance(tool, str) or not isinstance(args, dict) or extra:
        msg = "a call must be an object with a string 'tool' and an object 'args'"
        if extra:
            msg += f" (unexpected fields: {', '.join(extra)})"
        raise _Invalid(msg, "BAD_ARGS", 'e.g. {"tool": "get_logs", "args": {"service": "db"}}')
    return tool, dict(args)


def _validate(tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    spec = TOOLS.get(tool)
    if spec is None:
        msg = f"unknown tool {tool!r}"
        raise _Invalid(msg, "UNKNOWN_TOOL", "tools: " + ", ".join(TOOLS))
    service = args.get("service")
    allowed = (*SERVICES, "none") if tool == "declare_root_cause" else SERVICES
    if "service" in args and service is not None and service not in allowed:
        msg = f"unknown service {service!r}"
        raise _Invalid(msg, "UNKNOWN_SERVICE", "services: " + ", ".join(allowed))
    try:
        parsed = spec.args.model_validate(args)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "args"
        msg = f"{tool}: {where}: {first['msg']}"
        raise _Invalid(msg, "BAD_ARGS", f"arguments of {tool}: {_arg_names(tool)}") from e
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
            raise _Invalid(msg, "BAD_ARGS", f"{field_name} may be {low}m to {longest}")
    if tool == "get_metrics" and values["metric"] is not None:
        known = METRICS[values["service"]]
        if values["metric"] not in known:
            msg = f"{values['service']} has no metric {values['metric']!r}"
            raise _Invalid(msg, "UNKNOWN_METRIC", "metrics: " + ", ".join(known))


def _arg_names(tool: str) -> str:
    fields = TOOLS[tool].args.model_fields
    return ", ".join(fields) if fields else "none"


def _tool_name(action: Mapping[str, Any] | str) -> str:
    tool = action.get("tool") if isinstance(action, Mapping) else None
    return tool if isinstance(tool, str) else ""


def _args_of(action: Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(action, Mapping) and isinstance(action.get("args"), dict):
        return dict(action["args"])
    return {}


def _raw_text(action: Mapping[str, Any] | str) -> str:
    return action if isinstance(action, str) else canonical(dict(action))


def render_prompt(prompt: Mapping[str, Any]) -> str:
    """The prompt as one text: preamble, brief, active alerts, budget and the fault glossary."""
    alerts = prompt["alerts"]
    alert_lines = [
        f"- [{a['severity']}] {a['name']} on {a['service']} since {a['since']}: {a['summary']}"
        for a in alerts
    ] or ["- (none active)"]
    glossary = [f"- {kind}: {gloss}" for kind, gloss in prompt["fault_glossary"].items()]
    return "\n".join(
        [
            prompt["preamble"],
            "",
            f"Incident ({prompt['task_id']}): {prompt['title']}",
            prompt["brief"],
            "",
            f"Active alerts at {prompt['clock']}:",
            *alert_lines,
            "",
            f"Services: {', '.join(prompt['services'])}. Step budget: {prompt['max_steps']}.",
            "",
            "Tools (call exactly one per turn):",
            *_tool_lines(prompt["tools"]),
            "",
            "Fault kinds for declare_root_cause:",
            *glossary,
        ]
    )


def _tool_lines(tools: list[dict[str, Any]]) -> list[str]:
    lines = []
    for tool in tools:
        fn = tool["function"]
        props = fn["parameters"].get("properties", {})
        required = set(fn["parameters"].get("required", []))
        args = ", ".join(name if name in required else f"{name}?" for name in props)
        lines.append(f"- {fn['name']}({args}): {fn['description']}")
    return lines
