"""An agent process that can never speak TLS does not load OpenSSL (about 4.7 MB of private
memory per agent): the built-in baselines, and the built-in LLM agents behind a plain-http base
URL (the launcher's model relay). A Python agent and an https endpoint keep it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from srez_daemon.agent.__main__ import tls_unused

PROBE = (
    "import runpy, sys\n"
    "try:\n"
    "    runpy.run_module('srez_daemon.agent', run_name='__main__', alter_sys=True)\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(sys.modules.get('ssl') is not None)\n"
)


def ssl_loaded(**env: str) -> bool:
    """Whether ``python -m srez_daemon.agent`` loaded ssl (it exits at once: no socket)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SREZ_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**keep, **env}, capture_output=True, text=True
    )
    assert "SREZ_AGENT_SOCKET is not set" in done.stderr, done.stderr
    return done.stdout.strip() == "True"


@pytest.mark.parametrize(
    ("env", "loaded"),
    [
        ({"SREZ_AGENT_SPEC": "heuristic"}, False),
        ({"SREZ_AGENT_SPEC": "replay:/x.jsonl"}, False),
        ({"SREZ_AGENT_SPEC": "llm", "SREZ_LLM_API_BASE": "http://127.0.0.1:9/v1"}, False),
        ({"SREZ_AGENT_SPEC": "llm", "SREZ_LLM_API_BASE": "https://api.example/v1"}, True),
        ({"SREZ_AGENT_SPEC": "llm-json", "OPENAI_BASE_URL": "https://api.example/v1"}, True),
        ({"SREZ_AGENT_SPEC": "llm"}, True),  # OpenAI's own endpoint: https
        ({"SREZ_AGENT_SPEC": "my_pkg.agent:Agent"}, True),  # user code may need TLS
    ],
)
def test_ssl_is_loaded_only_where_tls_can_be_spoken(env: dict[str, str], loaded: bool) -> None:
    assert tls_unused(env) is not loaded
    assert ssl_loaded(**env) is loaded


def test_an_https_endpoint_still_connects_with_tls() -> None:
    """The lazy import in the model client: an https base URL gets an HTTPSConnection."""
    from srez_daemon.agent.model_client import HTTPModelClient
    from srez_env.agents.llm import LLMSettings

    settings = LLMSettings(model="openai/gpt-x", api_base="https://api.example/v1")
    connection = HTTPModelClient(settings, {})._connect()
    assert type(connection).__name__ == "HTTPSConnection"
