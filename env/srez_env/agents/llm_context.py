"""Keeping an LLM agent's history within its model's context window (pure logic over messages).

An episode's observations are large (a page of logs is some 1,700 tokens), so a model with a
small window (8k for many local models) fills it in a few steps. When the server refuses a
request because it exceeds the window, the agent does not fail: :class:`ContextFit` elides the
oldest observations (their text becomes :data:`ELIDED`, so the model knows something was there)
until the history is at most :data:`SHRINK` of the size that was refused, and the agent asks
again. The budget it learnt stays, so later requests are cut before they are sent, and a
window that turns out smaller still shrinks it again.

What is never elided: the system prompt, the task's prompt and the newest observation. When
nothing else is left to cut, the window is too small for the task itself: that is the model's
limit (``model_limit``, :mod:`srez_env.agents.failures`), and the episode ends there.

Sizes are counted in characters: the agent has no tokenizer of the model, and the ratio of
characters to tokens of one history changes little between two requests, which is all a
budget learnt from a refusal needs.
"""

from __future__ import annotations

from typing import Any, Final

ELIDED: Final = (
    "[elided: an older observation, cut to keep the conversation within the model's context window]"
)
SHRINK: Final = 0.8
"""After a refusal, the history is cut to this share of the size that was refused."""
_KEPT_HEAD: Final = 2  # the system prompt and the task's prompt
_OBSERVATION_ROLES: Final = ("tool", "user")


def size(messages: list[dict[str, Any]]) -> int:
    """The size of a history, in characters of content."""
    return sum(len(str(m.get("content") or "")) for m in messages)


class ContextFit:
    """The character budget of one agent's history, learnt from the server's refusals."""

    def __init__(self) -> None:
        self.budget: int | None = None
        """None until a request was refused as too long."""
        self.elided = 0
        """Observations elided so far."""

    def refused(self, messages: list[dict[str, Any]]) -> bool:
        """The server refused ``messages`` as too long: lowers the budget and cuts the history in
        place. False when nothing is left to cut (the window is too small for the task)."""
        refused_size = size(messages)
        self.budget = int(min(self.budget or refused_size, refused_size) * SHRINK)
        before = self.elided
        self.fit(messages)
        if self.elided == before:  # no cut within budget: try the smallest history there is
            self._cut_all(messages)
        return self.elided > before

    def fit(self, messages: list[dict[str, Any]]) -> None:
        """Cuts the oldest observations, in place, until the history is within the budget."""
        if self.budget is None:
            return
        for i in self._cuttable(messages):
            if size(messages) <= self.budget:
                return
            self._cut(messages, i)

    def _cut_all(self, messages: list[dict[str, Any]]) -> None:
        for i in self._cuttable(messages):
            self._cut(messages, i)

    def _cut(self, messages: list[dict[str, Any]], i: int) -> None:
        messages[i] = {**messages[i], "content": ELIDED}
        self.elided += 1

    @staticmethod
    def _cuttable(messages: list[dict[str, Any]]) -> list[int]:
        """Observations, oldest first, but the newest one, that are not elided yet."""
        found = [
            i
            for i in range(_KEPT_HEAD, len(messages))
            if messages[i].get("role") in _OBSERVATION_ROLES
        ]
        return [i for i in found[:-1] if messages[i].get("content") != ELIDED]
