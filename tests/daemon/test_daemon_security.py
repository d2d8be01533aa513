"""Exposure, authentication and reference isolation of a live daemon (SECURITY.md §4.1, §4.2).

Each test starts a real ``srez-daemon`` process and talks to it over loopback TCP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from daemonkit import SLEEPER, daemon_env, live_daemon, prepare, reference_line, request

SECURED_ROUTES = [
    ("GET", "/api/run"),
    ("GET", "/api/dialog?offset=0"),
    ("GET", "/api/ws?offset=0"),
    ("GET", "/api/diff"),
    ("GET", "/api/files"),
    ("GET", "/api/reference"),
    ("GET", "/api/similarity"),
    ("GET", "/api/grade"),
    ("GET", "/api/logs?name=daemon"),
    ("POST", "/api/exec"),
    ("GET", "/api/pty?cols=80&rows=24"),
    ("GET", "/api/openapi.json"),
]


# --------------------------------------------------------------------------- test 3: fail closed
@pytest.mark.parametrize("token", [None, "", "   \n"], ids=["missing", "empty", "blank"])
def test_daemon_refuses_to_start_without_a_token(tmp_path: Path, token: str | None) -> None:
    """Figure: 0 daemons serving, exit code != 0, for a missing, empty or blank token file."""
    failures = 0
    for attempt in range(3):
        root = tmp_path / str(attempt)
        run_dir, token_file = prepare(root, token=token or "")
        if token is None:
            token_file.unlink()
        endpoint = root / "endpoint.json"
        done = subprocess.run(
            [sys.executable, "-m", "srez_daemon"],
            env=daemon_env(run_dir, token_file, endpoint, {}),
            capture_output=True,
            timeout=30,
        )
        assert done.returncode != 0
        assert not endpoint.exists()
        assert b"token" in done.stderr and len(done.stderr.strip().splitlines()) == 1
        failures += 1
    assert failures == 3


# --------------------------------------------------------------------------- test 2: auth matrix
def test_auth_matrix_refuses_every_bad_credential(tmp_path: Path) -> None:
    """Figure: 0 non-401 answers over every route x 6 bad credentials; health stays open."""
    with (
        live_daemon(tmp_path / "a", agent_cmd=SLEEPER) as d,
        live_daemon(tmp_path / "b", agent_cmd=SLEEPER) as other,
    ):
        bad = {
            "no header": ({}, ""),
            "wrong token": ({"Authorization": "Bearer " + "x" * 43}, ""),
            "token in query": ({}, f"token={d.token}"),
            "token with whitespace": ({"Authorization": f"Bearer  {d.token} "}, ""),
            "empty token": ({"Authorization": "Bearer "}, ""),
            "another run's token": ({"Authorization": f"Bearer {other.token}"}, ""),
        }
        answers = []
        for method, path in SECURED_ROUTES:
            for headers, query in bad.values():
                sep = "&" if "?" in path else "?"
                url = d.base_url + path + (sep + query if query else "")
                status, body, _ = request(
                    url, method=method, headers=headers, data=b"{}" if method == "POST" else None
                )
                answers.append(status)
                if status == 401:
                    assert json.loads(body)["error"]["code"] == "unauthorized"
        assert answers.count(401) == len(SECURED_ROUTES) * len(bad)
        status, body, _ = request(d.base_url + "/api/health")
        assert status == 200 and set(json.loads(body)) == {
            "status",
            "phase",
            "protocol_version",
            "version",
            "uptime_s",
            "terminal",
        }


# --------------------------------------------------------------------------- test 6: rebinding
def test_foreign_host_and_origin_are_refused_without_cors(tmp_path: Path) -> None:
    """Figure: 0 accepted; 0 responses carrying Access-Control-Allow-*."""
    with live_daemon(tmp_path, agent_cmd=SLEEPER) as d:
        attempts = [
            {"Host": "evil.example:4263", **d.headers},
            {"Origin": "http://evil.example", **d.headers},
            {"Host": "evil.example", "Origin": "http://evil.example"},
        ]
        accepted, cors = 0, 0
        for headers in attempts:
            status, body, response_headers = request(d.base_url + "/api/run", headers=headers)
            accepted += status == 200
            cors += any(k.lower().startswith("access-control-allow") for k in response_headers)
            assert json.loads(body)["error"]["code"] == "forbidden_host"
        form = {"Content-Type": "application/x-www-form-urlencoded", **d.headers}
        status, _, response_headers = request(
            d.base_url + "/api/exec", method="POST", headers=form, data=b"argv=id"
        )
        accepted += status == 200
        cors += any(k.lower().startswith("access-control-allow") for k in response_headers)
        assert (accepted, cors) == (0, 0)


# --------------------------------------------------------------------------- test 9: phase gate
def test_reference_is_refused_for_every_request_of_the_agent_phase(tmp_path: Path) -> None:
    """Figure: 0 bytes of the reference in 200 requests during the agent phase; served after."""
    with live_daemon(tmp_path, agent_cmd=SLEEPER, env={"SREZ_AGENT_TIME_LIMIT_S": "3"}) as d:
        assert d.wait_phase("agent") == "agent"
        reference_text = reference_line()
        leaked = 0
        for _ in range(100):
            for path in ("/api/reference", "/api/similarity"):
                status, body, _ = d.get(path)
                assert status == 409 and json.loads(body)["error"]["code"] == "agent_phase"
                leaked += reference_text in body.decode()
            assert not (d.run_dir / "reference.patch").exists()
        assert leaked == 0
        d.wait_phase("done")
        status, body, _ = d.get("/api/reference")
        assert status == 200 and f"+{reference_text}" in body.decode()
        assert d.json("/api/similarity")["reference_lines"] == 2


# --------------------------------------------------------------------------- test 4: no disclosure
def test_token_appears_in_no_env_argv_log_or_run_file(tmp_path: Path) -> None:
    """Figure: 0 occurrences of the token in process env/argv, logs and the run folder."""
    with live_daemon(tmp_path, agent_cmd=SLEEPER, env={"SREZ_AGENT_TIME_LIMIT_S": "2"}) as d:
        d.wait_phase("agent")
        deadline = time.monotonic() + 5
        agents: list[psutil.Process] = []
        while not agents and time.monotonic() < deadline:
            agents = psutil.Process(d.pid).children(recursive=True)
            time.sleep(0.05)
        places: dict[str, str] = {}
        for proc in [psutil.Process(d.pid), *agents]:
            places[f"argv {proc.pid}"] = " ".join(proc.cmdline())
            places[f"env {proc.pid}"] = " ".join(f"{k}={v}" for k, v in proc.environ().items())
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
        places["ps"] = ps.stdout
        d.get("/api/run")
        d.get("/api/run", headers={"Authorization": "Bearer wrong"})
        d.wait_phase("done")
        for path in d.run_dir.rglob("*"):
            if path.is_file():
                places[str(path)] = path.read_text(errors="replace")
        places["daemon.out"] = d.log.read_text(errors="replace")
        found = [where for where, text in places.items() if d.token in text]
        assert agents, "the agent process was not found"
        assert "SREZ_TOKEN_FILE" not in places[f"env {agents[0].pid}"]
        assert found == []


def test_openapi_document_validates(tmp_path: Path) -> None:
    from openapi_spec_validator import validate

    with live_daemon(tmp_path, agent_cmd=SLEEPER) as d:
        document = d.json("/api/openapi.json")
        validate(document)  # type: ignore[arg-type]
        assert set(document["paths"]) >= {route.split("?")[0] for _, route in SECURED_ROUTES}  # type: ignore[arg-type]


def test_schemathesis_finds_no_server_error(tmp_path: Path) -> None:
    """A schemathesis run against a live, finished daemon: no 5xx on any operation.

    ``/api/exec`` is left out on purpose: fuzzing it would run arbitrary commands on this machine
    (its inputs are covered by tests/daemon/test_exec.py); the WebSocket routes need an upgrade.
    """
    with live_daemon(tmp_path, task_id="sre-025") as d:
        d.wait_phase("done")
        schema = tmp_path / "openapi.json"
        schema.write_text(json.dumps(d.json("/api/openapi.json")))
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "run",
                str(schema),
                "--url",
                d.base_url,
                "-H",
                f"Authorization: Bearer {d.token}",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                "25",
                "--exclude-path",
                "/api/pty",
                "--exclude-path",
                "/api/exec",
                "--exclude-path",
                "/api/ws",
                "--request-timeout",
                "10",
            ],
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
