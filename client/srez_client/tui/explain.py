"""The AI tab's model call: host-side, through litellm, with its own key, model and cap.

Configuration (environment): ``SREZ_EXPLAIN_MODEL`` (a litellm slug, e.g.
``openai/gpt-4o-mini``), ``SREZ_EXPLAIN_API_BASE`` (optional, an OpenAI-compatible server),
``SREZ_EXPLAIN_API_KEY`` (optional; otherwise the provider's usual variable such as
``OPENAI_API_KEY``), ``SREZ_EXPLAIN_CAP_USD`` (default 5), ``SREZ_EXPLAIN_MAX_TOKENS`` (default
1500), ``SREZ_EXPLAIN_PRICE_IN`` / ``_OUT`` (USD per million tokens, for models litellm does not
price; default 10 and 30, deliberately high so an unknown model cannot slip past the cap).

litellm is imported only on the first question, in a worker thread (it takes about 3 s and makes
network calls at import unless ``LITELLM_LOCAL_MODEL_COST_MAP`` is set, which is done first).
When the model cannot answer, :class:`ExplainAnswer` says why in words a user can act on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from srez_client.tui.explain_spend import CapReached, SpendLedger

DEFAULT_CAP_USD: Final = 5.0
FALLBACK_PRICE_IN: Final = 10.0
FALLBACK_PRICE_OUT: Final = 30.0
Problem = Literal[
    "", "no_model", "missing_key", "cap", "provider_down", "auth", "rate_limit", "provider"
]


def _float(environ: Mapping[str, str], name: str, default: float) -> float:
    try:
        return float(environ.get(name, "") or default)
    except ValueError:
        return default


@dataclass(frozen=True, slots=True)
class ExplainSettings:
    """How the AI tab calls a model; built once from the environment."""

    model: str
    api_base: str | None
    api_key: str | None
    cap_usd: float
    max_tokens: int
    price_in: float
    price_out: float
    state_dir: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str], state_dir: Path) -> ExplainSettings:
        """Read the ``SREZ_EXPLAIN_*`` variables (see the module docstring)."""
        return cls(
            model=environ.get("SREZ_EXPLAIN_MODEL", "").strip(),
            api_base=environ.get("SREZ_EXPLAIN_API_BASE", "").strip() or None,
            api_key=environ.get("SREZ_EXPLAIN_API_KEY", "").strip() or None,
            cap_usd=_float(environ, "SREZ_EXPLAIN_CAP_USD", DEFAULT_CAP_USD),
            max_tokens=int(_float(environ, "SREZ_EXPLAIN_MAX_TOKENS", 1500)),
            price_in=_float(environ, "SREZ_EXPLAIN_PRICE_IN", FALLBACK_PRICE_IN),
            price_out=_float(environ, "SREZ_EXPLAIN_PRICE_OUT", FALLBACK_PRICE_OUT),
            state_dir=state_dir,
        )


@dataclass(frozen=True, slots=True)
class ExplainAnswer:
    """The model's answer, or why there is none."""

    text: str
    problem: Problem = ""
    cost_usd: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the model answered."""
        return not self.problem


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _prices(litellm: Any, s: ExplainSettings) -> tuple[float, float]:
    """USD per token in and out: litellm's price list, or the configured fallback."""
    try:
        info = litellm.get_model_info(s.model)
        p_in, p_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
        if isinstance(p_in, float | int) and isinstance(p_out, float | int) and (p_in or p_out):
            return float(p_in), float(p_out)
    except Exception:  # unknown model: litellm raises several kinds
        pass
    return s.price_in / 1e6, s.price_out / 1e6


def _missing_key(litellm: Any, s: ExplainSettings) -> str | None:
    if s.api_key:
        return None
    try:
        check = litellm.validate_environment(model=s.model, api_base=s.api_base)
    except Exception:
        return None
    missing = check.get("missing_keys") or []
    return ", ".join(str(k) for k in missing) or None


def ask_sync(s: ExplainSettings, messages: list[dict[str, str]]) -> ExplainAnswer:
    """One question to the model (blocking: run it in a worker thread)."""
    if not s.model:
        return ExplainAnswer(
            "No model configured: set SREZ_EXPLAIN_MODEL (e.g. openai/gpt-4o-mini).", "no_model"
        )
    litellm = _litellm()
    if missing := _missing_key(litellm, s):
        return ExplainAnswer(
            f"Missing key for {s.model}: set {missing} (or SREZ_EXPLAIN_API_KEY).", "missing_key"
        )
    p_in, p_out = _prices(litellm, s)
    chars = sum(len(m["content"]) for m in messages)
    ledger = SpendLedger(s.state_dir, s.cap_usd)
    try:
        reservation = ledger.reserve(chars / 3 * p_in + s.max_tokens * p_out)
    except CapReached as e:
        return ExplainAnswer(f"Cap reached: {e}", "cap")
    cost = 0.0
    try:
        resp = litellm.completion(
            model=s.model,
            messages=messages,
            api_base=s.api_base,
            api_key=s.api_key,
            max_tokens=s.max_tokens,
            num_retries=0,
            timeout=120,
        )
        usage = getattr(resp, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = tokens_in * p_in + tokens_out * p_out
        text = resp.choices[0].message.content or ""
        return ExplainAnswer(text, "", cost)
    except Exception as e:
        return _failure(litellm, e)
    finally:
        ledger.settle(reservation, cost)


def _failure(litellm: Any, e: Exception) -> ExplainAnswer:
    detail = " ".join(str(e).split())[:300]
    kinds: list[tuple[str, Problem, str]] = [
        ("AuthenticationError", "auth", "The provider refused the key"),
        ("RateLimitError", "rate_limit", "Rate limited by the provider; try again later"),
        ("APIConnectionError", "provider_down", "Provider unreachable"),
        ("Timeout", "provider_down", "Provider timed out"),
        ("ServiceUnavailableError", "provider_down", "Provider down (503)"),
        ("InternalServerError", "provider_down", "Provider down (server error)"),
    ]
    for name, problem, text in kinds:
        cls = getattr(litellm, name, None)
        if isinstance(cls, type) and isinstance(e, cls):
            return ExplainAnswer(f"{text}: {detail}", problem)
    return ExplainAnswer(f"Provider error ({type(e).__name__}): {detail}", "provider")


async def ask(s: ExplainSettings, messages: list[dict[str, str]]) -> ExplainAnswer:
    """:func:`ask_sync` in a worker thread (the import and the call never block the loop)."""
    return await asyncio.to_thread(ask_sync, s, messages)
