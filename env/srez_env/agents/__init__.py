"""Agents: the factory the harness uses, and the contract every agent meets (defined in
:mod:`srez_env.agent_contract`, below the baselines, and re-exported here).

An agent is anything with a ``name`` and ``act(observation) -> action``. The first call receives
the prompt from ``SREEnv.reset()``; each later call receives the observation of the previous
step. An action is ``{"tool": name, "args": {...}}``, or raw text that the environment parses as
one JSON call (the LLM agent hands over replies it could not parse this way, so the environment
rejects them with its own error codes and counts the step).

``llm`` and ``llm-json`` are the LLM agent (:mod:`srez_env.agents.llm`); it needs a model client,
which only the agent process has (``srez-agent``). Built without one, it is a spec check only:
its first ``act`` raises :class:`~srez_env.agents.llm.LLMConfigError`.

``cmd:NAME`` is a custom agent command (bring your own agent): a process of its own that speaks
the agent socket, so nothing here can build it; :func:`custom_agent_name` checks the spec. NAME
is the agent's name in the results layout (``results/<task>/<model>/<NAME>/``), so it may not be
the name of a built-in agent: a custom command is never filed as a baseline.

``mcp:NAME`` is a custom agent command too, one that speaks MCP: the harness starts it with an
MCP configuration pointing at ``srez mcp --socket`` (``srez_client.integrations.mcp``).

``package.module:AgentClass`` is a Python agent of one's own, imported and built in the process
that runs the agent (:mod:`srez_env.agents.python_agent`), and filed under its own name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from srez_env import agent_registry
from srez_env.agent_contract import BUILTIN_AGENT_NAMES as BUILTIN_AGENT_NAMES
from srez_env.agent_contract import CUSTOM_NAME
from srez_env.agent_contract import Agent as Agent
from srez_env.errors import EnvError

if TYPE_CHECKING:
    from srez_env.agents.llm import ModelClient, Note
    from srez_env.task import Task  # annotations only: the LLM agent process never loads tasks

AGENT_KINDS = (
    *(agent.spec for agent in agent_registry.AGENTS if agent.launchable),
    "cmd:NAME",
    "mcp:NAME",
    "module:Class",
)
"""Every form an agent spec takes: the built-in agents (:mod:`srez_env.agent_registry`), then
the agents of one's own."""
CUSTOM_PREFIX = "cmd:"
"""Spec prefix of a custom agent command: ``cmd:NAME``."""
MCP_PREFIX = "mcp:"
"""Spec prefix of a custom agent command that speaks MCP: ``mcp:NAME``."""
CUSTOM_PREFIXES = (CUSTOM_PREFIX, MCP_PREFIX)
"""Spec prefixes of custom agent commands (their own process, filed under NAME)."""


class AgentSpecError(EnvError, ValueError):
    """An agent spec names no known agent."""


def custom_agent_name(spec: str) -> str | None:
    """NAME of a ``cmd:NAME`` or ``mcp:NAME`` spec (None for any other spec).

    Raises:
        AgentSpecError: If NAME is not 1 to 40 of ``a-z 0-9 . _ -`` starting with a letter or
            digit, or is the name of a built-in agent.
    """
    prefix = next((p for p in CUSTOM_PREFIXES if spec.startswith(p)), None)
    if prefix is None:
        return None
    name = spec.removeprefix(prefix)
    if not CUSTOM_NAME.fullmatch(name):
        msg = f"custom agent name {name!r}: use 1 to 40 of a-z 0-9 . _ - (e.g. {prefix}my-agent)"
        raise AgentSpecError(msg)
    if name in BUILTIN_AGENT_NAMES:
        msg = f"custom agent name {name!r} is a built-in agent's: a custom command files its runs under a name of its own (e.g. {prefix}my-{name})"
        raise AgentSpecError(msg)
    return name


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
    task file only when it runs the oracle (docs/design.md §7). The LLM agents read their settings
    from ``environ`` and call the model through ``client`` (see the module docstring).
    """
    if spec in agent_registry.LLM:  # first: its process loads no baseline and no task module
        from srez_env.agents.llm import LLMAgent, LLMSettings, UnboundClient

        if client is None or environ is None:  # a spec check only: see the module docstring
            unbound = LLMSettings(model="none", mode="json" if spec == "llm-json" else "tools")
            return LLMAgent(unbound, UnboundClient())
        settings = LLMSettings.from_env(environ, spec=spec)
        return LLMAgent(settings, client, seed=run_seed, on_note=on_note)
    # each agent's own module only: an agent process loads what its agent needs (the heuristic,
    # the floors and a replay load no task model, and so no pydantic: 0.1 s of every start)
    if spec == "scripted":
        from srez_env.baselines.scripted import ScriptedAgent

        if oracle is None:
            msg = "the scripted oracle needs the task file, and this agent was not handed it"
            raise AgentSpecError(msg)
        return ScriptedAgent(oracle)
    if spec == "heuristic":
        from srez_env.baselines.heuristic import HeuristicAgent

        return HeuristicAgent()
    if spec == "diagnostician":
        from srez_env.baselines.diagnostician import DiagnosticianAgent

        return DiagnosticianAgent()
    if spec == "random":
        from srez_env.baselines.random_agent import RandomAgent
        from srez_env.task import derive_seed

        return RandomAgent(derive_seed(task_id), run_seed)
    if spec in ("noop", "restart-all"):
        from srez_env.baselines.floors import NoopAgent, RestartAllAgent

        return NoopAgent() if spec == "noop" else RestartAllAgent()
    if spec.startswith("replay:"):
        from srez_env.baselines.replay import ReplayAgent, load_replay

        if not (path := spec.removeprefix("replay:")).strip():
            msg = "replay: needs its file: replay:FILE (one JSON action per line)"
            raise AgentSpecError(msg)
        return ReplayAgent(load_replay(Path(path)))
    from srez_env.agents.python_agent import import_path, load_python_agent

    if import_path(spec) is not None:
        return load_python_agent(spec, task_id=task_id, run_seed=run_seed)
    if custom_agent_name(spec) is not None:
        msg = f"{spec!r} is a custom agent command: it runs as its own process (--backend local), not in this one"
        raise AgentSpecError(msg)
    msg = f"unknown agent {spec!r} (known: {', '.join(AGENT_KINDS)})"
    raise AgentSpecError(msg)
