"""Agents: the contract every agent meets, and the factory the harness uses.

An agent is anything with a ``name`` and ``act(observation) -> action``. The first call receives
the prompt from ``SREEnv.reset()``; each later call receives the observation of the previous
step. An action is ``{"tool": name, "args": {...}}``, or raw text that the environment parses as
one JSON call (the LLM agent hands over replies it could not parse this way, so the environment
rejects them with its own error codes and counts the step).

``llm`` and ``llm-json`` are the LLM agent (:mod:`srez_env.agents.llm`); it needs a model client,
which only the agent process has (``srez-agent``). Built without one, it is a spec check only:
its first ``act`` raises :class:`~srez_env.agents.llm.LLMConfigError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from srez_env.errors import EnvError
from srez_env.task import Task

if TYPE_CHECKING:
    from srez_env.agents.llm import ModelClient, Note

AGENT_KINDS = ("scripted", "heuristic", "random", "replay:FILE", "llm", "llm-json")


class Agent(Protocol):
    """The agent contract (ENV_DESIGN §3.10)."""

    name: str

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any] | str:
        """The next tool call, given the prompt (first call) or the last observation."""
        ...


class AgentSpecError(EnvError, ValueError):
    """An agent spec names no known agent."""


def make_agent(spec: str, task: Task, run_seed: int = 0) -> Agent:
    """Builds an agent from its spec for a task whose file this process holds (inline runs)."""
    return build_agent(spec, task_id=task.id, run_seed=run_seed, oracle=task)


def build_agent(
    spec: str,
    *,
    task_id: str,
    run_seed: int = 0,
    oracle: Task | None = None,
    environ: Mapping[str, str] | None = None,
    client: ModelClient | None = None,
    on_note: Callable[[Note], None] | None = None,
) -> Agent:
    """Builds an agent from public facts only; the scripted oracle also needs ``oracle``.

    This is what an agent process uses: it knows the task id and the run seed, and is handed the
    task file only when it runs the oracle (DESIGN.md §7). The LLM agents read their settings
    from ``environ`` and call the model through ``client`` (see the module docstring).
    """
    from srez_env.baselines.heuristic import HeuristicAgent
    from srez_env.baselines.random_agent import RandomAgent
    from srez_env.baselines.replay import ReplayAgent, load_replay
    from srez_env.baselines.scripted import ScriptedAgent
    from srez_env.task import derive_seed

    if spec == "scripted":
        if oracle is None:
            msg = "the scripted oracle needs the task file, and this agent was not handed it"
            raise AgentSpecError(msg)
        return ScriptedAgent(oracle)
    if spec == "heuristic":
        return HeuristicAgent()
    if spec == "random":
        return RandomAgent(derive_seed(task_id), run_seed)
    if spec.startswith("replay:"):
        return ReplayAgent(load_replay(Path(spec.removeprefix("replay:"))))
    if spec in ("llm", "llm-json"):
        from srez_env.agents.llm import LLMAgent, LLMSettings, UnboundClient

        if client is None or environ is None:
            unbound = LLMSettings(model="none", mode="json" if spec == "llm-json" else "tools")
            return LLMAgent(unbound, UnboundClient())
        settings = LLMSettings.from_env(environ, spec=spec)
        return LLMAgent(settings, client, seed=run_seed, on_note=on_note)
    msg = f"unknown agent {spec!r} (known: {', '.join(AGENT_KINDS)})"
    raise AgentSpecError(msg)
