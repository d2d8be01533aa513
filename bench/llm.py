"""``make bench`` figures of the LLM agent: what one model turn costs on our side.

A minimal OpenAI-compatible server on 127.0.0.1 (in a thread, answering every request with the
same tool call at once) stands in for the provider, so what is measured is the harness, not a
model. Two ways to make the same request, alternating, in this process:

* ``raw``: one ``POST /v1/chat/completions`` with a kept-alive ``http.client`` connection and
  ``json``: the floor of a turn on loopback;
* ``agent_turn``: :meth:`LLMAgent.act` on a real observation through the agent's thin client
  (:class:`~srez_daemon.agent.model_client.HTTPModelClient`: plain HTTP, our adapter, accounting
  and notes): what a turn of the agent costs;
* ``litellm_turn``: the same turn through the former litellm binding
  (:mod:`bench.litellm_client`), for comparison.

The ratio ``agent_turn / raw`` is the figure; ``litellm_import_s`` is the one-off
``import litellm`` an agent process paid before the thin agents (now only the host's relay does).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import statistics
import threading
import time
from typing import Any

from aiohttp import web

REPLY: dict[str, Any] = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "bench",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_alerts", "arguments": "{}"},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
}


class _Provider:
    """The stand-in provider: an aiohttp app on its own loop in a daemon thread."""

    def __init__(self) -> None:
        self.port = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> _Provider:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        body = json.dumps(REPLY).encode()

        async def chat(request: web.Request) -> web.Response:
            await request.read()
            return web.Response(body=body, content_type="application/json")

        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())
        self._loop.close()


def llm_figures(turns: int = 60) -> dict[str, Any]:
    """Per-turn cost of the LLM agent against a stand-in provider, beside the raw request."""
    from bench.litellm_client import LiteLLMClient, close_cached_clients
    from srez_daemon.agent.model_client import HTTPModelClient
    from srez_env.agents.llm import LLMAgent, LLMSettings
    from srez_env.env import SREEnv
    from srez_env.tasks import load_tasks

    with _Provider() as provider:
        base = f"http://127.0.0.1:{provider.port}/v1"
        env = {
            "SREZ_LLM_API_BASE": base,
            "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.000001",
            "SREZ_LLM_OUTPUT_COST_PER_TOKEN": "0.000002",
        }
        os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
        settings = LLMSettings.from_env({**env, "SREZ_MODEL": "openai/bench"}, spec="llm")
        client = HTTPModelClient(settings)
        heavy = LiteLLMClient(settings)
        started = time.perf_counter()
        heavy._lib()  # the one-off import, timed apart
        import_s = time.perf_counter() - started

        task = load_tasks(["sre-001"])[0]
        prompt = SREEnv(task).reset()
        conn = http.client.HTTPConnection("127.0.0.1", provider.port, timeout=10)
        raw_ms: list[float] = []
        turn_ms: list[float] = []
        litellm_ms: list[float] = []
        request = json.dumps(
            {"model": "bench", "messages": [{"role": "user", "content": prompt["text"]}]}
        )
        for i in range(turns + 5):
            t = time.perf_counter()
            conn.request(
                "POST",
                "/v1/chat/completions",
                body=request,
                headers={"Content-Type": "application/json"},
            )
            conn.getresponse().read()
            raw = 1000 * (time.perf_counter() - t)
            agent = LLMAgent(settings, client)  # a fresh agent: every turn is a first turn
            t = time.perf_counter()
            agent.act(prompt)
            turn = 1000 * (time.perf_counter() - t)
            agent = LLMAgent(settings, heavy)
            t = time.perf_counter()
            agent.act(prompt)
            heavy_turn = 1000 * (time.perf_counter() - t)
            if i >= 5:  # warm-up: connection pools, first-call caches
                raw_ms.append(raw)
                turn_ms.append(turn)
                litellm_ms.append(heavy_turn)
        conn.close()
        close_cached_clients()  # litellm's clients of this provider: closed before it stops
    raw_p50, turn_p50 = statistics.median(raw_ms), statistics.median(turn_ms)
    return {
        "turns": turns,
        "raw_request_p50_ms": round(raw_p50, 3),
        "agent_turn_p50_ms": round(turn_p50, 3),
        "agent_turn_over_raw": round(turn_p50 / raw_p50, 1),
        "litellm_turn_p50_ms": round(statistics.median(litellm_ms), 3),
        "litellm_import_s": round(import_s, 2),
    }


if __name__ == "__main__":
    print(json.dumps(llm_figures(), indent=2))
