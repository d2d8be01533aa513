"""``SREEnv``: one episode of one task (docs/environment.md §3.8, §6.11).

Order inside a step: validate -> execute (a read observes minute ``t``) -> schedule the mutation
for ``t + 1`` -> advance the clock (1 minute, or ``n`` for ``wait``). Every call costs a step,
invalid ones included; an invalid call changes nothing but the clock and says what was wrong and
what is allowed. The episode ends on ``submit``, when the step budget runs out, or through
:meth:`SREEnv.force_submit` (the harness calls it when the agent exits or times out).

The agent's own mutations appear in ``get_events`` as ``(by on-call agent)`` from the minute they
take effect, as they would in a real audit log; the design lists only the task's events there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from srez_env.actions import FAULT_GLOSSARY, MUTATING, TOOLS, openai_tools
from srez_env.calls import InvalidCall, args_of, raw_text, tool_name, unpack, validate
from srez_env.episode import CallRecord, EndReason, EpisodeLog, EpisodeRecord
from srez_env.errors import EpisodeError
from srez_env.observe import (
    Observer,
    canonical,
)
from srez_env.prompt import PREAMBLE, render_prompt
from srez_env.sim.scenario import AGENT_ACTOR, onset_minute, world_at_t0
from srez_env.sim.timeline import Change, Event, World
from srez_env.task import SERVICES, Task
from srez_env.telemetry.logs import LogSource
from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile, render_value
from srez_env.world.schema import KeyRejected, check_edit, reload_mode

_Part = TypeVar("_Part", World, Observer)


@dataclass(frozen=True, slots=True)
class StepResult:
    """What :meth:`SREEnv.step` returns."""

    observation: dict[str, Any]
    done: bool
    info: dict[str, Any]


def _started(part: _Part | None) -> _Part:
    """A part of the episode that :meth:`SREEnv.reset` creates."""
    if part is None:
        msg = "the episode has not started: call reset() first"
        raise EpisodeError(msg)
    return part


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
        return _started(self._world)

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
                generic=task.noise.fault_lines == "generic",
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
        # No task id: ids name files and runs for people, and an id (or anything else fixed per
        # task) in the prompt lets an agent look its answer up instead of diagnosing.
        prompt: dict[str, Any] = {
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
        return _started(self._observer)

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
                "tool": tool_name(action),
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
            tool, raw_args = unpack(action)
            tool, args = validate(tool, raw_args)
            record_args = args
            output, advance, old_value = self._execute(observer, clock, tool, args)
            body = {"output": output}
        except InvalidCall as invalid:
            ok = False
            body = {
                "error": {"code": invalid.code, "message": invalid.message, "hint": invalid.hint}
            }
            record_args = args if args else (args_of(action))
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
        action_record = {"tool": tool, "args": record_args} if tool else {"raw": raw_text(action)}
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
        if TOOLS[tool].tool_class == "read":
            # a read tool is the Observer method of its name, its arguments those of its model
            read: Callable[..., str] = getattr(obs, tool)
            return read(clock, **args), 1, None
        match tool:
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
                raise InvalidCall(str(rejected), rejected.code, rejected.hint) from rejected
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
            raise InvalidCall(
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

    def record(self) -> EpisodeRecord:
        """The episode as the grader reads it (:func:`srez_env.grade.grade_episode`)."""
        return EpisodeRecord(
            task=self.task,
            world=self.world,
            log=self.log,
            steps_used=self.steps_used,
            clock=self.clock,
            agent=self.agent,
            model=self.model,
            run_seed=self.run_seed,
        )
