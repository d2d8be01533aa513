"""A seeded random agent: the floor of the benchmark (docs/environment.md §3.10).

Seeded with ``Random(task_seed ^ run_seed)``. Each step it picks a read tool (70 %), a mutation
(20 %), ``wait`` (5 %) or a declaration (5 %). The read and mutating tools are the action
registry's (:func:`srez_env.actions.tools_of`, read at each step), so a tool added there is one
it may pick. It fills the arguments it knows, uniform over valid domains, and leaves any other
at its default: a service, a metric of it, a key and a value from the key's sample domain
(integers base/10, base and base*10 clamped to the domain, the flipped boolean, enum members, the
service's certificates, a good or bad nameserver), a version of its history, a replica count. On
its last step it submits.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Final

from srez_env import actions
from srez_env.task import FAULT_KINDS, SERVICES
from srez_env.telemetry.metrics import METRICS
from srez_env.world.conffile import render_value
from srez_env.world.schema import BASE_FILES, editable_keys, rule_for
from srez_env.world.topology import BASE_CERTS, BASE_REGISTRY

NAMESERVERS: Final = ("10.0.0.53", "10.0.0.54", "10.0.0.35")


def sample_values(service: str, key: str) -> list[str]:
    """The sample domain of a key, as set_config text."""
    rule = rule_for(key)
    base = BASE_FILES[service].values[key]
    if rule.kind == "int" and isinstance(base, int) and not isinstance(base, bool):
        candidates = {max(rule.low, base // 10), base, min(rule.high, base * 10)}
        return [str(v) for v in sorted(candidates)]
    if rule.kind == "bool":
        return [render_value(not base)]
    if rule.kind == "enum":
        return list(rule.choices)
    if rule.kind == "cert":
        return sorted(p for p in BASE_CERTS if p.rsplit("/", 1)[-1].startswith(f"{service}-"))
    if rule.kind == "ipv4":
        return list(NAMESERVERS)
    return [render_value(base)]


class RandomAgent:
    """Uniformly random valid-looking calls; submits on its last step."""

    name = "random"

    def __init__(self, task_seed: int, run_seed: int = 0) -> None:
        self.rng = random.Random(task_seed ^ run_seed)
        self.max_steps = 0
        self.steps = 0

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        if self.steps == 0:
            self.max_steps = int(observation.get("max_steps", 20))
        self.steps += 1
        if self.steps >= self.max_steps:
            return {"tool": "submit", "args": {}}
        roll = self.rng.random()
        if roll < 0.70:
            return self._read()
        if roll < 0.90:
            return self._mutation()
        if roll < 0.95:
            return {"tool": "wait", "args": {"minutes": self.rng.randint(1, 15)}}
        service = self.rng.choice([*SERVICES, "none"])
        return {
            "tool": "declare_root_cause",
            "args": {"service": service, "fault": self.rng.choice(FAULT_KINDS)},
        }

    def _read(self) -> dict[str, Any]:
        tool = self.rng.choice(actions.tools_of("read"))
        return {"tool": tool, "args": self._args(tool, self.rng.choice(SERVICES))}

    def _mutation(self) -> dict[str, Any]:
        tool = self.rng.choice(actions.tools_of("mutate"))
        return {"tool": tool, "args": self._args(tool, self.rng.choice(SERVICES))}

    def _args(self, tool: str, service: str) -> dict[str, Any]:
        """The arguments of ``tool`` this agent knows how to fill, drawn in a fixed order."""
        fields = actions.TOOLS[tool].args.model_fields
        args: dict[str, Any] = {}
        if "service" in fields:
            args["service"] = service
        if "metric" in fields:
            args["metric"] = self.rng.choice(METRICS[service])
        if "key" in fields:
            args["key"] = self.rng.choice(editable_keys(service))
            if "value" in fields:
                args["value"] = self.rng.choice(sample_values(service, args["key"]))
        if "version" in fields:
            args["version"] = self.rng.choice([name for name, _ in BASE_REGISTRY[service]])
        if "replicas" in fields:
            args["replicas"] = self.rng.randint(0, 10)
        return args
