"""What an LLM run is told about its model, and what stays on the host (pure).

Every backend that runs a daemon (``local``, ``docker``) gives its LLM runs the same thing: the
agent's ``SREZ_LLM_*`` settings (:func:`llm_settings`) minus their host-side part
(:func:`relay_target`: the real endpoint, key and timeout, which the relay uses), plus the relay's
URL and the run's scoped token (:func:`model_environment`). The relay is
:mod:`srez_client.relay.server`, run for a backend by :mod:`srez_client.relay.runs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from srez_client.backends.base import AGENT_ENV_KEY
from srez_client.relay.wire import is_credential_name

HOST_ONLY_SETTINGS: Final = frozenset(
    {"SREZ_LLM_API_BASE", "SREZ_LLM_API_KEY", "SREZ_LLM_CALL_MODEL"}
)
"""LLM settings that stay on the host: the real endpoint and credential are the relay's to use."""


def llm_settings(host_environ: Mapping[str, str], agent_env: Mapping[str, str]) -> dict[str, str]:
    """The LLM agent's ``SREZ_LLM_*`` settings: the launcher's own, overridden by the launch's
    ``agent_env``."""
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
    """The environment an LLM run gets about its model: the agent's settings minus anything
    host-only or credential-shaped, plus the relay.

    * ``SREZ_LLM_API_BASE``: the relay (``http://<address>:<port>/v1``: the bridge gateway for a
      container, ``127.0.0.1`` for a ``local`` run);
    * ``SREZ_LLM_API_KEY``: the run's scoped relay token (never a provider key);
    * ``SREZ_LLM_CALL_MODEL``: ``openai/srez-<run-id>`` (the agent sends ``srez-<run-id>``; the
      relay ignores it: the token decides); ``SREZ_MODEL`` stays the real slug, for the record
      (the relay prices the calls by the slug it registered).

    No host value of any ``*_API_KEY`` ever enters the run.
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
