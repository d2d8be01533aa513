"""The contract between the daemon and the agent process it starts (docs/design.md §5).

Both sides import these from here, so the agent process needs nothing of the daemon but the
protocol: not the episode, the simulator or the grader. The ``inline`` backend, which plays an
agent without a process, translates its actions with the same :func:`tool_call`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

EXIT_PROVIDER: Final = 75
"""``srez-agent``'s exit code when the model provider failed for good (``EX_TEMPFAIL``); the run
counts as a provider error only when the daemon attests it (``srez_daemon.attest``)."""
EXIT_MODEL_LIMIT: Final = 76
"""``srez-agent``'s exit code when the model's own limit ended the episode (its context window,
its content filter): the run is graded and counted, as ``error_kind: "model_limit"`` when the
daemon attests it (``srez_daemon.attest``)."""
EXIT_CONFIG: Final = 2
"""``srez-agent``'s exit code when its configuration was refused."""
RAW_REPLY_TOOL: Final = "_reply"
"""The tool an agent posts a reply to that is not a valid action (recorded as an invalid call)."""
SUBMIT_TOOL: Final = "submit"
"""The tool that ends the episode; the agent socket serves it as ``POST /submit``."""
ATTEMPT_HEADER: Final = "X-Srez-Attempt"
"""Request header of the agent's thin client: a random id of this agent process, the same on all
its calls. The model relay replays a run's kept replies only to *another* attempt of the run (a
task run again after a lost node), never to the attempt that asked (which may ask the very same
request again on purpose, to sample it), and only as often as they were asked before."""
ATTEMPT_PATTERN: Final = r"^[0-9a-f]{8,64}$"
"""What an attempt id may be; the relay refuses anything else."""
COST_HEADER: Final = "X-Srez-Cost-Usd"
"""Header of a model relay's chat completion: the reply's cost in USD, priced by the host's
litellm from the run's real slug (absent when the model is not priced). The agent's thin client
(:mod:`srez_daemon.agent.model_client`) adds it to the run's spend, so the cost cap works
without litellm in the agent."""
MODEL_PASS_PATTERNS: Final = (
    r"SREZ_LLM_[A-Z0-9_]+",
    r"[A-Z0-9_]+_API_KEY",
    r"[A-Z0-9_]+_API_BASE",
    r"[A-Z0-9_]+_API_VERSION",
    r"OLLAMA_[A-Z0-9_]+",
    r"AZURE_[A-Z0-9_]+",
)
"""Variables an agent with a model receives (whole-name matches, upper case only): the daemon
passes them to its agent process, and the ``local`` backend to the daemon it starts."""
_MODEL_PASS = re.compile("|".join(f"(?:{p})" for p in MODEL_PASS_PATTERNS))

Action = Mapping[str, Any] | str
"""What an agent's ``act`` returns: ``{"tool": ..., "args": {...}}``, or a raw reply."""


def tool_call(action: Action) -> tuple[str, dict[str, Any]]:
    """The tool and arguments an agent's action is executed as, whoever hosts the agent.

    A raw reply, an action without a tool name, and a tool name that could not be a path segment
    of ``/tools/{name}`` all become :data:`RAW_REPLY_TOOL` with the text, which the environment
    rejects as an invalid call; arguments that are not an object become ``{}``.
    """
    if isinstance(action, str):
        return RAW_REPLY_TOOL, {"text": action}
    tool = str(action.get("tool", ""))
    args = action.get("args", {})
    if not tool or "/" in tool:
        return RAW_REPLY_TOOL, {"text": str(action)}
    return tool, dict(args) if isinstance(args, Mapping) else {}


def model_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` an agent that calls a model receives."""
    return {k: v for k, v in environ.items() if _MODEL_PASS.fullmatch(k)}


class AgentTaskFields(NamedTuple):
    """``GET /task`` as the agent process reads it: the fields of
    :class:`srez_daemon.protocol.api.AgentTask` (the daemon's pydantic model, which the schema and
    the daemon keep), checked here without pydantic: importing the wire models costs an agent
    process about 0.1 s of its start, which every run pays before its first model call."""

    task_id: str
    run_id: str
    run_seed: int
    max_steps: int
    prompt: dict[str, Any]
    oracle: dict[str, Any] | None = None


_TASK_FIELDS: Final = {"task_id": str, "run_id": str, "run_seed": int, "max_steps": int}


def parse_agent_task(answer: object) -> AgentTaskFields:
    """Reads ``GET /task``'s answer; raises ValueError with a one-line reason for a body that is
    not an ``AgentTask``. Fields the agent does not know are ignored (a newer daemon's)."""
    if not isinstance(answer, Mapping):
        msg = f"GET /task answered {type(answer).__name__}, not a JSON object"
        raise ValueError(msg)
    for name, kind in _TASK_FIELDS.items():
        value = answer.get(name)
        # bool is an int to Python, never a seed or a step budget to the daemon
        if not isinstance(value, kind) or isinstance(value, bool):
            msg = f"GET /task: field {name!r} must be {kind.__name__}, got {value!r:.80}"
            raise ValueError(msg)
    prompt, oracle = answer.get("prompt"), answer.get("oracle")
    if not isinstance(prompt, dict):
        msg = f"GET /task: field 'prompt' must be an object, got {prompt!r:.80}"
        raise ValueError(msg)
    if oracle is not None and not isinstance(oracle, dict):
        msg = f"GET /task: field 'oracle' must be an object or null, got {oracle!r:.80}"
        raise ValueError(msg)
    return AgentTaskFields(
        task_id=answer["task_id"],
        run_id=answer["run_id"],
        run_seed=answer["run_seed"],
        max_steps=answer["max_steps"],
        prompt=prompt,
        oracle=oracle,
    )
