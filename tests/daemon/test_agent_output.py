"""An agent that floods its stdout and stderr fills ``logs/agent.log`` up to the cap
(``SREZ_AGENT_LOG_MAX_BYTES``) and no further: one line says the rest was dropped, the summary
counts the bytes, and the agent is never blocked on a full pipe (docs/security.md, test 53)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from daemonkit import live_daemon

CAP = 64 << 10
FLOOD = """
import os, sys
chunk = b"\\x1b[2J\\x1b]0;pwned\\x07" * 4096
for _ in range(64):  # 4 MiB on each stream, far past the cap
    os.write(1, chunk)
    os.write(2, chunk)
open(sys.argv[1], "w").write("done")  # it got here: no write blocked
"""


def test_an_agent_flooding_its_output_keeps_the_log_at_the_cap_and_is_never_blocked(
    tmp_path: Path,
) -> None:
    script, done = tmp_path / "flood.py", tmp_path / "flooded"
    script.write_text(FLOOD)
    env = {"SREZ_AGENT_LOG_MAX_BYTES": str(CAP)}
    agent = (sys.executable, str(script), str(done))
    with live_daemon(tmp_path, agent_spec="cmd:flood", agent_cmd=agent, env=env) as daemon:
        daemon.wait_phase("done", "error", timeout_s=60)
        deadline = time.monotonic() + 15
        while not (daemon.run_dir / "summary.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        summary = json.loads((daemon.run_dir / "summary.json").read_text())
        log = (daemon.run_dir / "logs" / "agent.log").read_bytes()
    assert done.read_text() == "done"
    written = 2 * 64 * 4096 * len(b"\x1b[2J\x1b]0;pwned\x07")
    notice = f"the agent's output passed {CAP} bytes: the rest is dropped".encode()
    assert log.count(notice) == 1 and log.rstrip().endswith(notice)
    assert CAP <= len(log) <= CAP + 200
    assert summary["agent_output_dropped"] == written - CAP
