"""Why a run failed, told apart: the one taxonomy every count of results uses (docs/agents.md).

A run's ``error_kind`` (in ``result.json`` and ``summary.json``) is one of:

* **infrastructure**, not the model's failure: ``provider`` (the provider unreachable, 5xx,
  timeouts, rate limits, a refused key, after the retries) and ``harness`` (the run could not be
  set up, grading failed, it was stopped). ``srez eval --resume`` and managed runs re-run it, and
  every aggregate leaves it out and reports its count apart;
* ``model_limit``, a limit of the model itself: its context window is exhausted, its content
  filter refused the request. Time will not change it, so it is never retried: the episode ends
  there, is graded on the state it reached, and counts as the agent's result;
* ``agent``: the agent crashed, sent what is not an action until its budget ran out, exited
  non-zero or ran out of time. Its result, counted.

None means the agent phase ended normally (a submit or the step budget).

Pure: no litellm, no HTTP. A provider's error reaches the agent as an HTTP status and an
OpenAI-shaped body; :func:`model_limit_reason` reads a limit from it, whoever answered: the
launcher's model relay (which names litellm's exception classes in the ``code``, see
:data:`LIMIT_CODES_BY_EXCEPTION`), or a server called directly (OpenAI, llama.cpp, vLLM ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal

ErrorKind = Literal["provider", "harness", "model_limit", "agent"]
"""Whose failure a run's ``error`` is (see the module docstring)."""
INFRASTRUCTURE: Final[frozenset[str]] = frozenset({"provider", "harness"})
"""The error kinds that are not the agent's result: re-run, and left out of every aggregate."""

CONTEXT_WINDOW: Final = "context_window_exceeded"
CONTENT_FILTER: Final = "content_filter"
LIMIT_CODES_BY_EXCEPTION: Final = {
    "ContextWindowExceededError": CONTEXT_WINDOW,
    "ContentPolicyViolationError": CONTENT_FILTER,
}
"""litellm's exception classes that are a model limit, and the ``code`` the relay answers with."""
_LIMIT_CODES: Final = {
    CONTEXT_WINDOW: CONTEXT_WINDOW,
    "context_length_exceeded": CONTEXT_WINDOW,  # OpenAI
    "exceed_context_size_error": CONTEXT_WINDOW,  # llama.cpp's server
    CONTENT_FILTER: CONTENT_FILTER,
    "content_policy_violation": CONTENT_FILTER,  # OpenAI, Azure
}
_CONTEXT_WORDS: Final = re.compile(
    r"ContextWindowExceededError|context[_ ]length[_ ]exceeded|maximum context length"
    r"|exceeds? the (available )?context (size|window|length)|context window (is )?(exceeded|full)"
    r"|prompt is too long|too many tokens",
    re.IGNORECASE,
)
_FILTER_WORDS: Final = re.compile(
    r"ContentPolicyViolationError|content[_ ]policy[_ ]violation|content[_ ]filter", re.IGNORECASE
)


def counted(error_kind: str | None) -> bool:
    """Whether a run with this ``error_kind`` is the agent's result (scored, in aggregates)."""
    return error_kind not in INFRASTRUCTURE


def limit_code_of_exception(names: Iterable[str]) -> str | None:
    """The relay's ``code`` for an exception whose class (or a base class) is named in
    ``names``: a model limit, else None."""
    return next((LIMIT_CODES_BY_EXCEPTION[n] for n in names if n in LIMIT_CODES_BY_EXCEPTION), None)


def model_limit_reason(status: int, codes: Iterable[str], message: str) -> str | None:
    """``context_window_exceeded`` or ``content_filter`` when an error answer says the model's
    own limit refused the request, else None.

    Only a 4xx can be one (a 5xx that mentions a context is the server failing): its ``code`` or
    ``type`` when the server names one we know, else the words of its message (vLLM and others
    say it only in words).
    """
    if not 400 <= status < 500 or status in (401, 403, 408, 409, 429):
        return None
    for code in codes:
        if code in _LIMIT_CODES:
            return _LIMIT_CODES[code]
    if _CONTEXT_WORDS.search(message):
        return CONTEXT_WINDOW
    if _FILTER_WORDS.search(message):
        return CONTENT_FILTER
    return None
