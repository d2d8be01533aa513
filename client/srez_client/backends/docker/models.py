"""How a docker backend's LLM runs reach their models (docs/security.md A12): through one
:class:`~srez_client.relay.runs.RunModels` relay in the launching process, never with a provider
key, listening on the Docker bridge's gateway address (where containers reach the host).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from srez_client.backends.docker.model_settings import bridge_gateway
from srez_client.relay.runs import RunModels


def docker_models(bridge_network: Callable[[], Awaitable[Any]]) -> RunModels:
    """The relay of a docker backend's runs.

    Args:
        bridge_network: Returns the engine's ``bridge`` network attributes (asked once, when the
            relay starts); a network with no IPv4 gateway is a ``BackendError`` then.
    """

    async def gateway() -> str:
        return bridge_gateway(await bridge_network())

    return RunModels("docker", gateway, where="bridge gateway")
