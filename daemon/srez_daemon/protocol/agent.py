"""The contract between the daemon and the agent process it starts (DESIGN.md §5).

Both sides import these from here, so the agent process needs nothing of the daemon but the
protocol: not the episode, the simulator or the grader. The ``inline`` backend, which plays an
agent without a process, translates its actions with the same :func:`tool_call`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

EXIT_PROVIDER: Final = 75
"""``srez-agent``'s exit code when the model provider failed for good (``EX_TEMPFAIL``); the run
counts as a provider error only when the daemon attests it (``srez_daemon.attest``)."""
EXIT_CONFIG: Final = 2
"""``srez-agent``'s exit code when its configuration was refused."""
RAW_REPLY_TOOL: Final = "_reply"
"""The tool an agent posts a reply to that is not a valid action (recorded as an invalid call)."""
SUBMIT_TOOL: Final = "submit"
"""The tool that ends the episode; the agent socket serves it as ``POST /submit``."""
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
