"""env/tools/reroot_probe.py: a kind moved to another root is the same incident there (its
injection, fix, certificates and propagation follow it), and the probe accounts for every seed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from srez_env.generator import matrix

TOOL = Path(__file__).parents[2] / "env" / "tools" / "reroot_probe.py"


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reroot_probe", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(row_id: str) -> matrix.Row:
    return next(r for r in matrix.load().rows if r.id == row_id)


def test_the_callers_of_a_service_reach_the_gateway_nearest_first() -> None:
    tool = load_tool()
    assert tool.callers_up("db") == ("db", "payments", "auth", "gateway")
    assert tool.callers_up("auth") == ("auth", "gateway", "payments")
    assert tool.callers_up("gateway") == ("gateway",)


def test_a_moved_incident_acts_on_its_new_root_only() -> None:
    tool = load_tool()
    cpu = tool.moved(row("sre-037"), "auth")  # payments' CPU limit, moved to auth
    assert cpu.root == "auth"
    assert cpu.inject == (("auth", "resources.cpu_limit_millicores", "200"),)
    assert [a["args"]["service"] for a in cpu.fix] == ["auth", "auth"]
    assert cpu.allowed == ("auth:resources.cpu_limit_millicores",)
    assert cpu.restarts == ("auth",)
    cert = tool.moved(row("sre-006"), "auth")
    assert cert.inject == (("auth", "tls.cert_file", "/etc/certs/auth-2024.pem"),)
    assert cert.fix[0]["args"]["value"] == "/etc/certs/auth-2025.pem"
    assert all("payments" not in c["path"] for c in cert.certs)
    scaled = tool.moved(row("sre-036"), "payments")  # the cache at zero, moved to payments
    assert scaled.fix[0]["args"]["replicas"] == 4


def test_every_candidate_is_new_and_every_seed_is_accounted_for() -> None:
    tool = load_tool()
    have = {(r.root, r.kind) for r in matrix.load().rows}
    found = tool.candidates()
    assert found
    assert not [c for c in found if (c.root, c.kind) in have]
    made, refused = tool.probe(found[0], [11])
    assert made + sum(refused.values()) == 1
