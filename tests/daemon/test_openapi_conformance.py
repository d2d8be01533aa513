"""The OpenAPI document matches the server: schemathesis against a live daemon (issue 11 item 9).

The daemon is a finished run whose exec may run only ``true`` and ``echo``
(``SREZ_EXEC_ALLOW``), so fuzzing ``POST /api/exec`` (included) runs nothing that could harm
this machine, and the pty, which would run a shell, is refused. Every check schemathesis has
that applies to one daemon is on: no server error; every status, content type, header and body
as documented; what the document forbids is refused and what it allows is accepted; wrong
methods are 405 with ``Allow``; a missing token is 401. Left out: the checks about resources and
users (``use_after_free``, ``ensure_resource_availability``, ``object_level_authorization``: one
token, nothing created), and the WebSocket routes (schemathesis speaks plain HTTP; they have
their own tests). The examples are bounded and the seed fixed, so the run stays well under a
minute and says the same thing twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from daemonkit import live_daemon, request

from srez_daemon.protocol.routes import MAX_OFFSET

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "ignored_auth",
)


def test_schemathesis_finds_no_disagreement_with_the_document(tmp_path: Path) -> None:
    env = {"SREZ_EXEC_ALLOW": json.dumps(["true", "echo"])}
    with live_daemon(tmp_path / "d", task_id="sre-025", env=env) as d:
        d.wait_phase("done")
        document = d.json("/api/openapi.json")
        assert document["paths"]["/api/dialog"]["get"]["parameters"][0]["schema"]["maximum"] == (
            MAX_OFFSET
        )
        schema = tmp_path / "openapi.json"
        schema.write_text(json.dumps(document))
        started = time.monotonic()
        done = subprocess.run(
            [
                str(SCHEMATHESIS), "run", str(schema),
                "--url", d.base_url,
                "-H", f"Authorization: Bearer {d.token}",
                "-H", "X-Srez-Admin: 1",
                "--checks", ",".join(CHECKS),
                "--max-examples", "30",
                "--seed", "11",
                "--exclude-path", "/api/pty",
                "--exclude-path", "/api/ws",
                "--request-timeout", "10",
                "--continue-on-failure",
            ],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=tmp_path,
            env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
        )  # fmt: skip
        took = time.monotonic() - started
        # what fuzzing rarely hits: one X-Request-ID reused for another body is the documented 409
        assert "409" in document["paths"]["/api/exec"]["post"]["responses"]
        headers = {**d.headers, "X-Request-ID": "reused-1", "Content-Type": "application/json"}
        for argv, status in ((["echo", "a"], 200), (["echo", "a"], 200), (["echo", "b"], 409)):
            body = json.dumps({"argv": argv, "timeout_s": 5}).encode()
            got, _, _ = request(f"{d.base_url}/api/exec", method="POST", headers=headers, data=body)
            assert got == status, (argv, got)
        got, _, answer = request(f"{d.base_url}/api/run", method="DELETE", headers=d.headers)
        assert got == 405 and answer["Allow"] == "GET, HEAD"
        got, _, _ = request(
            f"{d.base_url}/api/exec",
            method="POST",
            headers={**d.headers, "Content-Type": "application/json"},
            data=b'{"argv": ["sh", "-c", "id"], "timeout_s": 5}',
        )
        assert got == 403  # SREZ_EXEC_ALLOW: nothing else runs
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    summary = [line for line in done.stdout.splitlines() if "passed" in line or "cases" in line]
    print(f"schemathesis: {took:.1f} s; {' | '.join(summary[-3:])}")
