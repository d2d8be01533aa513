"""The closed vocabularies of the benchmark: service names and fault kinds (docs/environment.md
§3.5), and alert names (§6.6).

They live apart so that the task model, the tools, the simulator and the telemetry share one
definition.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

ServiceName = Literal["gateway", "auth", "payments", "cache", "db"]
FaultKind = Literal[
    "wrong_upstream_port",
    "expired_tls_cert",
    "conn_pool_exhaustion",
    "db_max_connections_low",
    "memory_leak",
    "bad_deploy",
    "disk_full",
    "dns_misconfig",
    "cache_eviction_stampede",
    "rate_limit_misconfig",
    "feature_flag_regression",
    "dependency_timeout",
    "replicas_zero",
    "cpu_throttling",
    "none",
]

SERVICES: tuple[str, ...] = get_args(ServiceName)
"""The five services, in the fixed order used for diffs and listings."""

FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
"""K01..K14 in catalogue order (§3.5), then the control kind ``none``."""

ALERT_SEVERITY: Final = {
    "HighErrorRate": "warning",
    "HighLatencyP99": "warning",
    "ServiceDown": "critical",
    "HighCPU": "warning",
    "PodRestarting": "warning",
    "DiskAlmostFull": "warning",
    "CertExpired": "critical",
    "CertExpiringSoon": "warning",
    "HighRejectRate": "warning",
    "CacheHitRatioLow": "warning",
}
"""The alerts of §6.6 by name, each with its severity (the gateway raises some of them, see
:func:`srez_env.telemetry.alerts.severity`)."""
