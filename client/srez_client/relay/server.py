"""The host model relay: the LLM agent of every run calls its model through the launcher.

Why (docs/security.md A12, AS7; docs/design.md §13.1): provider keys never enter a run. An
agent is untrusted (in a container it may be root); anything in its environment, its files or
its memory is its to read. And litellm costs about 3 s of CPU and 200 MB per process that imports
it. So on the ``local`` and ``docker`` backends the agent does not call the provider, nor import
litellm; it calls this relay, an OpenAI-compatible server in the process that launched the run
(``srez run``, ``srez eval``, the managed runner), which makes the real call with its one litellm,
with the host's credentials as litellm reads them from the host's environment.

The contract, per run (:meth:`ModelRelay.register`):

* The run gets a **scoped token**: 32 random bytes, URL-safe. It differs in kind from the
  daemon's token (docs/design.md §4), which grants exec and a root pty and therefore never enters an
  environment variable: the relay token grants only chat completions *for that run's model*, only
  from this relay, only until the run is finished, stopped or removed (:meth:`ModelRelay.revoke`).
  So it may sit in the container's environment, where the agent must read it: its theft by the
  agent gains the agent nothing it does not already have.
* The agent calls ``POST /v1/chat/completions`` with ``Authorization: Bearer <token>``. The
  relay compares the token in constant time (:func:`hmac.compare_digest` against every
  registered token), then calls ``litellm.acompletion(model=<the run's real slug>, ...)`` with
  the whitelisted parameters of the body (:mod:`srez_client.relay.wire`), ``num_retries=0`` and
  ``max_retries=0``, and the run's real ``api_base`` when one was registered (a local server).
  The ``model`` of the body is ignored: the token decides.
* The answer is the provider's reply in OpenAI format, usage included, with ``model`` set to the
  run's real slug and the same slug in the header ``X-Srez-Model``. The relay prices it: litellm's
  ``cost_per_token`` for the real slug and the reply's usage, sent as ``X-Srez-Cost-Usd``
  (:data:`~srez_daemon.protocol.agent.COST_HEADER`; absent for an unpriced model), because the
  agent has no litellm and no price list; the agent's ``SREZ_LLM_INPUT_COST_PER_TOKEN`` /
  ``..._OUTPUT_...`` still win over it.
* A request with ``"stream": true`` (the agent's default) is answered as a stream of
  server-sent events as the provider writes it (:meth:`ModelRelay._stream`), so the agent's
  timeout is an idle one end to end; its price comes as the stream's last comment instead of the
  header, and a provider failing mid-stream as an ``error`` event.
* A new attempt of a run (the ``ray`` backend runs a task again when its node is lost) replays
  its deterministic episode: its requests are the lost attempt's. The relay keeps each answered
  request's replies, in order, under a digest of the forwarded parameters, and answers another
  attempt's n-th asking of a request with the n-th reply kept for it, with ``X-Srez-Replayed: 1``
  and no provider call; past what was kept it calls the provider. An attempt is named by the
  agent's ``X-Srez-Attempt`` header (:data:`~srez_daemon.protocol.agent.ATTEMPT_HEADER`, random
  per agent process; a request without it is an attempt of its own, the one without a name). So
  an attempt is never answered from its own replies: an agent that asks the same request twice on
  purpose (to sample it again) gets two calls. Once a newer attempt has called, an older one is
  refused (403 ``attempt_superseded``): a node given up for lost may still be running, and its
  calls would be paid for nothing. Failures are not kept; a run keeps at most
  :data:`MAX_REPLIES`.
* A provider failure is answered with the provider's HTTP status and its ``Retry-After`` /
  ``retry-after-ms`` headers, so the agent's own retry and cooldown policy
  (:mod:`srez_env.agents.llm_retry`) works unchanged. **The relay never retries.** Its own
  refusals are one-line JSON errors: 401 (no such token, or revoked), 400 (not a chat request),
  413 (body over 8 MiB), 404/405. A client that disconnects cancels the provider call.

Where it listens: on the address the runs reach the host by, on a free port; never ``0.0.0.0``:
``127.0.0.1`` for ``local``; for ``docker`` the bridge's gateway
(:func:`srez_client.backends.docker.model_settings.bridge_gateway`), to which other hosts do not
route; other containers on the bridge (or processes of this host) reach the port but hold no
token of theirs.

Lifetime: one relay per launcher (:class:`srez_client.relay.runs.RunModels`), started with the
first LLM run it launches and closed with the launcher. It serves from its own thread and event
loop, so it outlives any one ``asyncio.run`` of its owner and a synchronous ``close`` can end it.
litellm is imported on the first request, never before (``import litellm`` costs about 3 s and
200 MB), with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first (no network at import) and
``litellm.suppress_debug_info``. If the launching process dies, its runs' agents lose their model
(they see connection errors, retry, and end with ``error_kind: provider``).

Logs name the run, the model, the status and the time of each call; never a token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Final, NamedTuple

import orjson
from aiohttp import web

from srez_client.relay.wire import (
    RelayAnswer,
    RelayRequestError,
    error_response,
    forwarded_params,
    host_secret_values,
    provider_failure,
    redact,
)
from srez_daemon.protocol.agent import ATTEMPT_HEADER, ATTEMPT_PATTERN, COST_HEADER
from srez_daemon.protocol.stream import COST_COMMENT, DONE, assemble

logger = logging.getLogger(__name__)

MAX_BODY: Final = 8 << 20
"""Largest request body (a long chat with tool results stays well below it)."""
DEFAULT_TIMEOUT_S: Final = 600.0
"""Provider call timeout when a run registers none."""
MODEL_HEADER: Final = "X-Srez-Model"
"""Response header naming the run's real model slug."""
REPLAYED_HEADER: Final = "X-Srez-Replayed"
"""Response header of a reply the run was sent before and is sent again without a call."""
MAX_REPLIES: Final = 512
"""Replies kept per run: an episode makes at most some tens of calls."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RelayGrant(NamedTuple):
    """What a container needs to reach the relay: its base URL and the run's scoped token."""

    base_url: str
    token: str

    def __repr__(self) -> str:  # a grant in a log line must not carry the token
        return f"RelayGrant(base_url={self.base_url!r}, token=<redacted>)"


@dataclass(frozen=True, slots=True)
class _Route:
    run_id: str
    model: str
    api_base: str | None
    api_key: str | None = field(repr=False)
    timeout_s: float
    token: bytes = field(repr=False)
    replies: dict[bytes, list[tuple[bytes, dict[str, str]]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    """The run's answered requests (a digest of the forwarded parameters -> the bodies and
    headers sent, in order), for another attempt that asks them again
    (:meth:`ModelRelay._completions`)."""
    asked: Counter[tuple[str, bytes]] = field(default_factory=Counter, repr=False, compare=False)
    """How often each attempt has been answered each request, replayed or called."""
    attempts: list[str] = field(default_factory=list, repr=False, compare=False)
    """The run's named attempts, in the order they first called; the last is the current one."""

    def kept(self) -> int:
        return sum(map(len, self.replies.values()))


def _attempt(request: web.Request) -> str:
    """The request's attempt id (:data:`ATTEMPT_HEADER`), "" when it names none."""
    attempt = request.headers.get(ATTEMPT_HEADER, "")
    if attempt and not re.fullmatch(ATTEMPT_PATTERN, attempt):
        why = f"{ATTEMPT_HEADER} must be 8 to 64 lowercase hex digits"
        raise RelayRequestError(400, "bad_attempt", why)
    return attempt


def _check_current(route: _Route, attempt: str) -> None:
    """Admits the run's newest attempt; an older one is refused for good: its node was given up
    (a lost ray node whose processes still run, a partition), and its calls would be paid for a
    run that is being played again elsewhere."""
    if not attempt:
        return
    if attempt not in route.attempts:
        route.attempts.append(attempt)
    elif attempt != route.attempts[-1]:
        why = "a newer attempt of this run has started: this one may not call the model any more"
        raise RelayRequestError(403, "attempt_superseded", why)


def _answer(answer: RelayAnswer) -> web.Response:
    return web.Response(
        status=answer.status,
        body=answer.body,
        content_type="application/json",
        headers=answer.headers,
    )


class ModelRelay:
    """An OpenAI-compatible relay to the host's model providers; see the module docstring.

    Args:
        host: Address to listen on (the Docker bridge gateway; ``127.0.0.1`` in tests).
        port: Port to listen on; 0 picks a free one.
        max_body: Largest request body in bytes (413 above it).
        environ: The host environment whose credential values are redacted from error messages
            (default ``os.environ`` at start).
    """

    def __init__(
        self,
        host: str,
        port: int = 0,
        *,
        max_body: int = MAX_BODY,
        environ: dict[str, str] | None = None,
    ) -> None:
        if host in ("", "0.0.0.0", "::"):  # every interface: refused
            msg = f"the model relay must listen on one address, not {host!r}"
            raise ValueError(msg)
        self.host = host
        self.port = port
        self.max_body = max_body
        self._environ = environ
        self._routes: dict[str, _Route] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._litellm: ModuleType | None = None
        self._import_lock: asyncio.Lock | None = None
        self._secrets: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ runs

    @property
    def base_url(self) -> str:
        """``http://<host>:<port>/v1``, the ``api_base`` an agent is given."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        """Whether it serves."""
        return self._thread is not None

    def register(
        self,
        run_id: str,
        model: str,
        api_base: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float | None = None,
    ) -> RelayGrant:
        """A new scoped token for ``run_id``, routed to ``model`` (a litellm slug) at ``api_base``
        (None: the provider's own endpoint) with ``api_key`` (None: the provider's variable in the
        host's environment, as litellm reads it) and a call timeout (default 600 s). A run
        registered again gets a new token; the old one stops working.

        Raises:
            RuntimeError: If the relay is not serving.
        """
        if not self.running:
            msg = "the model relay is not serving: call start() first"
            raise RuntimeError(msg)
        token = secrets.token_urlsafe(32)
        timeout = timeout_s or DEFAULT_TIMEOUT_S
        route = _Route(run_id, model, api_base, api_key, timeout, token.encode())
        with self._lock:
            self._routes[run_id] = route
        logger.info("relay: run %s may call %s", run_id, model)
        return RelayGrant(self.base_url, token)

    def revoke(self, run_id: str) -> None:
        """The run's token stops working (idempotent; calls in flight finish)."""
        with self._lock:
            gone = self._routes.pop(run_id, None)
        if gone is not None:
            logger.info("relay: run %s revoked", run_id)

    def _route(self, request: web.Request) -> _Route | None:
        """The run whose token the request carries; every token is compared, in constant time."""
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        presented = given.strip().encode()
        with self._lock:
            routes = list(self._routes.values())
        found = None
        for route in routes:  # no early exit: the time does not say which token came close
            if hmac.compare_digest(presented, route.token):
                found = route
        return found

    # ------------------------------------------------------------------ serving

    async def start(self) -> None:
        """Serve from a thread of its own; returns once it listens (idempotent).

        Raises:
            OSError: If the address cannot be bound (not on this host, port taken).
        """
        await asyncio.to_thread(self.start_blocking)

    def start_blocking(self) -> None:
        """:meth:`start` for synchronous callers."""
        if self._thread is not None:
            return
        self._secrets = host_secret_values(
            self._environ if self._environ is not None else dict(os.environ)
        )
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as e:  # the bind failed: reported to the caller below
                failure.append(e)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        thread = threading.Thread(target=run, name="srez-model-relay", daemon=True)
        thread.start()
        ready.wait()
        if failure:
            thread.join()
            raise failure[0]
        self._loop, self._thread = loop, thread
        logger.info("relay: serving on %s", self.base_url)

    async def _serve(self) -> None:
        app = web.Application(client_max_size=self.max_body, middlewares=[self._errors])
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        self._import_lock = asyncio.Lock()

    async def close(self) -> None:
        """Stop serving and forget every token (idempotent)."""
        await asyncio.to_thread(self.close_blocking)

    def close_blocking(self) -> None:
        """:meth:`close` for synchronous callers (``DockerBackend.close``)."""
        loop, thread, runner = self._loop, self._thread, self._runner
        with self._lock:
            self._routes.clear()
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            if runner is not None:
                await runner.cleanup()
            if self._litellm is not None:
                await _close_loop_clients(self._litellm)
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:  # litellm's logging worker and the like
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            self._loop = self._thread = self._runner = None
        logger.info("relay: closed")

    # ------------------------------------------------------------------ handlers

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every refusal as one line of JSON; an unexpected error as a bare 500 (logged here)."""
        try:
            return await handler(request)
        except RelayRequestError as e:
            return _answer(e.answer)
        except web.HTTPRequestEntityTooLarge:
            why = f"the body is over {self.max_body >> 20} MiB"
            return _answer(error_response(413, "body_too_large", why))
        except web.HTTPException as e:
            return _answer(error_response(e.status, "http_error", e.reason))
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("relay: %s %s failed", request.method, request.path)
            return _answer(error_response(500, "relay_error", "the relay failed; see its log"))

    def _authorized(self, request: web.Request) -> _Route:
        route = self._route(request)
        if route is None:
            logger.warning("relay: refused a request from %s (no such token)", request.remote)
            msg = "no such relay token (or the run is over)"
            raise RelayRequestError(401, "invalid_relay_token", msg)
        return route

    async def _models(self, request: web.Request) -> web.Response:
        route = self._authorized(request)
        entry = {"id": route.model, "object": "model", "created": 0, "owned_by": "srez-relay"}
        return web.Response(
            body=_dumps({"object": "list", "data": [entry]}), content_type="application/json"
        )

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        route = self._authorized(request)  # before the body is read: no token, no upload
        if (request.content_length or 0) > self.max_body:
            raise web.HTTPRequestEntityTooLarge(
                max_size=self.max_body, actual_size=request.content_length or 0
            )
        attempt = _attempt(request)
        _check_current(route, attempt)
        params = forwarded_params(await request.read())
        key = hashlib.sha256(orjson.dumps(params, option=orjson.OPT_SORT_KEYS)).digest()
        kept = route.replies.get(key, [])
        nth = route.asked[attempt, key]
        # an attempt's own replies sit below its count (each was kept at the count it had then):
        # it is only ever answered from another attempt's
        if nth < len(kept):
            route.asked[attempt, key] += 1
            logger.info("relay: run %s: a reply replayed, no call", route.run_id)
            body, headers = kept[nth]
            # whole, even to a request that asked for a stream: the agent reads either
            return web.Response(
                body=body,
                content_type="application/json",
                headers={**headers, REPLAYED_HEADER: "1"},
            )
        litellm = await self._lib()
        started = time.monotonic()
        kwargs: dict[str, Any] = {
            **params,
            "model": route.model,
            "num_retries": 0,
            "max_retries": 0,
            "timeout": route.timeout_s,
        }
        if params.get("stream"):
            kwargs["stream_options"] = {"include_usage": True}  # the relay prices every reply
        if route.api_base:
            kwargs["api_base"] = route.api_base
        if route.api_key:
            kwargs["api_key"] = route.api_key
        hidden = self._secrets | {route.api_key} if route.api_key else self._secrets
        try:
            response = await litellm.acompletion(**kwargs)
        except asyncio.CancelledError:
            logger.info("relay: run %s: the agent hung up; call cancelled", route.run_id)
            raise
        except Exception as e:
            answer = provider_failure(e, hidden) or self._unmapped(e, hidden, litellm)
            self._log_call(route, answer.status, started, type(e).__name__)
            return _answer(answer)
        if params.get("stream"):
            return await self._stream(request, route, response, (attempt, key), started, hidden)
        body = response.model_dump()
        body["model"] = route.model
        headers = {MODEL_HEADER: route.model}
        cost = _price(litellm, route.model, body.get("usage"))
        if cost is not None:
            headers[COST_HEADER] = repr(cost)
        self._log_call(route, 200, started)
        sent = _dumps(body)
        self._keep(route, attempt, key, sent, headers)
        return web.Response(body=sent, content_type="application/json", headers=headers)

    async def _stream(
        self,
        request: web.Request,
        route: _Route,
        chunks: Any,
        asked: tuple[str, bytes],
        started: float,
        hidden: frozenset[str],
    ) -> web.StreamResponse:
        """Passes a streamed reply on as it comes (server-sent events), so the agent's timeout
        stays an idle one end to end; its price goes last, as the comment of
        :data:`~srez_daemon.protocol.stream.COST_COMMENT` (headers leave before the price is
        known). A provider failure once the stream has begun is an ``error`` event, and the
        stream ends without ``[DONE]``. The whole reply is kept for another attempt."""
        litellm = await self._lib()
        answer = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                MODEL_HEADER: route.model,
            }
        )
        await answer.prepare(request)
        received: list[dict[str, Any]] = []
        # the provider's HTTP response under litellm's wrapper, which drops it on a failure
        provider = getattr(getattr(chunks, "completion_stream", None), "response", None)
        try:
            async for chunk in chunks:
                event = chunk.model_dump()
                event["model"] = route.model
                received.append(event)
                await answer.write(b"data: " + _dumps(event) + b"\n\n")
        except asyncio.CancelledError:
            logger.info("relay: run %s: the agent hung up; stream cancelled", route.run_id)
            raise
        except Exception as e:
            failed = provider_failure(e, hidden) or self._unmapped(e, hidden, litellm)
            self._log_call(route, failed.status, started, f"{type(e).__name__} mid-stream")
            await answer.write(b"data: " + failed.body + b"\n\n")
            await answer.write_eof()
            return answer
        finally:  # a stream left early (a failure, the agent gone) still frees its connection
            for closable in (chunks, provider):
                if closable is not None:
                    with contextlib.suppress(Exception):
                        await closable.aclose()
        whole = assemble(received)
        whole["model"] = route.model
        headers = {MODEL_HEADER: route.model}
        cost = _price(litellm, route.model, whole.get("usage"))
        if cost is not None:
            headers[COST_HEADER] = repr(cost)
            await answer.write(f": {COST_COMMENT} {cost!r}\n\n".encode())
        await answer.write(f"data: {DONE}\n\n".encode())
        await answer.write_eof()
        self._log_call(route, 200, started, "streamed")
        self._keep(route, *asked, _dumps(whole), headers)
        return answer

    @staticmethod
    def _keep(
        route: _Route, attempt: str, key: bytes, sent: bytes, headers: dict[str, str]
    ) -> None:
        route.asked[attempt, key] += 1
        if route.kept() < MAX_REPLIES:
            route.replies.setdefault(key, []).append((sent, headers))

    @staticmethod
    def _log_call(route: _Route, status: int, started: float, how: str = "") -> None:
        logger.info(
            "relay: run %s %s -> %d%s in %.0f ms",
            route.run_id,
            route.model,
            status,
            f" ({how})" if how else "",
            (time.monotonic() - started) * 1000,
        )

    def _unmapped(
        self, error: Exception, hidden: frozenset[str], litellm: ModuleType
    ) -> RelayAnswer:
        """A litellm/openai error without an HTTP status is a 502 (the provider could not be
        reached or answered nonsense); anything else is the relay's own bug and propagates."""
        if isinstance(error, litellm.exceptions.OpenAIError):
            message = redact(f"{type(error).__name__}: {error}", hidden)
            return error_response(502, "provider_unreachable", message, kind="provider_error")
        raise error

    async def _lib(self) -> ModuleType:
        """litellm, imported on first use in a worker thread (3 s: never on the loop)."""
        if self._litellm is None:
            assert self._import_lock is not None
            async with self._import_lock:
                if self._litellm is None:
                    self._litellm = await asyncio.to_thread(_import_litellm)
        return self._litellm


def _import_litellm() -> ModuleType:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network at import
    import litellm

    litellm.suppress_debug_info = True  # else it prints to stdout on errors
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)  # per-call INFO lines, loop warnings
    return litellm


def _price(litellm: ModuleType, model: str, usage: Any) -> float | None:
    """What a reply with ``usage`` cost at ``model``'s list price; None when it is not priced."""
    if not isinstance(usage, dict):
        return None
    try:
        cost_in, cost_out = litellm.cost_per_token(
            model=model,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )
        return float(cost_in) + float(cost_out)
    except Exception:  # ModelNotMappedError and kin: an unpriced model
        return None


async def _close_loop_clients(litellm: ModuleType) -> None:
    """Closes the async openai SDK clients litellm cached for the running loop, and forgets them.

    litellm keeps one per loop, key and base URL, with its pooled connections to the provider:
    the relay's loop ends at its close, but the clients would stay in litellm's cache, and their
    sockets open, until the process exits (collected unclosed then).
    """
    import openai

    cache = litellm.in_memory_llm_clients_cache
    this_loop = cache.update_cache_key_with_event_loop("")  # "-<token of the running loop>"
    for key, client in list(cache.cache_dict.items()):
        if isinstance(client, openai.AsyncOpenAI) and key.endswith(this_loop):
            await client.close()
            cache.delete_cache(key)


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=str)
