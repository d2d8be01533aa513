"""The LLM agent's model client: OpenAI-compatible chat completions over plain HTTP.

``srez-agent`` never imports litellm (``import litellm`` costs about 3 s of CPU and 200 MB per
agent; docs/design.md §13.1). On every backend with a launcher (``local``, ``docker``) the
agent's base URL is the host's model relay (:mod:`srez_client.relay.server`), which holds the one
litellm and the provider keys, prices each reply on the host and says so in the header
``X-Srez-Cost-Usd``. A headless daemon without a launcher (``srez-daemon --task ...``, the image
run by hand) points the agent at any OpenAI-compatible server: ``SREZ_LLM_API_BASE`` (else
``OPENAI_API_BASE`` / ``OPENAI_BASE_URL``, else OpenAI's own endpoint for an ``openai/`` slug)
with ``SREZ_LLM_API_KEY`` (else ``OPENAI_API_KEY``). A provider with its own protocol (Anthropic,
Gemini ...) is reached headless only through such a server (a litellm proxy, OpenRouter, the
relay); the model sent is the slug with an ``openai/`` prefix removed, any other slug as it is.
Without the relay's header a call is priced only from ``SREZ_LLM_INPUT_COST_PER_TOKEN`` /
``SREZ_LLM_OUTPUT_COST_PER_TOKEN`` (which win over the header when set), else its cost is unknown.

One request per :meth:`HTTPModelClient.complete`, with the standard library (``http.client``),
no retry (the policy is :mod:`srez_env.agents.llm_retry`'s), the settings' timeout on connect and
on every read. Failures are classified as litellm classified them (the ``kind`` of a
``provider_error`` entry), by HTTP status:

* 429 is ``rate_limit``, with ``Retry-After`` read from ``retry-after-ms`` or ``retry-after``
  (seconds or an HTTP date);
* 408 and a timeout of our own are ``timeout``;
* 5xx and connection failures are ``server`` (with ``Retry-After`` when sent);
* 401 and 403 are ``auth``, not retried; so is any failure whose message says no key was sent
  (litellm on the relay reports a missing OpenAI key as a 500 ``Missing credentials``);
* a 4xx that says the model's context window is exhausted or its content filter refused
  (:func:`srez_env.agents.failures.model_limit_reason`: the code or type the relay, OpenAI or
  llama.cpp name, else the words of the message) is ``model_limit``, not retried: the episode
  ends there and is graded as the agent's result;
* 409 is ``other``, retried; every other 4xx (bad request, unknown model) is ``other``, not
  retried: time will not change the answer.
"""

from __future__ import annotations

import http.client
import json
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Final, NamedTuple
from urllib.parse import urlsplit

from srez_daemon.protocol import stream
from srez_daemon.protocol.agent import ATTEMPT_HEADER, COST_HEADER
from srez_daemon.protocol.stream import StreamBroken
from srez_env.agents.failures import CONTENT_FILTER, model_limit_reason
from srez_env.agents.llm import LLMConfigError, LLMSettings
from srez_env.agents.llm_adapters import Reply, ToolCallReply
from srez_env.agents.llm_retry import Failure, names_missing_credentials

OPENAI_BASE: Final = "https://api.openai.com/v1"
_MAX_MESSAGE: Final = 1000


class ModelHTTPError(Exception):
    """The server answered a chat completion with an error status."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str],
        codes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.codes = codes
        """The body's ``error.code`` and ``error.type``, when it named them."""


class ModelTimeout(Exception):
    """No answer within the timeout."""


class ModelConnectionError(Exception):
    """The server could not be reached, or answered something that is not a chat completion."""


class ModelFiltered(Exception):
    """The server answered 200, but its content filter withheld the reply
    (``finish_reason: content_filter`` with nothing written): a model limit, like the same
    refusal answered as an error status."""


class Endpoint(NamedTuple):
    """Where the calls go: base URL, key (None: no ``Authorization``) and the model name sent."""

    base_url: str
    model: str
    api_key: str | None = None

    def __repr__(self) -> str:  # never the key
        return f"Endpoint(base_url={self.base_url!r}, model={self.model!r})"

    @classmethod
    def of(cls, settings: LLMSettings, environ: Mapping[str, str]) -> Endpoint:
        """The endpoint the settings name, with the headless fallbacks of the module docstring.

        Raises:
            LLMConfigError: If no base URL is set and the slug is not an ``openai/`` one.
        """
        slug = settings.call_model or settings.model
        base = (
            settings.api_base
            or environ.get("OPENAI_API_BASE", "").strip()
            or environ.get("OPENAI_BASE_URL", "").strip()
        )
        if not base:
            if not slug.startswith("openai/"):
                msg = f"model {slug!r}: srez-agent speaks only OpenAI-compatible HTTP; set SREZ_LLM_API_BASE to such a server (a launcher's backend sets its model relay)"
                raise LLMConfigError(msg)
            base = OPENAI_BASE
        key = settings.api_key or environ.get("OPENAI_API_KEY", "").strip() or None
        return cls(base.rstrip("/"), slug.removeprefix("openai/"), key)


MODEL_SOCKET_VAR: Final = "SREZ_LLM_SOCKET"
"""A unix socket that reaches ``SREZ_LLM_API_BASE``'s server: set by the ``local`` sandbox, whose
built-in model agents have no network and reach their model relay through it alone."""


class _UnixConnection(http.client.HTTPConnection):
    """HTTP to ``host:port`` (its ``Host`` header) carried over the unix socket ``path``."""

    def __init__(self, path: str, host: str, port: int | None, *, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._socket_path = path

    def connect(self) -> None:
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._socket_path)
        self.sock = sock


class HTTPModelClient:
    """A :class:`~srez_env.agents.llm.ModelClient` over ``POST <base>/chat/completions``.

    Args:
        settings: The agent's settings (timeout, sampling, prices).
        environ: Where the headless fallbacks are read (``OPENAI_API_BASE``, ``OPENAI_API_KEY``).
    """

    def __init__(self, settings: LLMSettings, environ: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.endpoint = Endpoint.of(settings, environ or {})
        url = urlsplit(self.endpoint.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            msg = f"SREZ_LLM_API_BASE={self.endpoint.base_url!r} is not an http(s) URL"
            raise LLMConfigError(msg)
        self.attempt = secrets.token_hex(8)
        """This process's attempt id (:data:`~srez_daemon.protocol.agent.ATTEMPT_HEADER`)."""
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port
        self._unix = None if self._https else (environ or {}).get(MODEL_SOCKET_VAR) or None
        """The socket that reaches the model server, in a sandbox with no network of its own."""
        self._path = f"{url.path.rstrip('/')}/chat/completions"

    # ------------------------------------------------------------------ the call

    def body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None = None,
    ) -> bytes:
        """The JSON request of one completion."""
        s = self.settings
        request: dict[str, Any] = {"model": self.endpoint.model, "messages": messages}
        if tools:
            request["tools"] = tools
            request["tool_choice"] = "auto"
        if s.temperature is not None:
            request["temperature"] = s.temperature
        if s.max_tokens is not None:
            request["max_tokens"] = s.max_tokens
        if response_format is not None:
            request["response_format"] = response_format
        if s.stream:
            request["stream"] = True
            request["stream_options"] = {"include_usage": True}
        return json.dumps(request).encode()

    def _connect(self) -> http.client.HTTPConnection:
        """A new connection per call: a model call takes seconds, a loopback connect 0.1 ms, and
        nothing is left open between calls (or when the agent ends)."""
        timeout = self.settings.timeout_s
        if self._https:
            import ssl  # only here: an agent without TLS never loads OpenSSL (agent/__main__.py)

            context = ssl.create_default_context()
            return http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=context
            )
        if self._unix is not None:
            return _UnixConnection(self._unix, self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None = None,
    ) -> Reply:
        """One attempt.

        Raises:
            ModelHTTPError: The server answered an error status.
            ModelTimeout: No answer within the timeout.
            ModelConnectionError: The server was not reached, or its answer is not a completion.
        """
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.endpoint.api_key:
            headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
        payload = self.body(messages, tools, response_format)
        headers["Connection"] = "close"
        headers[ATTEMPT_HEADER] = self.attempt
        conn = self._connect()
        response: http.client.HTTPResponse | None = None
        try:
            conn.request("POST", self._path, body=payload, headers=headers)
            response = conn.getresponse()
            answer = dict(response.getheaders())
            if response.status >= 400:
                message, codes = _error_of(response.read())
                raise ModelHTTPError(response.status, message, answer, codes)
            data = self._read(response, answer)
            reply = self._reply(data, answer)
        except TimeoutError as e:  # socket.timeout is TimeoutError: no byte for timeout_s
            msg = f"no answer from {self.endpoint.base_url} for {self.settings.timeout_s:g} s"
            raise ModelTimeout(msg) from e
        except (OSError, http.client.HTTPException) as e:
            msg = f"cannot reach {self.endpoint.base_url}: {type(e).__name__}: {e}"
            raise ModelConnectionError(msg) from e
        except StreamBroken as e:
            msg = f"{self.endpoint.base_url}: {e}"
            raise ModelConnectionError(msg) from e
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
            msg = f"{self.endpoint.base_url} answered something that is not a chat completion: {e}"
            raise ModelConnectionError(msg) from e
        finally:
            if response is not None:  # a stream left before its end holds the socket's file
                response.close()
            conn.close()
        if reply.finish_reason == CONTENT_FILTER and not (reply.text or reply.tool_calls):
            msg = f"{self.endpoint.base_url}: the content filter withheld the reply"
            raise ModelFiltered(msg)
        return reply

    @staticmethod
    def _read(response: http.client.HTTPResponse, headers: dict[str, str]) -> dict[str, Any]:
        """The completion of a 2xx answer, streamed or whole; a stream's price (the relay's
        last comment) goes into ``headers`` as :data:`COST_HEADER`, where a whole answer has it."""
        kind = response.getheader("Content-Type", "") or ""
        if not kind.startswith("text/event-stream"):
            data: dict[str, Any] = json.loads(response.read())
            return data
        chunks, cost = stream.read(response)
        if cost is not None:
            headers[COST_HEADER] = repr(cost)
        return stream.assemble(chunks)

    def _reply(self, data: dict[str, Any], headers: Mapping[str, str]) -> Reply:
        message = data["choices"][0]["message"]
        calls = tuple(
            ToolCallReply(
                id=str(c.get("id") or f"call_{i}"),
                name=str((c.get("function") or {}).get("name") or ""),
                arguments=_arguments((c.get("function") or {}).get("arguments")),
            )
            for i, c in enumerate(message.get("tool_calls") or [])
        )
        usage = data.get("usage") or {}
        tokens_in = int(usage.get("prompt_tokens") or 0)
        tokens_out = int(usage.get("completion_tokens") or 0)
        reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
        return Reply(
            text=str(message.get("content") or ""),
            reasoning=str(reasoning),
            tool_calls=calls,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=self._cost(headers, tokens_in, tokens_out),
            finish_reason=_text_or_none(data["choices"][0].get("finish_reason")),
        )

    def _cost(self, headers: Mapping[str, str], tokens_in: int, tokens_out: int) -> float | None:
        """The configured prices, else the relay's price of the reply; None when unpriced."""
        s = self.settings
        if s.input_cost_per_token is not None or s.output_cost_per_token is not None:
            return tokens_in * (s.input_cost_per_token or 0.0) + tokens_out * (
                s.output_cost_per_token or 0.0
            )
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            return max(0.0, float(lowered[COST_HEADER.lower()]))
        except (KeyError, ValueError):
            return None

    # ------------------------------------------------------------------ failures

    def classify(self, error: Exception) -> Failure | None:
        """The provider failure ``error`` is, or None when it is not one (it then propagates)."""
        message = f"{type(error).__name__}: {error}"
        if isinstance(error, ModelTimeout):
            return Failure("timeout", message)
        if isinstance(error, ModelFiltered):
            return Failure("model_limit", message, retryable=False, limit=CONTENT_FILTER)
        if isinstance(error, ModelConnectionError):
            if names_missing_credentials(message):
                return Failure("auth", message, retryable=False)
            return Failure("server", message)
        if not isinstance(error, ModelHTTPError):
            return None
        status, wait = error.status, retry_after(error.headers)
        if status in (401, 403) or names_missing_credentials(message):
            return Failure("auth", message, retryable=False)
        if status == 429:
            return Failure("rate_limit", message, wait)
        if status == 408:
            return Failure("timeout", message, wait)
        if status >= 500:
            return Failure("server", message, wait)
        limit = model_limit_reason(status, error.codes, message)
        if limit is not None:
            return Failure("model_limit", message, retryable=False, limit=limit)
        return Failure("other", message, wait, retryable=status == 409)


def _text_or_none(raw: Any) -> str | None:
    return raw if isinstance(raw, str) and raw else None


def _arguments(raw: Any) -> str:
    """A tool call's arguments as the JSON string OpenAI sends (some servers send an object)."""
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else json.dumps(raw)


def _error_of(raw: bytes) -> tuple[str, tuple[str, ...]]:
    """The ``error.message`` of an OpenAI-shaped error body (else the body's start), and its
    ``error.code`` and ``error.type`` when it has them."""
    text = raw.decode("utf-8", "replace")
    codes: tuple[str, ...] = ()
    try:
        data = json.loads(text)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            codes = tuple(str(error[k]) for k in ("code", "type") if error.get(k) is not None)
            if error.get("message"):
                text = str(error["message"])
        elif isinstance(error, str):
            text = error
    except ValueError:
        pass
    return " ".join(text.split())[:_MAX_MESSAGE], codes


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``retry-after`` in seconds or as
    an HTTP date; names in lower case), or None."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
