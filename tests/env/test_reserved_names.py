"""Every name a built-in agent or calibrator files its runs under is reserved: no custom
command, MCP agent or Python agent may file a run of its own under it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import srez_env
from srez_env.agent_contract import BUILTIN_AGENT_NAMES
from srez_env.agents import AgentSpecError, custom_agent_name

BASELINES = Path(srez_env.__file__).parent / "baselines"
DECLARED = re.compile(r'^\s+name = "([a-z0-9._-]+)"$|SREEnv\(task, agent="([a-z0-9._-]+)"\)', re.M)


def declared_names() -> set[str]:
    names: set[str] = set()
    for source in BASELINES.glob("*.py"):
        for match in DECLARED.finditer(source.read_text()):
            names.add(match.group(1) or match.group(2))
    return names


def test_the_scan_finds_the_calibrators() -> None:
    assert {"heuristic", "range", "loudest", "memorised", "diagnostician"} <= declared_names()


@pytest.mark.parametrize("name", sorted(declared_names() | {"llm", "llm-json", "replay"}))
def test_every_builtin_name_is_reserved(name: str) -> None:
    assert name in BUILTIN_AGENT_NAMES
    with pytest.raises(AgentSpecError, match="built-in agent's"):
        custom_agent_name(f"cmd:{name}")
