"""The README walk: ``srez mcp``, an episode here over stdio and a run's agent socket proxied
over stdio and streamable HTTP (with its token), each played by the reader's MCP client."""

from __future__ import annotations

import json

import pytest
from walk_kit import Walker
from walk_steps import MCP, MY_MCP_CLIENT

pytest.importorskip("mcp")


def test_walk_srez_mcp(walker: Walker, bwrap: None) -> None:
    (walker.clone / "my_mcp_client.py").write_text(MY_MCP_CLIENT)
    for line, steps in MCP:
        walker.walk(line, steps)
    for agent in ("mcp-stdio", "mcp-http", "mcp-token"):
        (run,) = (walker.clone / "results" / "sre-007" / "none" / agent).iterdir()
        manifest = json.loads((run / "run.json").read_text())
        assert manifest["isolation"] == "bubblewrap", agent  # in the sandbox, where srez is not
