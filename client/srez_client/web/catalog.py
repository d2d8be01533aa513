"""The runs ``srez view`` lists: rows, and the filter, sort and page a request asks for.

Pure logic over :class:`RunRow` values, so that a list of 10,000 runs is filtered, sorted and cut
to a page in a few milliseconds per request. Where the rows come from (a results folder, the
backends' live runs) is :mod:`srez_client.web.sources`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

Tab = Literal["running", "exited", "finished", "all"]
TABS: Final[tuple[Tab, ...]] = ("running", "exited", "finished", "all")
"""The list's tabs (Recent is the browser's: the last ten runs it opened, by id)."""
SORT_KEYS: Final = ("finished_at", "task_id", "model", "agent", "status", "reward", "steps")
"""The columns a list sorts by."""
STATUSES: Final = ("running", "exited", "ok", "error", "resolved", "unresolved")
"""What the status filter accepts: a live run's state, a summary's status, or its outcome."""
MAX_PAGE: Final = 500
"""The most rows one page holds."""


class QueryError(ValueError):
    """A list request asked for something that is not allowed; the message says what is."""


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the list shows it."""

    run_id: str
    task_id: str
    model: str
    agent: str
    state: Literal["running", "exited", "finished"]
    status: str = ""
    """The summary's status (``ok``/``error``), or the live run's (``running``/``exited``)."""
    resolved: bool | None = None
    reward: float | None = None
    steps: int | None = None
    finished_at: str = ""
    backend: str = ""

    def as_json(self) -> dict[str, Any]:
        """The row as the page reads it."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Query:
    """What a list request asks for (all fields checked by :func:`parse_query`)."""

    tab: Tab = "all"
    task: str = ""
    model: str = ""
    agent: str = ""
    status: str = ""
    text: str = ""
    sort: str = "finished_at"
    descending: bool = True
    page: int = 1
    per_page: int = 50
    ids: tuple[str, ...] = ()
    """Only these run ids, in this order (the Recent tab); empty: any."""


def _int(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        msg = f"{name} must be a whole number from {low} to {high}, got {raw!r}"
        raise QueryError(msg)
    return value


def _choice(params: Mapping[str, str], name: str, allowed: Sequence[str], default: str) -> str:
    value = params.get(name) or default
    if value not in allowed:
        msg = f"{name} must be one of {', '.join(allowed)}, got {value!r}"
        raise QueryError(msg)
    return value


def parse_query(params: Mapping[str, str]) -> Query:
    """The query of a list request's parameters.

    Raises:
        QueryError: A parameter is out of range or not one of its choices.
    """
    order = _choice(params, "order", ("asc", "desc"), "desc")
    status = params.get("status", "")
    if status:
        _choice(params, "status", STATUSES, "")
    ids = tuple(i for i in params.get("ids", "").split(",") if i)
    if len(ids) > MAX_PAGE:
        msg = f"ids lists at most {MAX_PAGE} runs, got {len(ids)}"
        raise QueryError(msg)
    tab = _choice(params, "tab", TABS, "all")
    return Query(
        tab=tab,  # type: ignore[arg-type]  # checked against TABS
        task=params.get("task", "").strip(),
        model=params.get("model", "").strip(),
        agent=params.get("agent", "").strip(),
        status=status,
        text=params.get("q", "").strip().lower(),
        sort=_choice(params, "sort", SORT_KEYS, "finished_at"),
        descending=order == "desc",
        page=_int(params, "page", 1, 1, 1_000_000),
        per_page=_int(params, "per_page", 50, 1, MAX_PAGE),
        ids=ids,
    )


def _status_matches(row: RunRow, status: str) -> bool:
    if status in ("running", "exited"):
        return row.state == status
    if status == "resolved":
        return row.resolved is True
    if status == "unresolved":
        return row.state == "finished" and row.resolved is not True
    return row.status == status


def _matches(row: RunRow, q: Query) -> bool:
    if q.tab != "all" and row.state != q.tab:
        return False
    if q.task and row.task_id != q.task:
        return False
    if q.model and row.model != q.model:
        return False
    if q.agent and row.agent != q.agent:
        return False
    if q.status and not _status_matches(row, q.status):
        return False
    if q.text:
        haystack = f"{row.run_id} {row.task_id} {row.model} {row.agent} {row.status}".lower()
        return q.text in haystack
    return True


def _sort_key(name: str) -> Any:
    def key(row: RunRow) -> tuple[bool, Any]:
        value = getattr(row, name)
        return (value is None, value if value is not None else 0)  # unknowns sort last

    return key


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a list, with what the filters can offer."""

    rows: list[RunRow]
    total: int
    """Rows matching the filters, on every page."""
    page: int
    pages: int
    counts: dict[str, int]
    """Rows per tab (before the tab filter), for the tab labels."""

    def as_json(self) -> dict[str, Any]:
        """The page as the browser reads it."""
        return {
            "rows": [r.as_json() for r in self.rows],
            "total": self.total,
            "page": self.page,
            "pages": self.pages,
            "counts": self.counts,
        }


def select(rows: Iterable[RunRow], q: Query) -> Page:
    """The page of ``rows`` that ``q`` asks for."""
    every = list(rows)
    counts: dict[str, int] = {tab: 0 for tab in TABS}
    counts["all"] = len(every)
    for row in every:
        counts[row.state] += 1
    if q.ids:
        by_id = {r.run_id: r for r in every}
        matching = [by_id[i] for i in q.ids if i in by_id and _matches(by_id[i], q)]
    else:
        matching = [r for r in every if _matches(r, q)]
        matching.sort(key=_sort_key(q.sort), reverse=q.descending)
        if q.descending:  # unknown values last in both orders
            known = [r for r in matching if getattr(r, q.sort) is not None]
            matching = known + [r for r in matching if getattr(r, q.sort) is None]
    pages = max(1, -(-len(matching) // q.per_page))
    start = (min(q.page, pages) - 1) * q.per_page
    return Page(
        matching[start : start + q.per_page], len(matching), min(q.page, pages), pages, counts
    )


def facets(rows: Iterable[RunRow]) -> dict[str, list[str]]:
    """The tasks, models and agents present, for the filter menus."""
    tasks, models, agents = set(), set(), set()
    for row in rows:
        tasks.add(row.task_id)
        models.add(row.model)
        agents.add(row.agent)
    return {"task": sorted(tasks), "model": sorted(models), "agent": sorted(agents)}
