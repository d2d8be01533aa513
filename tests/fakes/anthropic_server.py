"""A scripted Anthropic Messages API (``POST /v1/messages``, not streamed) on 127.0.0.1, for
running a client that speaks Anthropic's protocol (Inspect's ``anthropic/...`` models) offline.

It is :class:`fakes.openai_server.FakeOpenAI` on another route, so scripting, recording and the
lifecycle are the same; replies are built with :func:`tool_use` and :func:`text`. Every reply
carries its ``usage``. Clients must not ask for a stream (Inspect: ``-M streaming=false``, and a
``--max-tokens`` small enough for the SDK to allow a plain request).

Usage::

    with FakeAnthropic() as server:
        server.push(tool_use("get_alerts", {}), text("done"))
        env = {"ANTHROPIC_BASE_URL": server.root_url, "ANTHROPIC_API_KEY": "sk-fake"}
"""

from __future__ import annotations

import itertools
from typing import Any

from fakes.openai_server import FakeOpenAI, Scripted

_IDS = itertools.count(1)


def _message(content: list[dict[str, Any]], stop: str, usage: tuple[int, int]) -> Scripted:
    n = next(_IDS)
    return Scripted(
        body={
            "id": f"msg_fake_{n}",
            "type": "message",
            "role": "assistant",
            "model": "fake",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
    )


def tool_use(name: str, args: dict[str, Any], *, usage: tuple[int, int] = (100, 20)) -> Scripted:
    """A reply calling one tool."""
    block = {"type": "tool_use", "id": f"toolu_fake_{next(_IDS)}", "name": name, "input": args}
    return _message([block], "tool_use", usage)


def text(content: str, *, usage: tuple[int, int] = (100, 20)) -> Scripted:
    """A reply with text only."""
    return _message([{"type": "text", "text": content}], "end_turn", usage)


class FakeAnthropic(FakeOpenAI):
    """The server; :attr:`root_url` is what ``ANTHROPIC_BASE_URL`` takes."""

    ROUTES = ("/v1/messages",)

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>`` (the SDK adds ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"
