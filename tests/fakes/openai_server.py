"""A scripted, OpenAI-compatible chat server for tests: ``POST /v1/chat/completions`` on 127.0.0.1.

Real HTTP, so the code under test (litellm, the openai SDK, an agent in a subprocess) runs its
real path. The server lives in a background thread with its own event loop, so a sync test can
use it as well as an async one, and a subprocess can reach it by URL.

Usage::

    with FakeOpenAI() as server:                    # or the ``fake_openai`` fixture
        server.push(tool_call("get_alerts", {}), text("done"), error(429, retry_after=1))
        env = {"SREZ_LLM_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-fake"}
        ...                                         # model "openai/<anything>"
        assert server.requests[0].tools             # what the client sent, in order

Each request takes the next scripted reply from the queue; when the queue is empty the server
answers with ``when_empty`` (by default HTTP 400 ``script exhausted``, which a client does not
retry, so a test that under-scripts fails loudly rather than hanging). Replies:

* :func:`tool_call` — one (or, with ``more``, several) tool calls; ``args`` may be a dict or a
  raw string (malformed JSON arguments);
* :func:`text` — a plain assistant message (JSON-text agents reply this way), with optional
  ``reasoning`` (returned as ``reasoning_content``);
* :func:`error` — an HTTP error status with an OpenAI error body, optionally ``Retry-After``;
* any reply with ``delay_s`` — the server waits that long before answering (client timeouts);
* a request that asks ``stream: true`` gets a 200 reply as server-sent chunks
  (:func:`chunks_of`); ``.streamed(gap_s=..., cut_after=...)`` makes it a slow stream or one
  cut before its end.

Every reply carries ``usage`` (``prompt_tokens``/``completion_tokens``, default 100/20).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
from aiohttp import web
from bench.litellm_client import close_cached_clients


@dataclass(frozen=True, slots=True)
class Scripted:
    """One scripted answer: an HTTP status, a JSON body, extra headers and a delay."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    gap_s: float = 0.0
    """Streamed: the pause before each chunk after the first (a slow model writing tokens)."""
    cut_after: int | None = None
    """Streamed: the connection is closed after this many chunks, without ``[DONE]``."""

    def after(self, delay_s: float) -> Scripted:
        """The same answer, sent ``delay_s`` seconds after the request arrives."""
        return replace(self, delay_s=delay_s)

    def streamed(self, *, gap_s: float = 0.0, cut_after: int | None = None) -> Scripted:
        """The same answer, its chunks ``gap_s`` apart when streamed, cut after ``cut_after``."""
        return replace(self, gap_s=gap_s, cut_after=cut_after)


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request the server received."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    body: dict[str, Any]
    headers: dict[str, str]
    at: float
    """``time.monotonic()`` when it arrived."""


_ids = itertools.count(1)


def _completion(message: dict[str, Any], finish: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{next(_ids)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


def chunks_of(completion: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The chunks a server streams ``completion`` in: the role, the reasoning, the text eight
    characters at a time, each tool call's name then its arguments in two halves, the finish
    reason, and the usage when asked for."""
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        one = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [one]}

    out = [chunk({"role": "assistant"})]
    if message.get("reasoning_content"):
        out.append(chunk({"reasoning_content": message["reasoning_content"]}))
    content = message.get("content") or ""
    out += [chunk({"content": content[i : i + 8]}) for i in range(0, len(content), 8)]
    for index, call in enumerate(message.get("tool_calls") or []):
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        head = {"index": index, "id": call["id"], "type": "function"}
        out.append(chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}))
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
    out.append(chunk({}, choice.get("finish_reason") or "stop"))
    if include_usage and completion.get("usage"):
        out.append(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": completion["usage"],
            }
        )
    return out


def tool_call(
    name: str,
    args: dict[str, Any] | str | None = None,
    *,
    text: str = "",
    reasoning: str = "",
    more: tuple[tuple[str, dict[str, Any] | str], ...] = (),
    usage: tuple[int, int] = (100, 20),
) -> Scripted:
    """A reply calling ``name`` with ``args`` (a dict, or a raw arguments string)."""
    calls = []
    for call_name, call_args in [(name, args or {}), *more]:
        arguments = call_args if isinstance(call_args, str) else orjson.dumps(call_args).decode()
        calls.append(
            {
                "id": f"call_{next(_ids)}",
                "type": "function",
                "function": {"name": call_name, "arguments": arguments},
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "tool_calls": calls}
    if reasoning:
        message["reasoning_content"] = reasoning
    return Scripted(body=_completion(message, "tool_calls", usage))


def text(
    content: str,
    *,
    reasoning: str = "",
    usage: tuple[int, int] = (100, 20),
    finish: str = "stop",
) -> Scripted:
    """A plain assistant message; ``finish`` is its ``finish_reason`` (``length``: cut by the
    cap, ``content_filter``: withheld)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    return Scripted(body=_completion(message, finish, usage))


def error(
    status: int,
    message: str = "",
    *,
    retry_after: float | str | None = None,
    code: str | None = None,
) -> Scripted:
    """An HTTP error with an OpenAI error body (``code`` as OpenAI names it, e.g.
    ``context_length_exceeded``); ``Retry-After`` when given."""
    kinds = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
    body = {
        "error": {
            "message": message or f"fake error {status}",
            "type": "server_error" if status >= 500 else "invalid_request_error",
            "code": code or kinds.get(status, str(status)),
        }
    }
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return Scripted(status=status, body=body, headers=headers)


class FakeOpenAI:
    """The server; start it with ``with`` (or :meth:`start`), script it with :meth:`push`."""

    ROUTES: tuple[str, ...] = ("/v1/chat/completions", "/chat/completions")
    """The paths answered (a subclass speaking another provider's protocol names its own)."""

    def __init__(self, when_empty: Scripted | None = None) -> None:
        self.when_empty = when_empty or error(400, "fake server: script exhausted")
        self.requests: list[Recorded] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ------------------------------------------------------------------ script
    @property
    def base_url(self) -> str:
        """The ``api_base`` to give a client (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *replies: Scripted) -> None:
        """Queue replies, answered in order."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget the script and the recorded requests (between tests sharing a server)."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    # ------------------------------------------------------------------ serving
    async def _handle(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        with self._lock:
            self.requests.append(
                Recorded(
                    model=str(body.get("model", "")),
                    messages=list(body.get("messages", [])),
                    tools=body.get("tools"),
                    body=body,
                    headers=dict(request.headers),
                    at=time.monotonic(),
                )
            )
            reply = self._queue.popleft() if self._queue else self.when_empty
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if body.get("stream") and reply.status == 200 and "choices" in reply.body:
            return await self._stream(request, reply, body)
        return web.Response(
            status=reply.status,
            body=orjson.dumps(reply.body),
            content_type="application/json",
            headers=reply.headers,
        )

    async def _stream(
        self, request: web.Request, reply: Scripted, asked: dict[str, Any]
    ) -> web.StreamResponse:
        """The scripted completion as OpenAI streams it: server-sent chunks, then ``[DONE]``."""
        answer = web.StreamResponse(headers={"Content-Type": "text/event-stream", **reply.headers})
        await answer.prepare(request)
        include_usage = bool((asked.get("stream_options") or {}).get("include_usage"))
        for n, chunk in enumerate(chunks_of(reply.body, include_usage)):
            if reply.cut_after is not None and n >= reply.cut_after:
                if request.transport is not None:
                    request.transport.close()
                return answer
            if n and reply.gap_s:
                await asyncio.sleep(reply.gap_s)
            await answer.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        await answer.write(b"data: [DONE]\n\n")
        await answer.write_eof()
        return answer

    def start(self) -> FakeOpenAI:
        """Starts serving on a free port; returns once it listens."""
        ready = threading.Event()
        loop = asyncio.new_event_loop()
        self._loop = loop

        async def serve() -> None:
            app = web.Application()
            for route in self.ROUTES:
                app.router.add_post(route, self._handle)
            self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = self._runner.addresses[0][1]

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(serve())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            msg = "the fake OpenAI server did not start"
            raise RuntimeError(msg)
        return self

    def stop(self) -> None:
        """Stops serving (idempotent)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        runner = self._runner

        async def shutdown() -> None:
            if runner is not None:
                await runner.cleanup()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:  # a delayed reply still sleeping, a handler still open
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._loop = self._thread = self._runner = None
        # litellm (in this process) keeps its clients of this server, and their sockets, for
        # reuse: they would otherwise be collected unclosed at interpreter exit
        close_cached_clients()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
