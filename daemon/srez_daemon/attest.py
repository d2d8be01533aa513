"""What the harness believes of an agent: its exit's error kind, and its provider waits.

Provider and harness failures count only when attested (:func:`judge_exit`); provider waits are
excluded from the agent's time only when attested (:func:`provider_waits_attested`).

A run's ``error_kind`` decides what a managed run does with it: ``provider`` is re-run and never
scored, ``harness`` is not scored (and re-run with ``--retry-failed``), ``agent`` is the agent's
result and is scored. An agent that could pick its own ``error_kind`` could re-roll or drop every
episode that went badly, so the exit code is a *claim*, and :func:`judge_exit` says when the
harness has seen enough to believe it. It is the one place the rule lives; the daemon's run
controller (:mod:`srez_daemon.run`) calls it for every agent exit, on every backend that runs a
daemon (``local`` and ``docker``).
"""

from __future__ import annotations

from dataclasses import dataclass

from srez_daemon.protocol.agent import EXIT_CONFIG, EXIT_MODEL_LIMIT, EXIT_PROVIDER
from srez_env.agents.failures import ErrorKind
from srez_env.agents.llm import LLM_SPECS


@dataclass(frozen=True, slots=True)
class ExitJudgement:
    """How an agent's exit counts."""

    error_kind: ErrorKind | None
    """What the run is recorded with (None: the agent exited 0)."""
    claimed: ErrorKind | None = None
    """What the exit code claimed when the claim was not attested (None: nothing was set aside)."""


def judge_exit(code: int, *, builtin_agent: bool, agent_spec: str) -> ExitJudgement:
    """The ``error_kind`` of an agent that exited with ``code`` during the agent phase.

    Attested means the harness observed the failure itself, through code it runs and trusts:

    * ``provider`` (exit 75) is attested only for the built-in LLM agents: the daemon started its
      own ``srez-agent`` (``builtin_agent``: the default agent command, not ``SREZ_AGENT_CMD``)
      with an LLM spec (``llm``, ``llm-json``). That agent exits 75 only after its model calls
      failed for good, each failure answered by the provider, or (on ``local`` and ``docker``)
      by the launcher's model relay, which passes the provider's status through and never
      invents one. The inline
      backend runs no LLM agent, so it never records ``provider``.
    * ``model_limit`` (exit 76, the model's context window or content filter) under the same
      rule. Counted either way (as ``agent`` when not attested), but only the attested kind
      names the limit in every report.
    * ``harness`` (exit 2, a refused configuration) is attested only for the built-in agent,
      whose configuration the harness wrote.
    * Any other non-zero exit, and any claim by a bring-your-own agent (a custom command may
      post ``provider_error`` notes and exit 75 at will), is ``agent``: the agent's result,
      scored like any other. The unattested claim is returned as ``claimed`` so the run can
      record it for people to read; it never changes what is counted.

    Args:
        code: The agent's exit code.
        builtin_agent: Whether the agent process is the daemon's own ``srez-agent``.
        agent_spec: The run's agent spec (``run.json``'s ``agent_spec``).
    """
    if code == 0:
        return ExitJudgement(None)
    claim: ErrorKind = "agent"
    attested = True
    if code == EXIT_PROVIDER:
        claim, attested = "provider", builtin_agent and agent_spec in LLM_SPECS
    elif code == EXIT_MODEL_LIMIT:
        claim, attested = "model_limit", builtin_agent and agent_spec in LLM_SPECS
    elif code == EXIT_CONFIG:
        claim, attested = "harness", builtin_agent
    if attested:
        return ExitJudgement(claim)
    return ExitJudgement("agent", claimed=claim)


def provider_waits_attested(*, builtin_agent: bool, agent_spec: str) -> bool:
    """Whether the agent's ``provider_error`` notes may exclude time from its clock.

    The same rule as a ``provider`` exit: only the built-in LLM agents (the daemon's own
    ``srez-agent`` running ``llm`` or ``llm-json``) post notes the harness trusts, because their
    waits come from the provider's answers through code the harness runs. Even then a wait is
    excluded only as far as the daemon observed it and within caps (:mod:`srez_daemon.agent_clock`).
    A custom command's notes are recorded and exclude nothing: a note is free to post, so trusting
    one would let any agent stop its own clock.

    Args:
        builtin_agent: Whether the agent process is the daemon's own ``srez-agent``.
        agent_spec: The run's agent spec (``run.json``'s ``agent_spec``).
    """
    return builtin_agent and agent_spec in LLM_SPECS


def exit_error(code: int, judgement: ExitJudgement, provider_error: str) -> str | None:
    """What ``summary.json`` says of an agent that exited with ``code`` (None for 0):
    ``provider_error`` is the message of the agent's last ``provider_error`` note, if any."""
    if code == 0:
        return None
    if judgement.error_kind == "provider":
        return f"the model provider failed: {provider_error or 'no detail'}"
    if judgement.error_kind == "model_limit":
        return f"the model reached its limit: {provider_error or 'no detail'}"
    if judgement.error_kind == "harness":
        return f"the agent refused its configuration (exit {code}; see logs/agent.log)"
    if judgement.claimed is not None:
        detail = provider_error if judgement.claimed == "provider" else ""
        return (
            f"the agent exited with code {code}, claiming a {judgement.claimed} failure"
            + (f" ({detail})" if detail else "")
            + "; the claim is not attested (only the built-in agents' are), so it counts"
            " as the agent's failure"
        )
    return f"the agent exited with code {code}"
