"""The agent contract, and the names an agent may file its runs under. Pure, and below every
agent: the factory in :mod:`srez_env.agents`, the loaders, the baselines and
:func:`srez_env.play.play_episode` import it, and it imports none of them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Protocol

from srez_env import agent_registry

BUILTIN_AGENT_NAMES: Final = agent_registry.NAMES
"""Names the built-in agents and the calibrators file their runs under
(:mod:`srez_env.agent_registry`); no custom agent may take one (a test holds it equal to every
``name`` the baselines declare)."""
CUSTOM_NAME: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")
"""What the name of an agent of one's own (a command, a Python class) may be."""


class Agent(Protocol):
    """The agent contract (docs/environment.md §3.10)."""

    name: str

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any] | str:
        """The next tool call, given the prompt (first call) or the last observation."""
        ...
