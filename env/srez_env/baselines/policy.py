"""A base for agents written as generators: ``yield`` an action, receive its observation."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

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
