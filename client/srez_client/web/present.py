"""A run's views as the page reads them: JSON built from the TUI's own view models.

The dialog is folded by :class:`~srez_client.tui.viewmodels.dialog_fold.DialogFold`, the diff
parsed by :class:`~srez_client.tui.viewmodels.changes.ChangesModel` and the grade read by
:func:`~srez_client.tui.viewmodels.evaluation.build_evaluation`, so the browser and the terminal
show one reading of a run. Those sanitise every string that came from the run (escape sequences
and control characters become visible text), and the page puts text into the DOM as text.

The one exception is the assistant's Markdown, which the page shows as HTML: it is rendered here
by markdown-it-py with raw HTML off, then cleaned by nh3 (the ammonia sanitiser) to an allow-list
of tags with no attributes but a link's ``href`` (http, https and mailto only) and ``title``.
Rendering on the server keeps the page free of a Markdown library and the sanitiser on the side
the agent cannot reach.

Every answer is bounded, whatever a run holds: an item's text is sent up to :data:`BODY_MAX`
characters and rendered as Markdown up to :data:`MARKDOWN_MAX` (a longer note is plain text); a
finished run's dialog is sent :data:`DIALOG_PAGE` items at a time, the newest first
(:func:`dialog_page` the earlier ones); a diff's files, each file's lines and a raw diff are cut
at :data:`CARDS_MAX`, :data:`CARD_LINES_MAX` and :data:`RAW_MAX`, saying how much was left out
(the downloads stay whole).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

from srez_client.sanitize import sanitize, sanitize_line
from srez_client.tui.source import RunMeta
from srez_client.tui.viewmodels.changes import ChangesModel, FileCard
from srez_client.tui.viewmodels.dialog_fold import DialogFold, FoldItem
from srez_client.tui.viewmodels.evaluation import Evaluation
from srez_client.tui.viewmodels.run_details import alerts_at_t0

MARKDOWN_TAGS: Final = frozenset(
    {
        "p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li",
        "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
"""What rendered Markdown may hold; images are left out (a page of results loads nothing the
agent named)."""
BODY_MAX: Final = 64 << 10
"""Characters of one dialog item sent to the page."""
MARKDOWN_MAX: Final = 32 << 10
"""The longest note rendered as Markdown; a longer one is sent as plain text."""
DIALOG_PAGE: Final = 500
"""Dialog items per answer of a finished run."""
CARDS_MAX: Final = 200
"""Files of a diff sent as cards."""
CARD_LINES_MAX: Final = 2000
"""Lines of one file's card."""
RAW_MAX: Final = 1 << 20
"""Characters of a raw diff."""
_INCIDENT_RE: Final = re.compile(r"^Incident(?: \([^)]*\))?: .*$", re.MULTILINE)
"""The prompt's title line: ``Incident: <title>`` (runs recorded before the prompt stopped
naming its task wrote ``Incident (<id>): <title>``)."""


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # raw HTML off: markup the agent wrote is shown as the text it is
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_markdown(text: str) -> str:
    """Safe HTML of the Markdown ``text``."""
    import nh3

    html = _markdown().render(text)
    return nh3.clean(
        html,
        tags=set(MARKDOWN_TAGS),
        attributes={"a": {"href", "title"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def item_json(item: FoldItem) -> dict[str, Any]:
    """One dialog item: its text up to :data:`BODY_MAX` (the page cuts it at ``limit`` until
    Show more; ``cut`` says how many characters were never sent)."""
    body = item.body[:BODY_MAX]
    out: dict[str, Any] = {
        "kind": item.kind,
        "seq": item.seq,
        "title": item.title[:BODY_MAX],
        "body": body,
        "cut": len(item.body) - len(body),
        "status": item.status,
        "meta": item.meta,
        "limit": item.limit,
    }
    if item.kind == "assistant" and len(item.body) <= MARKDOWN_MAX:
        out["html"] = render_markdown(item.body)
    return out


def dialog_json(fold: DialogFold, *, live: bool, last: int | None = None) -> dict[str, Any]:
    """The dialog area: items (with ``last``, only the newest ``last``; ``start`` is the index
    of the first one sent), token totals, the count of tool calls and the footer."""
    state, text = fold.footer(live=live)
    usage = fold.usage
    start = 0 if last is None else max(0, len(fold.items) - last)
    return {
        "items": [item_json(i) for i in fold.items[start:]],
        "start": start,
        "tool_calls": sum(1 for i in fold.items if i.kind == "tool"),
        "footer": {"state": state, "text": text},
        "usage": {"input": usage.input, "output": usage.output, "cost_usd": usage.cost_usd},
    }


def dialog_page(fold: DialogFold, before: int) -> dict[str, Any]:
    """The :data:`DIALOG_PAGE` items before index ``before`` (the page's "Show earlier")."""
    end = min(max(0, before), len(fold.items))
    start = max(0, end - DIALOG_PAGE)
    return {"items": [item_json(i) for i in fold.items[start:end]], "start": start}


def _card(card: FileCard) -> dict[str, Any]:
    return {
        "path": card.path[:BODY_MAX],
        "status": card.status,
        "added": card.added,
        "removed": card.removed,
        "lines": [[kind, text[:BODY_MAX]] for kind, text in card.lines[:CARD_LINES_MAX]],
        "lines_cut": max(0, len(card.lines) - CARD_LINES_MAX),
    }


def _side(raw: str, cards: list[FileCard], totals: tuple[int, int, int]) -> dict[str, Any]:
    files, added, removed = totals
    return {
        "raw": sanitize(raw[:RAW_MAX]),
        "raw_cut": max(0, len(raw) - RAW_MAX),
        "cards": [_card(c) for c in cards[:CARDS_MAX]],
        "cards_cut": max(0, len(cards) - CARDS_MAX),
        "totals": {"files": files, "added": added, "removed": removed},
    }


def changes_json(model: ChangesModel) -> dict[str, Any]:
    """The Changes area: the agent's diff, and the reference's once the agent phase is over."""
    out: dict[str, Any] = {
        "sides": model.sides(),
        "agent": _side(model.agent_diff, model.agent_cards, model.totals()),
        "truth": None,
        "split": [],
        "similarity": None,
    }
    if model.agent_over:
        out["truth"] = _side(model.reference or "", model.truth_cards, model.totals(truth=True))
        out["split"] = [
            [path[:BODY_MAX], _card(a) if a else None, _card(t) if t else None]
            for path, a, t in model.split_pairs()[:CARDS_MAX]
        ]
        shown = model.similarity_text()
        if shown is not None:
            colour, text = shown
            out["similarity"] = {"value": model.similarity, "colour": colour, "text": text}
    return out


def evaluation_json(ev: Evaluation) -> dict[str, Any]:
    """The Evaluation area: the five checks with their reasons, the reward and the time."""
    return {
        "graded": ev.graded,
        "checks": [
            {"name": c.name, "state": c.state, "reasons": list(c.reasons)} for c in ev.checks
        ],
        "reward": ev.reward,
        "components": [
            {"name": name, "value": value, "weight": weight}
            for name, value, weight in ev.components
        ],
        "steps": ev.steps,
        "max_steps": ev.max_steps,
        "duration_s": ev.duration_s,
        "timed_out": ev.timed_out,
        "end_reason": ev.end_reason,
        "resolved": ev.resolved,
        "passed": ev.passed,
        "error": ev.error,
        "error_log": ev.error_log,
        "note": ev.note,
    }


def meta_json(meta: RunMeta, *, prompt: str, isolation: str) -> dict[str, Any]:
    """The top bar and More details (sanitised here: :class:`RunMeta` is raw)."""
    return {
        "run_id": sanitize_line(meta.run_id),
        "task_id": sanitize_line(meta.task_id),
        "difficulty": sanitize_line(meta.difficulty),
        "model": sanitize_line(meta.model),
        "agent": sanitize_line(meta.agent),
        "backend": sanitize_line(meta.backend),
        "isolation": sanitize_line(isolation),
        "phase": sanitize_line(meta.phase),
        "version": sanitize_line(meta.version),
        "steps_used": meta.steps_used,
        "step_budget": meta.step_budget,
        "brief": sanitize(meta.brief or brief_of(prompt)),
        "alerts": alerts_at_t0(prompt),
        "settings": {sanitize_line(k): sanitize_line(v) for k, v in _settings(meta).items()},
    }


def brief_of(prompt: str) -> str:
    """The incident's public brief, read from the task prompt (every run has one)."""
    found = _INCIDENT_RE.search(prompt)
    if found is None:
        return ""
    rest = prompt[found.end() :].lstrip("\n")
    return rest.split("\n\n", 1)[0].strip()


def _settings(meta: RunMeta) -> Mapping[str, str]:
    # the results path is the server's business: a hosted page does not publish its layout
    return {k: v for k, v in meta.settings.items() if k != "results"}
