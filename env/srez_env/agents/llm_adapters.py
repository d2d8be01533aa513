"""The two ways an LLM talks to the benchmark: OpenAI tool calling, or one JSON object as text.

Pure logic over plain data (no litellm here): a model reply comes in as a :class:`Reply`, and the
adapter turns it into the one action of the turn plus the chat messages to keep.

Anything the agent cannot turn into a well-formed call is handed to the environment as the raw
text (an action that is a ``str``), and the environment rejects it with its closed error codes
(``PARSE_ERROR`` for text that is not one JSON object, ``BAD_ARGS`` for an object of the wrong
shape), so a malformed reply is recorded in the dialog and costs a step like any invalid call
(docs/environment.md §3.7). A malformed tool call (arguments that are not JSON) is sent as the text
``{"tool": <name>, "args": <arguments as received>}``, so the error names the exact character.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple

Mode = Literal["tools", "json"]
Action = dict[str, Any] | str
"""A tool call ``{"tool", "args"}``, or raw text the environment parses (and may reject)."""

SYSTEM_PROMPT: Final = (
    "You are an on-call site reliability engineer working an incident in a simulated production "
    "system. You act only through the tools described in the task. Call exactly one tool per "
    "turn; after each call you receive its result. Investigate with the read-only tools before "
    "changing anything, make only the minimal change that fixes the root cause, declare the root "
    "cause with declare_root_cause, then call submit with a one-paragraph summary."
)
JSON_FORMAT: Final = (
    "\n\nYou cannot call tools natively. Reply with exactly one JSON object and nothing else, "
    'of the form {"tool": "<tool name>", "args": {...}}, for example '
    '{"tool": "get_logs", "args": {"service": "db"}}. Any other reply is an invalid call and '
    "uses a step."
)
NOT_EXECUTED: Final = "not executed: only the first tool call of a reply runs (one call per turn)"
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ToolCallReply(NamedTuple):
    """One tool call as the provider returned it (``arguments`` is a JSON *string*)."""

    id: str
    name: str
    arguments: str


class Reply(NamedTuple):
    """One model reply, lifted out of the provider's response."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallReply, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """Cost of this call, when the model's price is known."""
    finish_reason: str | None = None
    """Why the model stopped, as the provider said: ``stop`` and ``tool_calls`` are its own
    choice; ``length`` is the completion cap cutting the reply."""


class Turn(NamedTuple):
    """The action of one turn and what the next observation must answer."""

    action: Action
    call_ids: tuple[str, ...] = ()
    """Tool-call ids of the reply: the first gets the observation, the rest ``NOT_EXECUTED``."""


REPLY_OVERHEAD_TOKENS: Final = 48
"""Tokens of a reply's JSON outside its strings: braces, keys, the tool's name, spacing."""
TOKENS_PER_CHARACTER: Final = 2
"""What one character of a string may cost: a model that writes escapes (``\\n``) spends two
tokens on one character."""


def response_format(tools: list[dict[str, Any]], max_tokens: int | None = None) -> dict[str, Any]:
    """The ``response_format`` of ``llm-json``: a JSON schema that admits exactly the actions of
    ``tools`` (the prompt's OpenAI tool list), one ``{"tool", "args"}`` object per tool.

    Servers that enforce a schema by grammar (llama.cpp, vLLM, SGLang, Ollama) or natively
    (OpenAI's structured outputs) then can only produce replies that parse, which a small model
    without tool calling does not manage alone. Only if the reply is whole: under a completion
    cap of ``max_tokens``, each action's free strings are bounded so that the longest reply the
    schema admits fits (:func:`_fit_strings`); a model that runs on inside a string is stopped by
    the grammar, not cut by the cap into JSON that does not parse.
    """
    variants = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool["function"]["name"]},
                "args": _fit_strings(
                    tool["function"].get("parameters") or {"type": "object"}, max_tokens
                ),
            },
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    return {
        "type": "json_schema",
        "json_schema": {"name": "action", "strict": True, "schema": {"anyOf": variants}},
    }


def _fit_strings(parameters: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
    """``parameters`` with the ``maxLength`` of its free strings scaled down so that all its
    strings together cost at most what ``max_tokens`` leaves after
    :data:`REPLY_OVERHEAD_TOKENS`; unchanged when they already fit or there is no cap. A
    patterned string (a duration) keeps its own bound and counts against the budget."""
    fields = parameters.get("properties") or {}
    free: dict[str, int] = {}
    fixed = 0
    for name, spec in fields.items():
        length, patterned = _string_bound(spec)
        if length is not None and patterned:
            fixed += length
        elif length is not None:
            free[name] = length
    if max_tokens is None or not free:
        return parameters
    budget = max(len(free), (max_tokens - REPLY_OVERHEAD_TOKENS) // TOKENS_PER_CHARACTER - fixed)
    total = sum(free.values())
    if total <= budget:
        return parameters
    scaled = {name: max(1, n * budget // total) for name, n in free.items()}
    properties = {
        name: _with_max_length(spec, scaled[name]) if name in scaled else spec
        for name, spec in fields.items()
    }
    return {**parameters, "properties": properties}


def _string_bound(spec: dict[str, Any]) -> tuple[int | None, bool]:
    """The ``maxLength`` of a string field (directly or as one branch of an ``anyOf``; None for
    an enumeration, whose values bound it), and whether a ``pattern`` shapes it."""
    for branch in (spec, *spec.get("anyOf", ())):
        if branch.get("type") == "string" and "enum" not in branch:
            length = branch.get("maxLength")
            if isinstance(length, int):
                return length, "pattern" in branch
    return None, False


def _with_max_length(spec: dict[str, Any], length: int) -> dict[str, Any]:
    if "anyOf" in spec:
        return {**spec, "anyOf": [_with_max_length(b, length) for b in spec["anyOf"]]}
    if spec.get("type") == "string" and "maxLength" in spec:
        return {**spec, "maxLength": min(length, int(spec["maxLength"]))}
    return spec


def system_prompt(mode: Mode) -> str:
    """The fixed system prompt of a mode."""
    return SYSTEM_PROMPT + (JSON_FORMAT if mode == "json" else "")


def observation_text(observation: Mapping[str, Any]) -> str:
    """What the model reads after a call: the observation as compact JSON, minus the echo of the
    tool name (the model knows what it called)."""
    shown = {k: v for k, v in observation.items() if k != "tool"}
    return json.dumps(shown, ensure_ascii=False, separators=(",", ":"))


def decide(mode: Mode, reply: Reply) -> Turn:
    """The action a reply asks for, in either mode."""
    if mode == "tools" and reply.tool_calls:
        first = reply.tool_calls[0]
        ids = tuple(c.id for c in reply.tool_calls)
        try:
            args = json.loads(first.arguments or "{}")
        except json.JSONDecodeError:
            return Turn(f'{{"tool": {json.dumps(first.name)}, "args": {first.arguments}}}', ids)
        if not isinstance(args, dict):
            return Turn(json.dumps({"tool": first.name, "args": args}), ids)
        return Turn({"tool": first.name, "args": args}, ids)
    return Turn(_json_call(reply.text))


def _json_call(text: str) -> Action:
    """The call in a text reply: the whole text as JSON, else the one fenced block; the raw text
    when neither is a well-formed call (the environment then says what is wrong)."""
    candidates = [text.strip()]
    fenced = _FENCE.findall(text)
    if len(fenced) == 1:
        candidates.append(fenced[0].strip())
    for candidate in candidates:
        try:
            parsed = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if (
            isinstance(parsed, dict)
            and isinstance(parsed.get("tool"), str)
            and isinstance(parsed.get("args", {}), dict)
            and set(parsed) <= {"tool", "args"}
        ):
            return {"tool": parsed["tool"], "args": dict(parsed.get("args", {}))}
        return candidate  # JSON, but not a call: the environment names the problem
    return text


def assistant_message(reply: Reply) -> dict[str, Any]:
    """The reply as it goes back into the chat history."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in reply.tool_calls
        ]
    elif not reply.text:
        message["content"] = ""
    return message


def observation_messages(turn: Turn, observation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The messages that answer a turn: one ``tool`` message per tool call (OpenAI requires it),
    or a ``user`` message when the reply called no tool."""
    text = observation_text(observation)
    if not turn.call_ids:
        return [{"role": "user", "content": text}]
    first, *rest = turn.call_ids
    messages = [{"role": "tool", "tool_call_id": first, "content": text}]
    messages += [{"role": "tool", "tool_call_id": i, "content": NOT_EXECUTED} for i in rest]
    return messages
