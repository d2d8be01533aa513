"""Constants derived once from the base state (ENV_DESIGN §6.1), never from live values.

Rules and alerts compare against these: the baseline p99 of every service, the CPU limit each
service needs (u = 0.9 at baseline demand with base replicas), the pool each db client needs,
and the rate limits the K10 rule requires.
"""

from __future__ import annotations

import math
from typing import Final

from srez_env.sim.engine import MinuteInputs, Snapshot, evaluate
from srez_env.world import topology as topo
from srez_env.world.schema import BASE_FILES


def base_inputs() -> MinuteInputs:
    """The fault-free minute: base configs, base versions, valid certificates, no incidents."""
    return MinuteInputs(
        running={s: BASE_FILES[s].values for s in topo.SERVICES},
        props={},
        cert_expired={},
        killed={},
        restarting={},
        extra_rps={},
        lat_mult={},
        memory_mb={},
    )


BASELINE: Final[Snapshot] = evaluate(base_inputs())
P99_BASE: Final = {s: BASELINE[s].p99_ms for s in topo.SERVICES}
RPS_BASE: Final = {s: BASELINE[s].rps for s in topo.SERVICES}
CPU_NEEDED: Final = {
    s: topo.CPU_BASE_M[s] * RPS_BASE[s] / (0.9 * topo.BASE_REPLICAS[s] * topo.PER_REPLICA_RPS[s])
    for s in topo.SERVICES
}
_POOL_DEMAND: Final = {
    "payments": RPS_BASE["payments"],
    "auth": topo.AUTH_DB_SHARE * RPS_BASE["auth"],
}
POOL_NEEDED: Final = {
    s: math.ceil(1.5 * demand * topo.POOL_HOLD_S / topo.BASE_REPLICAS[s])
    for s, demand in _POOL_DEMAND.items()
}
LOGINS_PER_S_BASE: Final = topo.LOGIN_SHARE * topo.INGRESS_RPS * topo.AUTH_ROUTE_SHARE
K10_MIN_RPS: Final = 1.2 * topo.INGRESS_RPS
K10_MIN_CHECKOUT_RPS: Final = 1.2 * topo.INGRESS_RPS * topo.CHECKOUT_ROUTE_SHARE
K10_MIN_LOGIN_PER_MINUTE: Final = 1.2 * LOGINS_PER_S_BASE * 60
