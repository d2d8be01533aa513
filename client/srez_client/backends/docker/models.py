"""How a docker backend's LLM runs reach their models (SECURITY.md A12): through one
:class:`~srez_client.relay.server.ModelRelay` in the launching process, never with a provider key.

The relay starts with the first LLM run, on the Docker bridge's gateway address (a free port).
Each run is registered with its real model slug and the host-side ``SREZ_LLM_API_BASE`` /
``SREZ_LLM_API_KEY`` / ``SREZ_LLM_TIMEOUT_S``, if set, and its container is told only the
relay's URL, the run's scoped token and the agent's other ``SREZ_LLM_*`` settings
(:func:`~srez_client.backends.docker.model_settings.model_environment`). The token is revoked when the
run is seen finished, is stopped or removed, or the launch fails.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

from srez_client.backends.base import LaunchSpec
from srez_client.backends.docker.model_settings import (
    bridge_gateway,
    llm_settings,
    model_environment,
    relay_target,
)
from srez_client.errors import BackendError
from srez_client.relay.server import ModelRelay


class RunModels:
    """The model relay of one backend's LLM runs.

    Args:
        bridge_network: Returns the engine's ``bridge`` network attributes (asked once, when the
            relay starts).
    """

    def __init__(self, bridge_network: Callable[[], Awaitable[Any]]) -> None:
        self._bridge_network = bridge_network
        self._relay: ModelRelay | None = None
        self._lock = asyncio.Lock()

    async def relay(self) -> ModelRelay:
        """The relay, started on first use.

        Raises:
            BackendError: If the engine has no bridge network, or its gateway is not an address
                of this host (a remote engine, Docker Desktop): LLM runs cannot reach the relay.
        """
        async with self._lock:
            if self._relay is None:
                host = bridge_gateway(await self._bridge_network())
                relay = ModelRelay(host)
                try:
                    await relay.start()
                except OSError as e:
                    msg = f"docker: cannot serve the model relay on the bridge gateway {host} ({e.strerror or e}); LLM runs need an engine on this host"
                    raise BackendError(msg) from e
                self._relay = relay
            return self._relay

    async def environment(self, spec: LaunchSpec, run_id: str) -> dict[str, str]:
        """Register an LLM run with the relay; what its container is told about its model."""
        settings = llm_settings(os.environ, spec.agent_env)
        target = relay_target(settings)
        relay = await self.relay()
        grant = relay.register(
            run_id,
            spec.model,
            target.api_base,
            api_key=target.api_key,
            timeout_s=target.timeout_s,
        )
        return model_environment(
            settings, base_url=grant.base_url, token=grant.token, run_id=run_id
        )

    def revoke(self, run_id: str) -> None:
        """The run's relay token stops working (nothing if it has none)."""
        if self._relay is not None:
            self._relay.revoke(run_id)

    def close(self) -> None:
        """Stop the relay: every token stops working (a later LLM run starts a new one)."""
        if self._relay is not None:
            self._relay.close_blocking()
            self._relay = None
