"""The LLM agent: a chat model plays the benchmark through tool calls or JSON text.

Specs: ``llm`` (OpenAI tool calling, one call per turn) and ``llm-json`` (exactly one
``{"tool": ..., "args": ...}`` object per text reply, for models without tools). The model is
any litellm slug (``openai/...``, ``anthropic/...``, ``ollama/...``) in ``SREZ_MODEL``.

This module is pure: the call to the provider is a :class:`ModelClient` handed in. The agent
process's client is :mod:`srez_daemon.agent.model_client` (OpenAI-compatible HTTP to the
launcher's model relay, which holds litellm); neither ``srez_env`` nor the agent process imports
litellm (a 3 s, 200 MB import; ``tests/test_layering.py``).

Configuration (environment variables, read once by :meth:`LLMSettings.from_env`):

==============================  ============================================================
``SREZ_MODEL``                  the litellm model slug (required)
``SREZ_LLM_API_BASE``           base URL of an OpenAI-compatible server (the model relay's,
                                set by the backend; headless: local models, tests)
``SREZ_LLM_CALL_MODEL``         the slug to call instead of ``SREZ_MODEL`` (behind the relay)
``SREZ_LLM_API_KEY``            a key sent instead of the provider's variable (the relay's token)
``SREZ_LLM_TIMEOUT_S``          seconds the server may stay silent (default 120): streamed, the
                                time to the first token and between two; not a total
``SREZ_LLM_STREAM``             ask for streamed replies (default 1; 0 for a server that cannot
                                stream, where the timeout then bounds the whole reply)
``SREZ_LLM_TEMPERATURE``        sampling temperature (default: the provider's)
``SREZ_LLM_MAX_TOKENS``         completion token cap per reply (default 4096; ``provider``: the
                                provider's own, for a local server usually the whole context)
``SREZ_LLM_RESPONSE_FORMAT``    ``llm-json`` sends the action schema as ``response_format``
                                (default 1; 0 for a server that refuses it)
``SREZ_LLM_COST_CAP_USD``       per-task spend cap; reaching it submits the task cleanly
``SREZ_LLM_INPUT_COST_PER_TOKEN`` / ``SREZ_LLM_OUTPUT_COST_PER_TOKEN``
                                prices for models litellm does not know (local, fine-tuned)
``SREZ_LLM_MAX_ATTEMPTS``       attempts per model call, first included (default 6)
``SREZ_LLM_BACKOFF_S``          first backoff, doubling per attempt (default 1)
``SREZ_LLM_BACKOFF_MAX_S``      backoff ceiling (default 60)
``SREZ_LLM_COOLDOWN_AFTER``     consecutive failures that start a cooldown, K (default 3)
``SREZ_LLM_COOLDOWN_S``         shortest cooldown (default 60)
``SREZ_LLM_MAX_RETRY_AFTER_S``  longest ``Retry-After`` honoured; above it the run ends (600)
==============================  ============================================================

Notes: every turn produces dialog entries about itself: ``thinking`` (when the provider returns
reasoning), ``assistant`` (the text, with the call's tokens), ``usage`` (running totals and cost)
and ``provider_error`` (one per failed attempt, *before* its wait starts, with ``retry_in_s``
and ``cooldown``; ``retry_in_s`` is None when no retry follows). They go to ``on_note`` at once
when one is given (``srez-agent`` posts them to the agent socket, so the daemon knows of a wait
while it runs), else they queue for :meth:`LLMAgent.drain_notes`.

When the provider fails for good (attempts exhausted, ``Retry-After`` too long, auth refused),
``act`` raises :class:`~srez_env.agents.llm_retry.ProviderGaveUp`; ``srez-agent`` turns it into
exit code 75 and the daemon records ``error_kind: "provider"``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple, Protocol

from srez_env.agents.failures import CONTEXT_WINDOW
from srez_env.agents.llm_adapters import (
    Action,
    Mode,
    Reply,
    Turn,
    assistant_message,
    decide,
    observation_messages,
    response_format,
    system_prompt,
)
from srez_env.agents.llm_context import ContextFit
from srez_env.agents.llm_retry import (
    Decision,
    Failure,
    ModelLimitReached,
    RetryPolicy,
    RetryState,
    call_with_retries,
)
from srez_env.env_vars import env_number
from srez_env.errors import EnvError

LLM_SPECS: Final = {"llm": "tools", "llm-json": "json"}
DEFAULT_MAX_TOKENS: Final = 4096
"""The completion cap per reply when ``SREZ_LLM_MAX_TOKENS`` is unset: room for a reasoning
model's thinking and one call, while a local server's own default (the whole context) lets a
small model ramble into the timeout on every request."""
"""Agent specs of the LLM agent and their adapter."""
Note = dict[str, Any]
"""``{"type": ..., "fields": {...}}``: the body of ``POST /dialog`` on the agent socket."""


_FINAL: Final = Decision(None)
"""The decision reported for a model limit that ends the episode."""


class LLMConfigError(EnvError, ValueError):
    """An ``SREZ_LLM_*`` or ``SREZ_MODEL`` setting is missing or malformed."""


class ModelClient(Protocol):
    """One chat completion, and how to read its failures."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None = None,
    ) -> Reply:
        """One attempt; raises the provider's exception on failure. ``response_format`` is
        OpenAI's (a JSON schema the reply must follow), sent when given."""
        ...

    def classify(self, error: Exception) -> Failure | None:
        """A provider failure, or None for an exception that is not one (a bug: it propagates)."""
        ...


class UnboundClient:
    """The client of an LLM agent built outside ``srez-agent`` (a spec check): it cannot call."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None = None,
    ) -> Reply:
        msg = "the llm agents call their model from srez-agent: run them on the local or docker backend"
        raise LLMConfigError(msg)

    def classify(self, error: Exception) -> Failure | None:
        return None


class LLMSettings(NamedTuple):
    """The LLM agent's configuration (see the module docstring for the variables)."""

    model: str
    mode: Mode = "tools"
    api_base: str | None = None
    call_model: str | None = None
    """The slug to call when it differs from :attr:`model`: behind the host's model relay (local
    and docker runs) the agent speaks OpenAI's protocol to ``openai/srez-<run-id>`` while
    :attr:`model` stays the real slug, which names the run (the relay prices its calls)."""
    api_key: str | None = None
    """A key to send instead of the provider's usual variable (the relay's per-run token)."""
    timeout_s: float = 120.0
    temperature: float | None = None
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    stream: bool = True
    """Replies are asked for streamed, so that :attr:`timeout_s` is an idle timeout (a slow model
    still writing is never cut off); off: ``SREZ_LLM_STREAM=0``."""
    response_format: bool = True
    """``llm-json`` sends the action schema as ``response_format`` (off: ``SREZ_LLM_RESPONSE_FORMAT=0``,
    for a server that refuses the parameter)."""
    cost_cap_usd: float | None = None
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    retry: RetryPolicy = RetryPolicy()  # immutable: one default serves every instance

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, spec: str = "llm") -> LLMSettings:
        """Reads the settings; raises :class:`LLMConfigError` with a one-line reason."""
        model = environ.get("SREZ_MODEL", "").strip()
        if not model or model == "none":
            msg = "SREZ_MODEL is not set: the llm agents need a litellm model slug, e.g. openai/gpt-4o-mini"
            raise LLMConfigError(msg)
        num = functools.partial(env_number, environ, error=LLMConfigError)
        defaults = RetryPolicy()
        max_tokens = _max_tokens(environ.get("SREZ_LLM_MAX_TOKENS", ""))
        return cls(
            model=model,
            mode="json" if LLM_SPECS.get(spec) == "json" else "tools",
            api_base=environ.get("SREZ_LLM_API_BASE", "").strip() or None,
            call_model=environ.get("SREZ_LLM_CALL_MODEL", "").strip() or None,
            api_key=environ.get("SREZ_LLM_API_KEY", "").strip() or None,
            timeout_s=num("SREZ_LLM_TIMEOUT_S", 120.0, low=0.001),
            temperature=num("SREZ_LLM_TEMPERATURE", None),
            max_tokens=max_tokens,
            response_format=_switch(environ, "SREZ_LLM_RESPONSE_FORMAT", default=True),
            stream=_switch(environ, "SREZ_LLM_STREAM", default=True),
            cost_cap_usd=num("SREZ_LLM_COST_CAP_USD", None),
            input_cost_per_token=num("SREZ_LLM_INPUT_COST_PER_TOKEN", None),
            output_cost_per_token=num("SREZ_LLM_OUTPUT_COST_PER_TOKEN", None),
            retry=RetryPolicy(
                max_attempts=int(num("SREZ_LLM_MAX_ATTEMPTS", defaults.max_attempts, low=1)),
                base_s=num("SREZ_LLM_BACKOFF_S", defaults.base_s),
                max_backoff_s=num("SREZ_LLM_BACKOFF_MAX_S", defaults.max_backoff_s),
                cooldown_after=int(num("SREZ_LLM_COOLDOWN_AFTER", defaults.cooldown_after, low=1)),
                cooldown_s=num("SREZ_LLM_COOLDOWN_S", defaults.cooldown_s),
                max_retry_after_s=num("SREZ_LLM_MAX_RETRY_AFTER_S", defaults.max_retry_after_s),
            ),
        )


_OWN_ENDINGS: Final = frozenset({None, "stop", "tool_calls", "function_call", "eos"})
"""Finish reasons that are the model's own end of a reply (None: the provider did not say)."""


def _max_tokens(raw: str) -> int | None:
    """``SREZ_LLM_MAX_TOKENS``: a positive count, ``provider`` for the provider's own default,
    else :data:`DEFAULT_MAX_TOKENS`."""
    raw = raw.strip()
    if not raw:
        return DEFAULT_MAX_TOKENS
    if raw == "provider":
        return None
    if raw.isdigit() and int(raw) >= 1:
        return int(raw)
    msg = f"SREZ_LLM_MAX_TOKENS={raw!r}: expected a positive whole number or 'provider'"
    raise LLMConfigError(msg)


def _switch(environ: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "on", "true", "yes"):
        return True
    if raw in ("0", "off", "false", "no"):
        return False
    msg = f"{name}={raw!r}: expected 1 or 0 (on, off)"
    raise LLMConfigError(msg)


class LLMAgent:
    """A chat model behind the agent contract (``act(observation) -> action``)."""

    def __init__(
        self,
        settings: LLMSettings,
        client: ModelClient,
        *,
        seed: int = 0,
        sleep: Callable[[float], None] = time.sleep,
        on_note: Callable[[Note], None] | None = None,
    ) -> None:
        self.name = "llm-json" if settings.mode == "json" else "llm"
        """The agent's spec: each mode files its runs, and has its leaderboard row, apart."""
        self.settings = settings
        self.client = client
        self.messages: list[dict[str, Any]] = []
        """The chat so far (system, task, then replies and observations)."""
        self.tokens_in = 0
        self.tokens_out = 0
        self.cost_usd = 0.0
        self.cost_known = False
        self._retry = RetryState(settings.retry, seed)
        self._sleep = sleep
        self._on_note = on_note
        self._queued: list[Note] = []
        self._tools: list[dict[str, Any]] | None = None
        self._format: dict[str, Any] | None = None
        self._context = ContextFit()
        self._turn: Turn | None = None

    # ------------------------------------------------------------------ notes
    def drain_notes(self) -> list[Note]:
        """The notes produced since the last drain (only when no ``on_note`` was given)."""
        notes, self._queued = self._queued, []
        return notes

    def _note(self, entry_type: str, /, **fields: Any) -> None:
        note: Note = {"type": entry_type, "fields": fields}
        if self._on_note is not None:
            self._on_note(note)
        else:
            self._queued.append(note)

    # ------------------------------------------------------------------ the contract
    def act(self, observation: Mapping[str, Any]) -> Action:
        """The next call: the first observation is the prompt of ``SREEnv.reset()``."""
        if not self.messages:
            self._start(observation)
        elif self._turn is not None:
            self.messages += observation_messages(self._turn, observation)
        cap = self.settings.cost_cap_usd
        if cap is not None and self.cost_usd >= cap:
            return self._submit_at_cap(cap)
        reply = self._call()
        self._account(reply)
        self._turn = decide(self.settings.mode, reply)
        self.messages.append(assistant_message(reply))
        return self._turn.action

    def _call(self) -> Reply:
        """One model call through the retry policy, its history cut to the model's window
        (:mod:`srez_env.agents.llm_context`) as often as the server refuses it as too long."""
        self._context.fit(self.messages)
        while True:
            try:
                return call_with_retries(
                    lambda: self.client.complete(self.messages, self._tools, self._format),
                    self.client.classify,
                    self._retry,
                    sleep=self._sleep,
                    report=self._report,
                )
            except ModelLimitReached as e:
                failure = e.failure
                if failure.limit != CONTEXT_WINDOW or not self._context.refused(self.messages):
                    self._report(failure, _FINAL)
                    raise
                self._note(
                    "provider_error",
                    kind="model_limit",
                    message=f"the context window is full: {self._context.elided} older"
                    " observation(s) elided so far; asking again",
                    retry_in_s=0.0,
                    cooldown=False,
                )

    def _start(self, prompt: Mapping[str, Any]) -> None:
        mode = self.settings.mode
        self.messages = [
            {"role": "system", "content": system_prompt(mode)},
            {"role": "user", "content": str(prompt.get("text", ""))},
        ]
        tools = prompt.get("tools")
        listed = list(tools) if isinstance(tools, list) else None
        self._tools = listed if mode == "tools" else None
        if mode == "json" and listed and self.settings.response_format:
            self._format = response_format(listed, self.settings.max_tokens)

    def _report(self, failure: Failure, decision: Decision) -> None:
        if failure.kind == "model_limit" and decision is not _FINAL:
            return  # _call reports it once it knows whether the history can shrink
        self._note(
            "provider_error",
            kind=failure.kind,
            message=" ".join(failure.message.split())[:500],
            retry_in_s=decision.wait_s,
            cooldown=decision.cooldown,
        )

    def _account(self, reply: Reply) -> None:
        self.tokens_in += reply.input_tokens
        self.tokens_out += reply.output_tokens
        if reply.cost_usd is not None:
            self.cost_usd += reply.cost_usd
            self.cost_known = True
        if reply.reasoning:
            self._note("thinking", text=reply.reasoning)
        tokens = {"input": reply.input_tokens, "output": reply.output_tokens}
        # a reply the model did not end itself (the completion cap cut it) says so in the dialog,
        # so that what does not parse there is told apart from what the model chose to write
        cut = {} if reply.finish_reason in _OWN_ENDINGS else {"finish_reason": reply.finish_reason}
        if reply.text or not reply.tool_calls:
            self._note("assistant", text=reply.text, tokens=tokens, **cut)
        else:  # a bare tool call still shows its tokens in the dialog
            names = ", ".join(c.name for c in reply.tool_calls)
            self._note("assistant", text=f"(calls {names})", tokens=tokens, **cut)
        self._note(
            "usage",
            tokens={"input": self.tokens_in, "output": self.tokens_out},
            cost_usd=round(self.cost_usd, 6) if self.cost_known else None,
        )

    def _submit_at_cap(self, cap: float) -> Action:
        """The task's cost cap is reached: end cleanly with what was done (no new model call)."""
        summary = (
            f"Cost cap of ${cap:g} reached (${self.cost_usd:.4f} spent); "
            "submitting without further model calls."
        )
        self._note("assistant", text=summary)
        self._turn = None
        return {"tool": "submit", "args": {"summary": summary}}
