"""The provider retry policy of the LLM agent: pure logic, no clock, no network, no litellm.

litellm and the openai SDK would retry on their own (twice by default, holding the call through
``Retry-After`` and failing at once above 120 s); the agent turns that off (``num_retries=0``,
``max_retries=0``) and retries here instead, so that every wait is *known*: reported to the
dialog as a ``provider_error`` entry before it starts, and excluded from the agent's time limit
by the daemon (docs/design.md §13.3).

The rules, for attempt ``n`` (from 1) of one model call that failed with :class:`Failure`:

* not retryable (``auth``, a rejected request), or ``n == max_attempts``: give up (``wait_s is None``); the run ends
  with ``error_kind: "provider"``, never counted as the model's failure;
* a ``Retry-After`` above ``max_retry_after_s``: give up too (waiting that long is not worth a
  held run; a shorter wait would not honour it);
* otherwise wait ``max(backoff, retry_after)`` where ``backoff = min(max_backoff_s, base_s *
  2**(n-1)) * (1 + jitter * u)``, ``u`` drawn from a seeded ``random.Random``: never sooner than
  the provider asked;
* after ``cooldown_after`` consecutive failures (counted across calls, reset by a success) the
  wait becomes at least ``cooldown_s`` and is flagged ``cooldown``, so viewers show a pause rather
  than a retry.

:func:`call_with_retries` drives a call through the policy with an injected ``sleep``; the tests
run it over 10,000 simulated calls with a fake clock (docs/security.md test 42).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, TypeVar

FailureKind = Literal["rate_limit", "timeout", "server", "auth", "model_limit", "other"]
"""The classes of provider failure a ``provider_error`` dialog entry names. ``model_limit`` (the
model's context window or content filter refused the request) is never retried and is not the
provider's failure: :func:`call_with_retries` raises :class:`ModelLimitReached` for it
(:mod:`srez_env.agents.failures`)."""

T = TypeVar("T")

_MISSING_CREDENTIALS = re.compile(
    r"missing (credentials|[\w ]{0,40}?api[ _-]?key)"
    r"|api[ _-]?key\b[\w ]{0,30}?(not set|not found|not provided|missing|must be set)"
    r"|no api[ _-]?key",
    re.IGNORECASE,
)
"""How providers word a key that was never sent. Some bindings report it as a server or
connection error (litellm's OpenAI one: ``InternalServerError: Missing credentials``; its Gemini
one: ``APIConnectionError: Missing Gemini API key``), which would be retried for minutes."""


def names_missing_credentials(message: str) -> bool:
    """Whether a provider's error message says no key was sent (an ``auth`` failure, whatever
    class the error came as: waiting will not make a key appear)."""
    return bool(_MISSING_CREDENTIALS.search(message))


class _RetryFields(NamedTuple):
    max_attempts: int = 6
    """Attempts per model call, the first included (so at most ``max_attempts - 1`` retries)."""
    base_s: float = 1.0
    """Backoff before the second attempt; doubles per attempt."""
    max_backoff_s: float = 60.0
    """Largest backoff (before jitter)."""
    jitter: float = 0.25
    """Backoff is stretched by a random factor in ``[1, 1 + jitter)``."""
    cooldown_after: int = 3
    """Consecutive failures that start a cooldown (K)."""
    cooldown_s: float = 60.0
    """Shortest cooldown wait."""
    max_retry_after_s: float = 600.0
    """A provider asking for a longer wait than this ends the run instead."""


class RetryPolicy(_RetryFields):
    """How often and how long to retry a failing provider (checked when made: raises
    ValueError on a count below 1 or a negative wait)."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> RetryPolicy:
        self = super().__new__(cls, *args, **kwargs)
        if self.max_attempts < 1 or self.cooldown_after < 1:
            msg = f"max_attempts and cooldown_after must be >= 1 (got {self.max_attempts}, {self.cooldown_after})"
            raise ValueError(msg)
        if min(self.base_s, self.max_backoff_s, self.jitter, self.cooldown_s) < 0:
            msg = "backoff, jitter and cooldown must not be negative"
            raise ValueError(msg)
        return self


class Failure(NamedTuple):
    """One failed attempt, classified."""

    kind: FailureKind
    message: str
    retry_after_s: float | None = None
    """The provider's ``Retry-After``, in seconds, when it sent one."""
    retryable: bool = True
    """False when time will not help: a refused credential, a request the provider rejects."""
    limit: str | None = None
    """For ``model_limit``: which (``context_window_exceeded``, ``content_filter``)."""


class Decision(NamedTuple):
    """What to do after a failure: wait ``wait_s`` and retry, or give up (``wait_s is None``)."""

    wait_s: float | None
    cooldown: bool = False


class ProviderGaveUp(Exception):
    """The provider failed and the policy gave up; carries the last failure."""

    def __init__(self, failure: Failure, attempts: int) -> None:
        super().__init__(f"provider {failure.kind} after {attempts} attempt(s): {failure.message}")
        self.failure = failure
        self.attempts = attempts


class ModelLimitReached(Exception):
    """The model's own limit refused a call (its context window, its content filter): the
    episode ends here and counts as the agent's result; carries the failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"the model reached its limit: {failure.message}")
        self.failure = failure


class RetryState:
    """The policy plus what it remembers between calls: consecutive failures and the jitter RNG."""

    def __init__(self, policy: RetryPolicy, seed: int = 0) -> None:
        self.policy = policy
        self.consecutive = 0
        self._rng = random.Random(seed)

    def on_success(self) -> None:
        self.consecutive = 0

    def on_failure(self, attempt: int, failure: Failure) -> Decision:
        """The decision after attempt ``attempt`` (from 1) of a call failed with ``failure``."""
        p = self.policy
        self.consecutive += 1
        if not failure.retryable or attempt >= p.max_attempts:
            return Decision(None)
        asked = failure.retry_after_s
        if asked is not None and asked > p.max_retry_after_s:
            return Decision(None)
        backoff = min(p.max_backoff_s, p.base_s * 2 ** (attempt - 1))
        wait = backoff * (1 + p.jitter * self._rng.random())
        if asked is not None:
            wait = max(wait, asked)
        cooldown = self.consecutive % p.cooldown_after == 0
        if cooldown:
            wait = max(wait, p.cooldown_s)
        return Decision(wait, cooldown)  # unrounded: rounding could undercut Retry-After


def call_with_retries(
    call: Callable[[], T],
    classify: Callable[[Exception], Failure | None],
    state: RetryState,
    *,
    sleep: Callable[[float], None],
    report: Callable[[Failure, Decision], None] = lambda _f, _d: None,
) -> T:
    """Runs ``call`` until it succeeds or the policy gives up.

    Args:
        call: One attempt.
        classify: Turns an exception into a :class:`Failure`; None means it is not a provider
            failure, and it propagates at once.
        state: The policy and its memory (shared by every call of a run).
        sleep: Waits that many seconds (``time.sleep``; a fake clock in tests).
        report: Told of every failure and decision *before* the wait starts, so the wait can be
            reported (and excluded from the time limit) while it runs.

    Raises:
        ModelLimitReached: When the failure is a limit of the model (not retried).
        ProviderGaveUp: When the policy gives up on any other failure.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            result = call()
        except Exception as e:
            failure = classify(e)
            if failure is None:
                raise
            decision = state.on_failure(attempt, failure)
            report(failure, decision)
            if decision.wait_s is None:
                if failure.kind == "model_limit":
                    raise ModelLimitReached(failure) from e
                raise ProviderGaveUp(failure, attempt) from e
            sleep(decision.wait_s)
            continue
        state.on_success()
        return result
