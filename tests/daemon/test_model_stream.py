"""Reading a streamed chat completion back into one (srez_daemon.protocol.stream): the logic
alone; tests/daemon/test_model_client.py streams over real HTTP."""

from __future__ import annotations

import json

import pytest

from fakes.openai_server import chunks_of, text, tool_call
from srez_daemon.protocol.stream import StreamBroken, assemble, read


def lines(*events: str) -> list[bytes]:
    return [f"{e}\n".encode() for event in events for e in (event, "")]


def sse(completion: dict[str, object]) -> list[bytes]:
    chunks = chunks_of(completion, include_usage=True)  # type: ignore[arg-type]
    return lines(*(f"data: {json.dumps(c)}" for c in chunks), "data: [DONE]")


@pytest.mark.parametrize(
    "scripted",
    [
        tool_call("get_logs", {"service": "db", "grep": "timeout"}, reasoning="why", usage=(7, 3)),
        tool_call("a", {"x": 1}, more=(("b", '{"broken"'),)),
        text("a reply longer than one chunk of eight characters", usage=(11, 9)),
        text("", finish="length"),
    ],
)
def test_the_chunks_of_a_reply_make_the_reply_again(scripted: object) -> None:
    whole = scripted.body  # type: ignore[attr-defined]
    chunks, cost = read(sse(whole))
    again = assemble(chunks)
    message, rebuilt = whole["choices"][0]["message"], again["choices"][0]["message"]
    assert rebuilt.get("content") == (message.get("content") or None)
    assert rebuilt.get("reasoning_content") == message.get("reasoning_content")
    assert rebuilt.get("tool_calls") == message.get("tool_calls")
    assert again["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert again["usage"] == whole["usage"] and cost is None


def test_the_relays_price_comes_as_a_comment_and_other_fields_carry_nothing() -> None:
    chunks, cost = read(
        lines(
            "event: message",
            "id: 7",
            ": keep-alive",
            "data: {}",
            ": srez-cost-usd 0.25",
            "data: [DONE]",
        )
    )
    assert (chunks, cost) == ([{}], 0.25)


@pytest.mark.parametrize(
    ("events", "why"),
    [
        (("data: {}",), "without \\[DONE\\]"),
        (('data: {"error": {"message": "provider fell over"}}', "data: [DONE]"), "provider fell"),
        (("data: {not json",), "not JSON"),
        (("data: [1, 2]",), "not a chunk"),
    ],
)
def test_a_broken_stream_says_how(events: tuple[str, ...], why: str) -> None:
    with pytest.raises(StreamBroken, match=why):
        read(lines(*events))
