"""What an LLM run's container is told about its model, and what stays on the host.

Pure: the address containers reach the relay by (:func:`bridge_gateway`), the agent's
``SREZ_LLM_*`` settings (:func:`llm_settings`), their host-side part (:func:`relay_target`) and the
environment the container gets (:func:`model_environment`). The relay itself is
:mod:`srez_client.relay.server`, run for the backend by :mod:`srez_client.backends.docker.models`.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from srez_client.backends.base import AGENT_ENV_KEY
from srez_client.errors import BackendError
from srez_client.relay.wire import is_credential_name

HOST_ONLY_SETTINGS: Final = frozenset(
    {"SREZ_LLM_API_BASE", "SREZ_LLM_API_KEY", "SREZ_LLM_CALL_MODEL"}
)
"""LLM settings that stay on the host: the real endpoint and credential are the relay's to use."""


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


def llm_settings(host_environ: Mapping[str, str], agent_env: Mapping[str, str]) -> dict[str, str]:
    """The LLM agent's ``SREZ_LLM_*`` settings: the launcher's own, overridden by the launch's
    ``agent_env``, as the ``local`` backend passes them."""
    merged = {k: v for k, v in host_environ.items() if AGENT_ENV_KEY.fullmatch(k)}
    merged.update(agent_env)
    return merged


@dataclass(frozen=True, slots=True)
class RelayTarget:
    """Where the relay sends a run's calls: host-side settings that never enter the container."""

    api_base: str | None = None
    """The real endpoint (``SREZ_LLM_API_BASE``; None: the provider's own)."""
    api_key: str | None = field(default=None, repr=False)
    """An explicit key (``SREZ_LLM_API_KEY``; None: the provider's variable, as litellm reads it)."""
    timeout_s: float | None = None
    """The provider call's timeout (``SREZ_LLM_TIMEOUT_S``; None: the relay's default)."""


def relay_target(settings: Mapping[str, str]) -> RelayTarget:
    """The host-side part of a run's LLM settings."""
    try:
        timeout = float(settings.get("SREZ_LLM_TIMEOUT_S", ""))
    except ValueError:
        timeout = 0.0
    return RelayTarget(
        api_base=settings.get("SREZ_LLM_API_BASE", "").strip() or None,
        api_key=settings.get("SREZ_LLM_API_KEY", "").strip() or None,
        timeout_s=timeout if timeout > 0 else None,
    )


def model_environment(
    settings: Mapping[str, str], *, base_url: str, token: str, run_id: str
) -> dict[str, str]:
    """The environment an LLM run's container gets about its model: the agent's settings minus
    anything host-only or credential-shaped, plus the relay.

    * ``SREZ_LLM_API_BASE``: the relay (``http://<bridge gateway>:<port>/v1``);
    * ``SREZ_LLM_API_KEY``: the run's scoped relay token (never a provider key);
    * ``SREZ_LLM_CALL_MODEL``: ``openai/srez-<run-id>``, the litellm route to an OpenAI-compatible
      server; ``SREZ_MODEL`` stays the real slug, for the record and for pricing (the agent
      prices its calls by ``SREZ_MODEL`` whenever a call model is set).

    No host value of any ``*_API_KEY`` ever enters the container.
    """
    env = {
        k: v
        for k, v in settings.items()
        if k not in HOST_ONLY_SETTINGS and not is_credential_name(k)
    }
    env.update(
        SREZ_LLM_API_BASE=base_url,
        SREZ_LLM_API_KEY=token,
        SREZ_LLM_CALL_MODEL=f"openai/srez-{run_id}",
    )
    return env
