"""The attestation rule: which agent exits count as provider or harness failures."""

from __future__ import annotations

import sys

import pytest

from srez_daemon.attest import ExitJudgement, judge_exit
from srez_daemon.protocol.agent import EXIT_CONFIG, EXIT_PROVIDER
from srez_daemon.settings import DEFAULT_AGENT_ARGV, DaemonSettings


@pytest.mark.parametrize("spec", ["llm", "llm-json"])
def test_judge_exit_attests_the_builtin_llm_agents_provider_failure(spec: str) -> None:
    assert judge_exit(EXIT_PROVIDER, builtin_agent=True, agent_spec=spec) == ExitJudgement(
        "provider"
    )


@pytest.mark.parametrize(
    ("builtin", "spec"),
    [(False, "llm"), (False, "llm-json"), (False, "heuristic"), (True, "heuristic")],
)
def test_judge_exit_keeps_an_unattested_provider_claim_as_the_agents_failure(
    builtin: bool, spec: str
) -> None:
    verdict = judge_exit(EXIT_PROVIDER, builtin_agent=builtin, agent_spec=spec)
    assert verdict == ExitJudgement("agent", claimed="provider")


def test_judge_exit_attests_a_refused_configuration_of_the_builtin_agent_only() -> None:
    assert judge_exit(EXIT_CONFIG, builtin_agent=True, agent_spec="random") == ExitJudgement(
        "harness"
    )
    assert judge_exit(EXIT_CONFIG, builtin_agent=False, agent_spec="llm") == ExitJudgement(
        "agent", claimed="harness"
    )


@pytest.mark.parametrize("builtin", [True, False])
def test_judge_exit_of_other_codes_needs_no_attestation(builtin: bool) -> None:
    assert judge_exit(0, builtin_agent=builtin, agent_spec="llm") == ExitJudgement(None)
    for code in (1, 3, 137, -9):
        assert judge_exit(code, builtin_agent=builtin, agent_spec="llm") == ExitJudgement("agent")


def test_settings_agent_is_builtin_only_without_a_custom_command() -> None:
    base = {"SREZ_RUN_DIR": "/tmp/r", "SREZ_TOKEN_FILE": "/tmp/t"}
    assert DaemonSettings.from_env(base).agent_is_builtin
    custom = DaemonSettings.from_env({**base, "SREZ_AGENT_CMD": '["python3", "mine.py"]'})
    assert not custom.agent_is_builtin
    wrapped = '["' + sys.executable + '", "-m", "srez_daemon.agent", "--x"]'
    assert not DaemonSettings.from_env({**base, "SREZ_AGENT_CMD": wrapped}).agent_is_builtin
    assert DEFAULT_AGENT_ARGV[-1] == "srez_daemon.agent"
