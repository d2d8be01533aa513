"""The address a docker backend's containers reach the host's model relay by.

Pure. What the run is told about its model is :mod:`srez_client.relay.settings`; the relay is
run by the host (:mod:`srez_client.lifecycle.launch`) on the backend's ``host_address``.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Mapping
from typing import Any

from srez_client.errors import BackendError


def bridge_gateway(network: Mapping[str, Any]) -> str:
    """The IPv4 address containers on the ``bridge`` network reach the host by.

    ``IPAM.Config[].Gateway`` when the engine reports it; else the first host address of the
    subnet, which is where the engine puts the gateway when none is configured (some engines
    report the subnet alone). Whether this host owns the address is found out by binding it.

    Raises:
        BackendError: If the network has no IPv4 subnet.
    """
    for config in (network.get("IPAM") or {}).get("Config") or []:
        with contextlib.suppress(ValueError, TypeError):
            gateway = ipaddress.ip_address(str(config.get("Gateway") or ""))
            if gateway.version == 4:
                return str(gateway)
        with contextlib.suppress(ValueError, TypeError):
            subnet = ipaddress.ip_network(str(config.get("Subnet") or ""), strict=False)
            if subnet.version == 4:
                return str(next(subnet.hosts()))
    name = network.get("Name", "bridge")
    msg = f"docker: the {name} network has no IPv4 gateway, so containers cannot reach the model relay"
    raise BackendError(msg)
