"""Every built-in agent, once: the one table the harness reads agent names from.

Each row is a built-in agent (or a calibrator that files runs of its own): the name it is asked
for by and files its runs under, where it lives, whether it reads the task's truth, whether it
calls a model, and what it is for. The factory (:func:`srez_env.agents.build_agent`), the reserved
names a custom agent may not take, the agent process's network decision, headless mode, the
launch wizard, ``srez managed``'s baselines and the leaderboard's floors all derive from it; a
test holds the table equal to the ``name`` every agent class declares.

Adding a built-in agent is one row here, its branch in ``build_agent`` and its tests. Pure data:
no agent module is imported (an agent process loads only its own agent).
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

Role = Literal["oracle", "baseline", "floor", "replay", "llm", "calibrator"]
"""``oracle``: plays the reference fix (reads the truth); ``baseline``: plays from observations
only; ``floor``: a trivial agent whose score any useful agent must clear; ``replay``: plays a
recorded file; ``llm``: a chat model; ``calibrator``: used to build and check the task sets, not
launched by a user (its name is only reserved)."""


class BuiltinAgent(NamedTuple):
    """One built-in agent. (A named tuple, not a dataclass: the agent process reads this table,
    and it imports neither ``dataclasses`` nor ``inspect``, a tenth of its start.)"""

    name: str
    """What it is asked for by (``--agent NAME``; ``replay`` as ``replay:FILE``) and files its
    runs under."""
    module: str
    """``package.module:Class`` of its implementation."""
    role: Role
    needs_truth: bool = False
    """It reads the task file's ground truth (only the oracle; it is handed the file)."""
    networked: bool = False
    """It calls a model provider; every other built-in agent speaks to the agent socket alone."""
    managed: bool = False
    """Offered by ``srez managed create --baselines`` (and taken by default there)."""

    @property
    def launchable(self) -> bool:
        """A user may run it (``srez run``, ``srez eval``, headless mode, the launch wizard)."""
        return self.role != "calibrator"

    @property
    def spec(self) -> str:
        """How it is written as ``--agent``."""
        return "replay:FILE" if self.role == "replay" else self.name


AGENTS: Final = (
    BuiltinAgent(
        "scripted", "srez_env.baselines.scripted:ScriptedAgent", "oracle",
        needs_truth=True, managed=True,
    ),
    BuiltinAgent(
        "diagnostician", "srez_env.baselines.diagnostician:DiagnosticianAgent", "baseline"
    ),
    BuiltinAgent("heuristic", "srez_env.baselines.heuristic:HeuristicAgent", "baseline", managed=True),
    BuiltinAgent("random", "srez_env.baselines.random_agent:RandomAgent", "baseline", managed=True),
    BuiltinAgent("noop", "srez_env.baselines.floors:NoopAgent", "floor"),
    BuiltinAgent("restart-all", "srez_env.baselines.floors:RestartAllAgent", "floor"),
    BuiltinAgent("replay", "srez_env.baselines.replay:ReplayAgent", "replay"),
    BuiltinAgent("llm", "srez_env.agents.llm:LLMAgent", "llm", networked=True),
    BuiltinAgent("llm-json", "srez_env.agents.llm:LLMAgent", "llm", networked=True),
    BuiltinAgent("memorised", "srez_env.baselines.memorised:MemorisedAgent", "calibrator"),
    BuiltinAgent("memorised-learn", "srez_env.baselines.memorised:observe", "calibrator"),
    BuiltinAgent("policy", "srez_env.baselines.policy:PolicyAgent", "calibrator"),
    BuiltinAgent("range", "srez_env.baselines.ranges:RangeAgent", "calibrator"),
    BuiltinAgent("loudest", "srez_env.baselines.loudest:loudest", "calibrator"),
)  # fmt: skip
BY_NAME: Final = {agent.name: agent for agent in AGENTS}

NAMES: Final = frozenset(BY_NAME)
"""Every built-in name: reserved, no custom agent may file its runs under one."""
LAUNCHABLE: Final = tuple(a.name for a in AGENTS if a.launchable and a.role != "replay")
"""The built-in agents a user runs by name (``replay:FILE`` aside), in the table's order."""
OFFLINE: Final = tuple(name for name in LAUNCHABLE if not BY_NAME[name].networked)
"""The built-in agents that speak to nothing but the agent socket, in the table's order: the
oracle, the baselines and the floors (what the card and ``make run`` play)."""
WITHOUT_NETWORK: Final = frozenset(OFFLINE)
LLM: Final = tuple(a.name for a in AGENTS if a.role == "llm")
MANAGED_BASELINES: Final = tuple(a.name for a in reversed(AGENTS) if a.managed)
"""What ``srez managed`` offers, in the order it lists and plays them: weakest first, the oracle
last."""
FLOORS: Final = tuple(a.name for a in AGENTS if a.role == "floor")
"""Agents whose score is a floor (doing nothing; restarting everything)."""
