"""The provider retry policy, pure: backoff, Retry-After, cooldown, the attempt cap, and a 10,000
call simulation with a fake clock (docs/security.md test 42, third bullet)."""

from __future__ import annotations

import random

import pytest

from srez_env.agents.llm_retry import (
    Decision,
    Failure,
    ProviderGaveUp,
    RetryPolicy,
    RetryState,
    call_with_retries,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


class Flaky(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def classify(e: Exception) -> Failure | None:
    return e.failure if isinstance(e, Flaky) else None


KINDS = ["rate_limit", "timeout", "server", "other", "auth"]
POLICY = RetryPolicy(max_attempts=5, base_s=0.5, max_backoff_s=8, cooldown_after=3, cooldown_s=30)


def simulate_call(
    rng: random.Random, state: RetryState, clock: FakeClock, totals: dict[str, int]
) -> None:
    """One model call through the policy, failing at random; checks every wait it caused."""
    attempts = 0
    reported: list[Failure] = []

    def call() -> str:
        nonlocal attempts
        attempts += 1
        if rng.random() < 0.55:
            kind = rng.choices(KINDS, weights=[50, 20, 20, 9, 1])[0]
            after = rng.choice([None, 0.0, 0.3, 2.0, 45.0, 900.0]) if kind == "rate_limit" else None
            raise Flaky(Failure(kind, "boom", after, retryable=kind != "auth"))  # type: ignore[arg-type]
        return "ok"

    def report(failure: Failure, decision: Decision) -> None:
        reported.append(failure)
        totals["cooldowns"] += decision.cooldown
        if failure.retry_after_s is not None:
            totals["retry_after_seen"] += 1
            if decision.wait_s is not None:
                assert decision.wait_s >= failure.retry_after_s
            else:  # a Retry-After is never undercut: the call gives up instead
                assert failure.retry_after_s > POLICY.max_retry_after_s or attempts == 5

    start, sleeps_before = clock.now, len(clock.sleeps)
    gave_up: ProviderGaveUp | None = None
    try:
        call_with_retries(call, classify, state, sleep=clock.sleep, report=report)
    except ProviderGaveUp as e:
        gave_up = e
    totals["gave_up" if gave_up else "ok"] += 1
    assert gave_up is None or gave_up.attempts == attempts
    assert attempts <= POLICY.max_attempts  # retries <= max_attempts - 1
    waits = clock.sleeps[sleeps_before:]
    assert len(waits) == attempts - 1  # one wait between attempts, none after the last
    for failure, wait in zip(reported, waits, strict=False):  # measured on the fake clock
        if failure.retry_after_s is not None:
            assert wait >= failure.retry_after_s
    assert clock.now - start == pytest.approx(sum(waits))


def test_retry_policy_honours_retry_after_and_caps_attempts_over_10k_calls() -> None:
    state, clock, rng = RetryState(POLICY, seed=7), FakeClock(), random.Random(42)
    totals = {"gave_up": 0, "ok": 0, "retry_after_seen": 0, "cooldowns": 0}
    for _ in range(10_000):
        simulate_call(rng, state, clock, totals)
    assert totals["ok"] + totals["gave_up"] == 10_000
    assert totals["retry_after_seen"] > 1000 and totals["cooldowns"] > 100
    assert totals["gave_up"] > 0 and totals["ok"] > 8000


def test_backoff_grows_and_jitter_is_seeded() -> None:
    policy = RetryPolicy(max_attempts=6, base_s=1, max_backoff_s=5, jitter=0.5, cooldown_after=99)
    waits = [
        RetryState(policy, seed=3).on_failure(n, Failure("server", "x")).wait_s
        for n in (1, 2, 3, 4, 5)
    ]
    again = [
        RetryState(policy, seed=3).on_failure(n, Failure("server", "x")).wait_s
        for n in (1, 2, 3, 4, 5)
    ]
    assert waits == again
    floors = [1, 2, 4, 5, 5]
    for wait, floor in zip(waits, floors, strict=True):
        assert wait is not None and floor <= wait < floor * 1.5
    assert RetryState(policy, seed=3).on_failure(6, Failure("server", "x")).wait_s is None


def test_cooldown_after_k_consecutive_failures_resets_on_success() -> None:
    state = RetryState(RetryPolicy(base_s=0.1, cooldown_after=2, cooldown_s=30), seed=0)
    first = state.on_failure(1, Failure("server", "x"))
    second = state.on_failure(2, Failure("server", "x"))
    assert not first.cooldown and second.cooldown and second.wait_s == pytest.approx(30, abs=1)
    state.on_success()
    assert not state.on_failure(1, Failure("server", "x")).cooldown


def test_auth_and_overlong_retry_after_give_up_at_once() -> None:
    state = RetryState(RetryPolicy(max_retry_after_s=60, cooldown_after=99), seed=0)
    assert state.on_failure(1, Failure("auth", "no key", retryable=False)).wait_s is None
    assert state.on_failure(1, Failure("rate_limit", "slow", retry_after_s=61)).wait_s is None
    assert state.on_failure(1, Failure("rate_limit", "slow", retry_after_s=59)).wait_s == 59


def test_a_non_provider_exception_propagates_untouched() -> None:
    def call() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        call_with_retries(call, classify, RetryState(RetryPolicy()), sleep=FakeClock().sleep)
