"""The key check before an LLM run starts: every model slug has a provider litellm knows, and
that provider's key is in the environment.

Without it a missing key is found by the agent, one model call into each task; a provider that
reports it as a server error (litellm's OpenAI binding answers ``InternalServerError: Missing
credentials``) would even be retried before the run gives up. The check asks litellm itself
(``get_llm_provider``, ``validate_environment``), so it knows every provider litellm does.

litellm is imported only here, and only when an LLM run is about to start: the import costs
about 3 s, and ``LITELLM_LOCAL_MODEL_COST_MAP`` keeps it off the network.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Mapping
from typing import Any

from srez_client.errors import UsageError

CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
"""What a missing variable's name holds for it to count as a credential. litellm also lists the
base URL of some providers (``OLLAMA_API_BASE``); those have a default, so they are not required."""


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    import litellm

    litellm.suppress_debug_info = True  # else it prints to stdout on errors
    return litellm


def missing_credentials(missing_keys: Iterable[object]) -> list[str]:
    """The names in litellm's ``missing_keys`` that are credentials (see :data:`CREDENTIAL_WORDS`)."""
    names = [str(k) for k in missing_keys]
    return [n for n in names if any(word in n.upper() for word in CREDENTIAL_WORDS)]


def check_provider_keys(models: Iterable[str], environ: Mapping[str, str]) -> None:
    """Refuse, in one line, the first model litellm cannot resolve or whose key is missing.

    ``none`` (a baseline) is skipped, and so is every model when ``SREZ_LLM_API_KEY`` is set: the
    agents then send that key instead of the provider's variable.

    Raises:
        UsageError: A slug whose provider litellm does not know, or whose key is not set.
    """
    slugs = [m for m in dict.fromkeys(models) if m and m != "none"]
    if not slugs or environ.get("SREZ_LLM_API_KEY", "").strip():
        return
    litellm = _litellm()
    api_base = environ.get("SREZ_LLM_API_BASE", "").strip() or None
    for slug in slugs:
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # it prints a provider list
                litellm.get_llm_provider(slug)
        except Exception as e:  # litellm.BadRequestError, and kin for other malformed slugs
            provider = slug.split("/", 1)[0]
            msg = f"model {slug!r}: litellm knows no provider {provider!r} (e.g. openai/, anthropic/, gemini/, ollama/)"
            raise UsageError(msg) from e
        check = litellm.validate_environment(model=slug, api_base=api_base)
        if missing := missing_credentials(check.get("missing_keys") or []):
            names = ", ".join(missing)
            msg = f"model {slug!r}: its provider key is not set (litellm looks for {names}); set it, or SREZ_LLM_API_KEY, before the run"
            raise UsageError(msg)
