"""Every citation of a specification resolves inside the repository.

The code, the README and the docs cite the project's specifications as ``docs/<page>.md`` followed
by what they point at: a numbered section (``docs/environment.md §6.2``, ``§6.12-§6.14``), a
threat (``docs/security.md A12``), an asset (``AS7``) or a numbered test (``docs/security.md test
37``, ``tests 43 and 44``). Each must name a page of ``docs/`` and a heading or numbered item that
exists there. Design notes kept outside the repository are never cited: a reader of the code has
only the repository.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Text files a reader meets: code, tests, the README, the docs and the build files.
_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".sh"}
_NAMES = {"Makefile", "Dockerfile"}

# The names of design notes that live outside the repository, cited as a file or with a section.
_OUTSIDE = re.compile(
    r"\b(?:ENV_DESIGN|DESIGN|SECURITY|PEERS|TECH_NOTES|STYLE)"
    r"(?:\.md\b|(?=[ \t]+(?:§|A\d|AS\d|tests?\s+\d|item\b))|(?=,\s+watchfiles))"
    r"|/work/shared"
)

# One cited target after a page: §6.2, A12, AS7, test 37 / tests 15, 16 and 19.
_TARGET = r"(?:§\s?\d+(?:\.\d+)*|AS\d+|A\d+|tests?\s+\d+[a-z]?(?:(?:,\s*|\s+and\s+)\d+[a-z]?)*)"
# Between targets: a comma, "and", a range dash, a line break inside a comment or docstring.
_JOIN = r"(?:\s*(?:,|and|-|–)?[\s#]*)"
_CITATION = re.compile(rf"\bdocs/([\w-]+\.md)((?:{_JOIN}{_TARGET})*)")
_ONE = re.compile(_TARGET)


def _files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    files = []
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        if path.is_file() and (path.suffix in _SUFFIXES or path.name in _NAMES):
            files.append(path)
    return files


def _scanned() -> list[Path]:
    """Every file that may cite, except this one (its patterns name what it looks for)."""
    here = Path(__file__).resolve()
    return [p for p in _files() if p.resolve() != here and "golden" not in p.parts]


@cache
def _anchors(page: str) -> frozenset[str]:
    """What a page offers to cite: section numbers of its headings, its A/AS items and tests."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    found: set[str] = set()
    for line in text.splitlines():
        heading = re.match(r"#+\s+(?:§\s?)?(\d+(?:\.\d+)*)\.?\s", line)
        if heading:
            found.add("§" + heading[1])
        item = re.match(r"\s*(?:[-*]\s+)?(?:\*\*|#+\s+|\|\s*)?(AS?\d+)\b", line)
        if item:
            found.add(item[1])
        test = re.match(r"\s*(?:[-*]\s+)?(?:\*\*)?(?:Test\s+)?(\d+[a-z]?)\.\s", line)
        if test:
            found.add("test " + test[1])
    return frozenset(found)


def _targets(tail: str) -> list[str]:
    """``§4.2 test 10, tests 15 and 16`` -> ``["§4.2", "test 10", "test 15", "test 16"]``."""
    out = []
    for match in _ONE.findall(tail):
        if match.startswith("test"):
            out.extend("test " + n for n in re.findall(r"\d+[a-z]?", match))
        else:
            out.append(match.replace("§ ", "§"))
    return out


def citations(text: str) -> list[tuple[str, str]]:
    """Every (page, target) that ``text`` cites; a page cited alone gives target ``""``."""
    found = []
    for match in _CITATION.finditer(text):
        targets = _targets(match[2])
        found.extend((match[1], t) for t in targets or [""])
    return found


def unresolved(text: str) -> list[str]:
    """The citations of ``text`` that name no page of docs/ or nothing that page has."""
    bad = []
    for page, target in citations(text):
        if not (ROOT / "docs" / page).is_file():
            bad.append(f"docs/{page} (no such page)")
        elif target and target not in _anchors(page):
            bad.append(f"docs/{page} {target}")
    return bad


def test_no_citation_of_notes_outside_the_repository() -> None:
    found = []
    for path in _scanned():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in _OUTSIDE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}: {match[0]}")
    assert not found, "citations of design notes outside the repository:\n" + "\n".join(found)


def test_every_docs_citation_resolves() -> None:
    bad = []
    for path in _scanned():
        text = path.read_text(encoding="utf-8", errors="replace")
        bad.extend(f"{path.relative_to(ROOT)}: {b}" for b in unresolved(text))
    assert not bad, "citations that resolve to nothing:\n" + "\n".join(sorted(set(bad)))


def test_the_specifications_are_cited() -> None:
    """The rewrite is real: the code cites each specification page, many times."""
    pages: dict[str, int] = {}
    for path in _scanned():
        for page, _ in citations(path.read_text(encoding="utf-8", errors="replace")):
            pages[page] = pages.get(page, 0) + 1
    for page in ("environment.md", "design.md", "security.md"):
        assert pages.get(page, 0) >= 10, (page, pages.get(page, 0))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(docs/environment.md §6.2)", [("environment.md", "§6.2")]),
        (
            "docs/environment.md §6.12-§6.14",
            [("environment.md", "§6.12"), ("environment.md", "§6.14")],
        ),
        ("docs/security.md A5, A6, A10", [("security.md", t) for t in ("A5", "A6", "A10")]),
        (
            "docs/security.md §4.8 tests 43 and 44",
            [("security.md", t) for t in ("§4.8", "test 43", "test 44")],
        ),
        ("docs/design.md\n    §8) say", [("design.md", "§8")]),
        ("see docs/managed.md.", [("managed.md", "")]),
    ],
)
def test_citations_are_read_whole(text: str, expected: list[tuple[str, str]]) -> None:
    assert citations(text) == expected


def test_a_missing_section_is_reported() -> None:
    assert unresolved("docs/environment.md §99.1") == ["docs/environment.md §99.1"]
    assert unresolved("docs/no-such-page.md §1") == ["docs/no-such-page.md (no such page)"]
