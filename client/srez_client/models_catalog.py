"""The model catalogue: ``notes/available_models.md``, a Markdown table read by the TUI's model
picker and by ``srez managed create`` (its ``default`` rows are the models a new managed run gets).

The table is meant to be edited by hand, so reading it never fails on a bad row: each row that
does not parse is skipped and reported in :attr:`Catalog.problems`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

CATALOG_ENV: Final = "SREZ_MODELS_FILE"
"""Environment variable naming another catalogue file."""
SLUG_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]*(/[A-Za-z0-9._:@+-]+)+$")
"""A litellm slug: ``provider/model`` (more ``/`` parts are allowed, as in ``openrouter/a/b``)."""


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One row of the catalogue."""

    slug: str
    provider: str = ""
    default: bool = False
    price_in: float | None = None
    """USD per million input tokens, used only when litellm does not know the model."""
    price_out: float | None = None
    """USD per million output tokens."""
    note: str = ""


@dataclass(frozen=True, slots=True)
class Catalog:
    """The rows that parsed, and one message per row that did not."""

    models: tuple[ModelEntry, ...]
    problems: tuple[str, ...] = field(default=())

    @property
    def defaults(self) -> tuple[str, ...]:
        """Slugs of the rows marked ``default``."""
        return tuple(m.slug for m in self.models if m.default)

    def get(self, slug: str) -> ModelEntry | None:
        """The row of ``slug``, if the catalogue has one."""
        return next((m for m in self.models if m.slug == slug), None)


def default_catalog_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$SREZ_MODELS_FILE``, else ``notes/available_models.md`` of the checkout or the cwd."""
    env = os.environ if environ is None else environ
    if env.get(CATALOG_ENV):
        return Path(env[CATALOG_ENV])
    checkout = Path(__file__).resolve().parents[2] / "notes" / "available_models.md"
    return checkout if checkout.is_file() else Path("notes") / "available_models.md"


def valid_slug(slug: str) -> bool:
    """Whether ``slug`` looks like a litellm model slug (``provider/model``)."""
    return bool(SLUG_RE.match(slug)) and len(slug) <= 200


def parse_catalog(text: str) -> Catalog:
    """Parses the first table whose header starts with ``slug``; other lines are ignored."""
    models: list[ModelEntry] = []
    problems: list[str] = []
    seen: set[str] = set()
    header: list[str] | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line.startswith("|"):
            if header is not None and models:
                break  # the table ended
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            if cells and cells[0].lower() == "slug":
                header = [c.lower() for c in cells]
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue  # the separator row
        row = dict(zip(header, cells, strict=False))
        entry, problem = _entry(row)
        if problem is not None:
            problems.append(f"line {lineno}: {problem}")
        elif entry is not None and entry.slug in seen:
            problems.append(f"line {lineno}: {entry.slug} is listed twice; the first row is kept")
        elif entry is not None:
            seen.add(entry.slug)
            models.append(entry)
    return Catalog(tuple(models), tuple(problems))


def load_catalog(path: Path | None = None) -> Catalog:
    """Reads the catalogue; a missing file is an empty catalogue with one problem."""
    path = path or default_catalog_path()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        return Catalog((), (f"cannot read {path}: {e.strerror or e}",))
    return parse_catalog(text)


def _entry(row: dict[str, str]) -> tuple[ModelEntry | None, str | None]:
    slug = row.get("slug", "")
    if not valid_slug(slug):
        return None, f"{slug!r} is not a model slug (expected provider/model, e.g. openai/gpt-4o)"
    prices: list[float | None] = []
    for column in ("price_in", "price_out"):
        cell = row.get(column, "")
        if not cell:
            prices.append(None)
            continue
        try:
            value = float(cell)
        except ValueError:
            return None, f"{column} of {slug} is {cell!r}, not a number"
        if value < 0:
            return None, f"{column} of {slug} is negative"
        prices.append(value)
    default = row.get("default", "").lower() in ("yes", "y", "true", "x", "1")
    return (
        ModelEntry(
            slug=slug,
            provider=row.get("provider", ""),
            default=default,
            price_in=prices[0],
            price_out=prices[1],
            note=row.get("note", ""),
        ),
        None,
    )


__all__ = [
    "CATALOG_ENV",
    "Catalog",
    "ModelEntry",
    "default_catalog_path",
    "load_catalog",
    "parse_catalog",
    "valid_slug",
]
