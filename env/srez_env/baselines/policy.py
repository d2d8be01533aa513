"""A base for agents written as generators: ``yield`` an action, receive its observation."""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from typing import Any

from srez_env.world.conffile import ConfFile, Value

Action = dict[str, Any]
Observation = Mapping[str, Any]
Policy = Generator[Action, Observation, None]

SUBMIT: Action = {"tool": "submit", "args": {}}


def call(tool: str, **args: Any) -> Action:
    """An action dict."""
    return {"tool": tool, "args": args}


class PolicyAgent:
    """Runs :meth:`policy` as a coroutine; after it returns, the agent submits."""

    name = "policy"

    def __init__(self) -> None:
        self._policy: Policy | None = None

    def policy(self, prompt: Observation) -> Policy:
        """Yields actions; each ``yield`` evaluates to that action's observation.

        The default policy does nothing, so the agent submits at once (the null agent).
        """
        yield from ()

    def act(self, observation: Observation) -> Action:
        try:
            if self._policy is None:
                self._policy = self.policy(observation)
                return next(self._policy)
            return self._policy.send(observation)
        except StopIteration:
            return SUBMIT


def output_text(obs: Observation) -> str:
    """The text a tool call returned."""
    return str(obs.get("output", ""))


def json_object(obs: Observation) -> dict[str, Any]:
    """A tool's output read as a JSON object (empty when it is not one)."""
    try:
        data = json.loads(output_text(obs))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def json_list(obs: Observation) -> list[dict[str, Any]]:
    """A tool's output read as a JSON list (empty when it is not one)."""
    try:
        data = json.loads(output_text(obs))
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def config_values(obs: Observation) -> dict[str, Value]:
    """``get_config``'s output read as typed values (empty when it does not parse)."""
    try:
        return dict(ConfFile.parse(output_text(obs)).values)
    except ValueError:
        return {}
