"""A streamed chat completion (server-sent events), read and put back together (pure; no I/O).

The agent asks for its completions streamed (``SREZ_LLM_STREAM``, on by default) so that its
timeout is an idle one: a slow model on a CPU that is still writing tokens is never cut off by a
total, only a server that goes silent for ``SREZ_LLM_TIMEOUT_S``. What arrives is OpenAI's
stream: ``data: <chunk JSON>`` events, ``data: [DONE]`` at the end, and comment lines, which
carry nothing but the model relay's price of the reply (``: srez-cost-usd <float>``, sent last,
because headers leave before the reply is written). :func:`assemble` makes the chunks the
completion a non-streamed request gets, so everything after the read is the same for both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

DONE: Final = "[DONE]"
COST_COMMENT: Final = "srez-cost-usd"
"""The comment in which the model relay sends the reply's price (it replaces ``X-Srez-Cost-Usd``
in a stream)."""


class StreamBroken(Exception):
    """The stream ended before ``[DONE]``, carried an error event, or is not a stream."""


def events(lines: Iterable[bytes]) -> Iterator[tuple[str, str]]:
    """``("data", payload)`` and ``("comment", text)`` for each event line, in order; other
    fields (``event:``, ``id:``, ``retry:``) and blank lines carry nothing here."""
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("data:"):
            yield "data", line.removeprefix("data:").strip()
        elif line.startswith(":"):
            yield "comment", line.removeprefix(":").strip()


def read(lines: Iterable[bytes]) -> tuple[list[dict[str, Any]], float | None]:
    """The stream's chunks and the relay's price (None when it sent none).

    Raises:
        StreamBroken: the stream ended without ``[DONE]``, or an event was an error or not JSON.
    """
    chunks: list[dict[str, Any]] = []
    cost: float | None = None
    for kind, text in events(lines):
        if kind == "comment":
            word, _, value = text.partition(" ")
            if word == COST_COMMENT:
                try:
                    cost = float(value)
                except ValueError:
                    cost = None
            continue
        if text == DONE:
            return chunks, cost
        try:
            chunk = json.loads(text)
        except ValueError as e:
            msg = f"a stream event is not JSON: {text[:200]!r}"
            raise StreamBroken(msg) from e
        if not isinstance(chunk, dict):
            msg = f"a stream event is not a chunk: {text[:200]!r}"
            raise StreamBroken(msg)
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            msg = f"the stream failed: {str(message)[:500]}"
            raise StreamBroken(msg)
        chunks.append(chunk)
    msg = f"the stream ended after {len(chunks)} chunk(s) without [DONE]"
    raise StreamBroken(msg)


def assemble(chunks: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The chat completion the ``chunks`` of one streamed reply make: the first choice's text,
    reasoning and tool calls (joined by their ``index``), its finish reason and the usage."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Mapping[str, Any] | None = None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            finish = choice.get("finish_reason") or finish
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
            for part in delta.get("tool_calls") or ():
                call = calls.setdefault(
                    int(part.get("index", len(calls))),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = call["id"] or part.get("id") or ""
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if any(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    completion: dict[str, Any] = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        completion["usage"] = dict(usage)
    return completion
