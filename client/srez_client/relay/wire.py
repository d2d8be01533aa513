"""What the model relay reads and writes on the wire, apart from serving it (pure; no litellm).

:mod:`srez_client.relay.server` serves ``POST /v1/chat/completions`` to the agents of docker runs; this
module decides what of a request is forwarded (:func:`forwarded_params`), how a failure looks to
the agent (:func:`error_response`, :func:`provider_failure`) and which host secrets may never
appear in an answer (:func:`host_secret_values`, :func:`redact`).

Only the parameters of :data:`FORWARDED_PARAMS` reach litellm. Everything else in the body is
dropped on purpose, above all litellm's own routing arguments (``api_base``, ``base_url``,
``api_key``, ``custom_llm_provider``, ``extra_headers`` ...): an agent that could set them would
make the host send its provider key to a server of the agent's choosing. ``model`` is ignored too:
the token alone decides which model a request reaches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from srez_env.agents.failures import limit_code_of_exception

FORWARDED_PARAMS: Final = frozenset(
    {
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "response_format",
        "stream",
        "reasoning_effort",
    }
)
"""Chat-completion parameters passed on to the provider (OpenAI names; litellm maps them)."""
PASSED_HEADERS: Final = ("retry-after", "retry-after-ms")
"""Headers of a provider's error answer that reach the agent (its retry policy reads them)."""
_SECRET_WORDS: Final = frozenset(
    {"KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS"}
)
_NAME_WORDS: Final = re.compile(r"[A-Z0-9]+")
_MIN_SECRET: Final = 8
_MAX_MESSAGE: Final = 2000


@dataclass(frozen=True, slots=True)
class RelayAnswer:
    """An HTTP answer of the relay: status, one-line JSON body, extra headers."""

    status: int
    body: bytes
    headers: dict[str, str]


class RelayRequestError(Exception):
    """A request the relay refuses before calling anyone; ``answer`` is what the agent gets."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.answer = error_response(status, code, message)


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    kind: str = "relay_error",
    headers: Mapping[str, str] | None = None,
) -> RelayAnswer:
    """An OpenAI-shaped error (``{"error": {"message", "type", "code"}}``) on one line: the
    openai SDK inside the agent reads ``message``, and logs stay one record per line."""
    text = " ".join(message.split())[:_MAX_MESSAGE]
    body = orjson.dumps({"error": {"message": text, "type": kind, "code": code}})
    return RelayAnswer(status, body, dict(headers or {}))


def forwarded_params(body: bytes) -> dict[str, Any]:
    """The parameters of a chat-completion body that go to the provider.

    Raises:
        RelayRequestError: 400 if the body is not a JSON object with a list of ``messages``, or
            its ``stream`` is not a boolean.
    """
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise RelayRequestError(400, "bad_json", f"the body is not JSON: {e}") from e
    if not isinstance(data, dict):
        raise RelayRequestError(400, "bad_request", "the body must be a JSON object")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RelayRequestError(400, "bad_request", "'messages' must be a non-empty list")
    if not isinstance(data.get("stream", False), bool):
        raise RelayRequestError(400, "bad_request", "'stream' must be true or false")
    return {k: v for k, v in data.items() if k in FORWARDED_PARAMS and v is not None}


def is_credential_name(name: str) -> bool:
    """Whether a variable's name says it holds a credential: one of its words is ``KEY``,
    ``SECRET``, ``PASSWORD``, ``CREDENTIAL(S)``, or ``TOKEN`` other than in ``PER_TOKEN``
    (``SREZ_LLM_INPUT_COST_PER_TOKEN`` is a price, ``GITHUB_TOKEN`` is not)."""
    words = _NAME_WORDS.findall(name.upper())
    return any(
        word in _SECRET_WORDS or (word == "TOKEN" and (i == 0 or words[i - 1] != "PER"))
        for i, word in enumerate(words)
    )


def host_secret_values(environ: Mapping[str, str]) -> frozenset[str]:
    """Values of the credential-named variables of ``environ`` (:func:`is_credential_name`),
    at least 8 characters long: what an answer must never carry."""
    return frozenset(
        v for k, v in environ.items() if is_credential_name(k) and len(v) >= _MIN_SECRET
    )


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of a secret replaced by ``<redacted>``."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "<redacted>")
    return text


def _status_of(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and 400 <= status <= 599 else None


def _provider_headers(error: BaseException) -> dict[str, str]:
    """``Retry-After`` (and ``retry-after-ms``) of the provider's answer, when it gave one."""
    found: dict[str, str] = {}
    for source in (
        getattr(getattr(error, "response", None), "headers", None),
        getattr(error, "litellm_response_headers", None),
    ):
        if source is None or not hasattr(source, "get"):
            continue
        for name in PASSED_HEADERS:
            value = source.get(name)
            if value and name not in found:
                found[name] = str(value)
    return found


def provider_failure(error: BaseException, secrets: Iterable[str]) -> RelayAnswer | None:
    """The answer for a failed provider call: the provider's status (a litellm exception's
    ``status_code``) with its ``Retry-After``, so the agent's retry and cooldown policy sees what it
    would see calling the provider itself; None when ``error`` carries no HTTP status (not a
    provider failure: the caller treats it as the relay's own error).

    The message is the exception's text with host secrets redacted (providers echo a part of a
    rejected key). A limit of the model itself (litellm's ``ContextWindowExceededError``,
    ``ContentPolicyViolationError``) is named in the ``code``
    (:data:`srez_env.agents.failures.LIMIT_CODES_BY_EXCEPTION`), so the agent ends its episode
    instead of retrying.
    """
    status = _status_of(error)
    if status is None:
        return None
    message = redact(f"{type(error).__name__}: {error}", secrets)
    limit = limit_code_of_exception(cls.__name__ for cls in type(error).__mro__)
    return error_response(
        status,
        limit or str(getattr(error, "code", None) or status),
        message,
        kind="provider_error",
        headers=_provider_headers(error),
    )
