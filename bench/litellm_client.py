"""The LLM agent's former litellm binding, kept for ``make bench`` only: the "before" of the
thin agents (docs/design.md §13.1), measured beside :mod:`srez_daemon.agent.model_client`.

No installed package imports it: ``srez-agent`` speaks plain HTTP to the host's model relay,
which holds the one litellm. litellm is imported on the first call, never at import time
of this module (``import litellm`` costs about 3 s and 200 MB, and without
``LITELLM_LOCAL_MODEL_COST_MAP=True``, set here before the import, it fetches a price list over the
network). Retries are ours (:mod:`srez_env.agents.llm_retry`): litellm is called with
``num_retries=0`` and the openai SDK with ``max_retries=0``, so no wait happens out of sight.

Failure classes (the ``kind`` of a ``provider_error`` entry): ``RateLimitError`` is
``rate_limit`` (with ``Retry-After`` read from ``retry-after-ms`` or ``retry-after``, seconds or
an HTTP date); ``Timeout`` is ``timeout``; 5xx, ``ServiceUnavailable``, ``BadGateway`` and
connection failures are ``server``; ``AuthenticationError`` and ``PermissionDeniedError`` are
``auth`` (no retry), and so is any failure whose message says no key was sent (litellm reports
a missing OpenAI key as a 500); other 4xx answers (bad request, unknown model, context too long) are
``other`` with no retry, since time will not change the answer.
"""

from __future__ import annotations

import logging
import os
import sys
from types import ModuleType
from typing import Any

from srez_daemon.agent.model_client import retry_after as header_retry_after
from srez_env.agents.llm import LLMSettings
from srez_env.agents.llm_adapters import Reply, ToolCallReply
from srez_env.agents.llm_retry import Failure, names_missing_credentials

logger = logging.getLogger(__name__)


class LiteLLMClient:
    """Calls ``litellm.completion`` (sync: the agent process has nothing else to do meanwhile)."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._litellm: ModuleType | None = None

    def _lib(self) -> ModuleType:
        if self._litellm is None:
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network at import
            import litellm

            litellm.suppress_debug_info = True  # else it prints to stdout on errors
            logging.getLogger("LiteLLM").setLevel(logging.WARNING)  # two INFO lines per call
            self._litellm = litellm
        return self._litellm

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None = None,
    ) -> Reply:
        """One attempt; raises litellm's exception on failure."""
        litellm = self._lib()
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.call_model or s.model,
            "messages": messages,
            "timeout": s.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if s.api_key:
            kwargs["api_key"] = s.api_key
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        if response_format is not None:
            kwargs["response_format"] = response_format
        if s.temperature is not None:
            kwargs["temperature"] = s.temperature
        if s.max_tokens is not None:
            kwargs["max_tokens"] = s.max_tokens
        response = litellm.completion(**kwargs)
        return self._reply(response)

    def _reply(self, response: Any) -> Reply:
        message = response.choices[0].message
        calls = tuple(
            ToolCallReply(
                id=str(c.id or f"call_{i}"),
                name=str(c.function.name or ""),
                arguments=str(c.function.arguments or ""),
            )
            for i, c in enumerate(getattr(message, "tool_calls", None) or [])
        )
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        return Reply(
            text=str(message.content or ""),
            reasoning=str(getattr(message, "reasoning_content", None) or ""),
            tool_calls=calls,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=self._cost(response, tokens_in, tokens_out),
        )

    def _cost(self, response: Any, tokens_in: int, tokens_out: int) -> float | None:
        """The call's cost: from the configured prices, else litellm's price list; None when the
        model is not priced (a local model)."""
        s = self.settings
        if s.input_cost_per_token is not None or s.output_cost_per_token is not None:
            return tokens_in * (s.input_cost_per_token or 0.0) + tokens_out * (
                s.output_cost_per_token or 0.0
            )
        try:
            if s.call_model:  # behind the relay: price the real model, not the relay's name
                cost_in, cost_out = self._lib().cost_per_token(
                    model=s.model, prompt_tokens=tokens_in, completion_tokens=tokens_out
                )
                return float(cost_in) + float(cost_out)
            return float(self._lib().completion_cost(completion_response=response))
        except Exception:  # ModelNotMappedError and kin: an unpriced model
            return None

    def classify(self, error: Exception) -> Failure | None:
        """The provider failure ``error`` is, or None when it is not one (it then propagates)."""
        litellm = self._lib()
        message = f"{type(error).__name__}: {error}"
        if isinstance(error, litellm.RateLimitError):
            return Failure("rate_limit", message, retry_after(error))
        if isinstance(error, litellm.Timeout):
            return Failure("timeout", message)
        server = (
            litellm.InternalServerError
            | litellm.ServiceUnavailableError
            | litellm.BadGatewayError
            | litellm.APIConnectionError
        )
        auth = litellm.AuthenticationError | litellm.PermissionDeniedError
        if isinstance(error, auth) or (
            isinstance(error, server | litellm.APIError) and names_missing_credentials(message)
        ):
            return Failure("auth", message, retryable=False)
        if isinstance(error, server):
            return Failure("server", message, retry_after(error))
        if isinstance(error, litellm.APIError):
            status = getattr(error, "status_code", None)
            if isinstance(status, int) and status >= 500:
                return Failure("server", message, retry_after(error))
            retryable = status in (408, 409)
            return Failure("other", message, retry_after(error), retryable=retryable)
        if isinstance(error, litellm.exceptions.OpenAIError):
            return Failure("other", message, retryable=False)
        return None


def close_cached_clients() -> int:
    """Closes the synchronous openai SDK clients litellm keeps for reuse, and forgets them; the
    number closed (0 when litellm was never imported).

    litellm caches one client per key, base URL and timeout, with its pooled connections, until
    its TTL runs out or the process ends. A process that outlives its provider (a test session
    or a bench, against a fake server: ``srez explain`` calls litellm in process) would otherwise hold those
    sockets until exit, where they are collected unclosed (a ``ResourceWarning`` no test sees).
    """
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return 0
    import openai

    cache = litellm.in_memory_llm_clients_cache
    closed = 0
    for key, client in list(cache.cache_dict.items()):
        if isinstance(client, openai.OpenAI):
            client.close()
            cache.delete_cache(key)
            closed += 1
    return closed


def retry_after(error: Exception) -> float | None:
    """Seconds the provider asked to wait, read from the error's response headers as the thin
    client reads them, or None."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    return None if headers is None else header_retry_after(headers)
