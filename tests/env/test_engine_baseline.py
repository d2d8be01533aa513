"""The noise-free engine reproduces the §6.1 baseline rows to 1e-6 (docs/environment.md §5.2 test
8)."""

import pytest

from srez_env.sim.baseline import CANONICAL as base
from srez_env.sim.rules import firing
from srez_env.world import topology as topo
from srez_env.world.schema import BASE_FILES

# docs/environment.md §6.1, "Derived constants"
DESIGN_ROWS = {
    #          rps     p99      cpu    mem   cpu_needed
    "gateway": (400.0, 190.47, 33.3, 35.0, 740.7),
    "auth": (400.0, 85.25, 53.3, 45.0, 592.6),
    "payments": (160.0, 244.80, 40.0, 40.0, 444.4),
    "cache": (480.0, 2.36, 2.4, 40.0, 13.3),
    "db": (228.8, 21.30, 35.2, 60.0, 1564.4),
}


@pytest.mark.parametrize("service", topo.SERVICES)
def test_baseline_matches_design_table(service: str) -> None:
    rps, p99, cpu, mem, needed = DESIGN_ROWS[service]
    st = base.snapshot[service]
    assert st.rps == pytest.approx(rps, abs=1e-6)
    # the design table prints p99 and percentages rounded to its shown digits
    assert round(st.p99_ms, 2) == pytest.approx(p99, abs=1e-6)
    assert round(st.cpu_pct, 1) == pytest.approx(cpu, abs=1e-6)
    assert round(st.mem_pct, 1) == pytest.approx(mem, abs=1e-6)
    assert round(base.cpu_needed[service], 1) == pytest.approx(needed, abs=1e-6)
    assert st.err == pytest.approx(0.0, abs=1e-6)  # only the e^(-T/mu) timeout tails


def test_baseline_derived_thresholds() -> None:
    assert base.pool_needed == {"payments": 9, "auth": 9}
    assert round(base.k10_min_login_per_minute) == 3456
    assert base.k10_min_rps == 480 and base.k10_min_checkout_rps == 192
    # K12 minimum timeouts towards each dependency: 2 x baseline p99 (§6.1)
    assert round(2 * base.p99["auth"], 1) == 170.5
    assert round(2 * base.p99["payments"], 1) == 489.6
    assert round(2 * base.p99["db"], 1) == 42.6


def test_base_state_fires_no_rule() -> None:
    running = {s: BASE_FILES[s].values for s in topo.SERVICES}
    subjects = {p: topo.cert_subject(p) for p in topo.BASE_CERTS}
    assert firing(running, {}, topo.BASE_CERTS, subjects, 0, base) == []
