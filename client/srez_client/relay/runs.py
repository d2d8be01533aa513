"""The model relay of one launcher's LLM runs (docs/security.md A12), whatever their backend.

One :class:`~srez_client.relay.server.ModelRelay` per launcher
(:class:`~srez_client.lifecycle.launch.RunLauncher`), in the launching process, started with the
first LLM run it launches, on the address the backend's runs reach the host by (its
``host_address``: ``127.0.0.1`` for ``local``; the Docker bridge's gateway for ``docker``), on a
free port, and closed with the launcher. Each run is registered with its real model slug and the host-side
``SREZ_LLM_API_BASE`` / ``SREZ_LLM_API_KEY`` / ``SREZ_LLM_TIMEOUT_S``, if set; the run is told
only the relay's URL, its scoped token and the agent's other ``SREZ_LLM_*`` settings
(:func:`~srez_client.relay.settings.model_environment`). The token is revoked when the launcher
sees the run end, stops it, or its launch fails (:meth:`RunModels.revoke`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from srez_client.backends.base import LaunchSpec
from srez_client.errors import BackendError
from srez_client.relay.server import ModelRelay
from srez_client.relay.settings import llm_settings, model_environment, relay_target


class RunModels:
    """The model relay of one backend's LLM runs.

    Args:
        backend: The backend's name, for error messages.
        address: Returns the address to listen on (asked once, when the relay starts).
        where: How the address is named in an error (``the bridge gateway``).
    """

    def __init__(
        self, backend: str, address: Callable[[], Awaitable[str]], *, where: str = "address"
    ) -> None:
        self.backend = backend
        self._address = address
        self._where = where
        self._relay: ModelRelay | None = None
        self._lock = asyncio.Lock()

    @property
    def running(self) -> ModelRelay | None:
        """The relay if it was started (and not closed since)."""
        return self._relay

    async def relay(self) -> ModelRelay:
        """The relay, started on first use.

        Raises:
            BackendError: If the address cannot be bound (for docker: a gateway that is not an
                address of this host, as with a remote engine or Docker Desktop).
        """
        async with self._lock:
            if self._relay is None:
                host = await self._address()
                relay = ModelRelay(host)
                try:
                    await relay.start()
                except OSError as e:
                    msg = f"{self.backend}: cannot serve the model relay on the {self._where} {host} ({e.strerror or e}); LLM runs need it on this host"
                    raise BackendError(msg) from e
                self._relay = relay
            return self._relay

    async def environment(self, spec: LaunchSpec, run_id: str) -> dict[str, str]:
        """Register an LLM run with the relay; what the run is told about its model."""
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
