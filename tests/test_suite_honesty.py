"""Every test checks something: an AST scan of the suite (``tests/**``).

A test function (``test_*``, at module level or in a ``Test*`` class) must assert: an ``assert``,
``pytest.raises`` / ``pytest.fail`` / ``pytest.warns``, ``raise AssertionError``, a mock's
``assert_*`` method, or a call to a helper that does one of these. Helpers are found by name
over every module under ``tests/`` (the test modules and the kits): a call ``kit.expect(...)``
or ``expect(...)`` counts when some function named ``expect`` there asserts, directly or through
another such helper. A name lookup, not a resolution: two helpers of one name are one to it.

And no test may ``return`` before its first asserting statement (the vacuous case: an early
``return`` under an ``if`` that skips every check and passes). A test that cannot check
something here skips, with its reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent

PYTEST_CHECKS = frozenset({"raises", "fail", "warns", "deprecated_call"})
"""The ``pytest.<name>`` calls that are checks."""


def _calls(node: ast.AST) -> Iterator[str]:
    """The names called anywhere under ``node`` (``f(...)`` and ``x.f(...)`` both give f)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if isinstance(sub.func, ast.Name):
                yield sub.func.id
            elif isinstance(sub.func, ast.Attribute):
                yield sub.func.attr


def _checks_directly(node: ast.AST) -> bool:
    """Whether an assertion is written under ``node`` itself (no helper looked up)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            return True
        if isinstance(sub, ast.Raise) and sub.exc is not None:
            exc = sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc
            if isinstance(exc, ast.Name) and exc.id == "AssertionError":
                return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            owner = sub.func.value
            if sub.func.attr.startswith("assert_"):  # unittest.mock's assert_called_with & co
                return True
            if (
                isinstance(owner, ast.Name)
                and owner.id == "pytest"
                and sub.func.attr in PYTEST_CHECKS
            ):
                return True
    return False


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def asserting_helpers(trees: Iterable[ast.AST]) -> frozenset[str]:
    """The names of the functions (any module, any nesting) that assert, directly or through
    another asserting function."""
    called: dict[str, set[str]] = {}
    asserting: set[str] = set()
    for tree in trees:
        for fn in _functions(tree):
            if _checks_directly(fn):
                asserting.add(fn.name)
            called.setdefault(fn.name, set()).update(_calls(fn))
    grew = True
    while grew:
        grew = False
        for name, calls in called.items():
            if name not in asserting and calls & asserting:
                asserting.add(name)
                grew = True
    return frozenset(asserting)


def _checks(node: ast.AST, helpers: frozenset[str]) -> bool:
    return _checks_directly(node) or any(name in helpers for name in _calls(node))


def _returns(node: ast.AST) -> bool:
    """Whether a ``return`` of this function is under ``node`` (nested functions excluded)."""
    if isinstance(node, ast.Return):
        return True
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
        return False
    return any(_returns(child) for child in ast.iter_child_nodes(node))


def _tests(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (
                fn
                for fn in node.body
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
                and fn.name.startswith("test")
            )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            yield node


def offences(tree: ast.Module, helpers: frozenset[str]) -> list[str]:
    """``<test>:<line>: <what is wrong>`` for each test of ``tree`` that checks nothing, or may
    return before its first check."""
    found: list[str] = []
    for test in _tests(tree):
        where = f"{test.name}:{test.lineno}"
        if not _checks(test, helpers):
            found.append(f"{where}: asserts nothing (no assert, pytest.raises/fail, or helper)")
            continue
        for stmt in test.body:
            if _checks(stmt, helpers):
                break
            if _returns(stmt):
                found.append(f"{where}: returns before its first assertion (line {stmt.lineno})")
                break
    return found


def _suite() -> dict[Path, ast.Module]:
    return {
        path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for path in sorted(TESTS.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _scan(source: str, kit: str = "") -> list[str]:
    tree, kit_tree = ast.parse(source), ast.parse(kit)
    return offences(tree, asserting_helpers([tree, kit_tree]))


def test_suite_every_test_asserts_and_none_returns_before_checking() -> None:
    suite = _suite()
    assert len(suite) > 100  # the scan saw the suite, not an empty folder
    helpers = asserting_helpers(suite.values())
    found = [
        f"{path.relative_to(TESTS.parent)}::{offence}"
        for path, tree in suite.items()
        for offence in offences(tree, helpers)
    ]
    assert found == [], "tests that can pass without checking anything:\n" + "\n".join(found)


def test_suite_scan_flags_a_test_without_assertion() -> None:
    source = "def test_nothing():\n    x = compute()\n    print(x)\n"
    assert _scan(source) == [
        "test_nothing:1: asserts nothing (no assert, pytest.raises/fail, or helper)"
    ]


def test_suite_scan_flags_the_vacuous_early_return() -> None:
    source = (
        "def test_vacuous():\n"
        "    rows = load()\n"
        "    if not rows:\n"
        "        return\n"
        "    assert rows[0] == 1\n"
    )
    assert _scan(source) == ["test_vacuous:1: returns before its first assertion (line 3)"]


def test_suite_scan_flags_methods_of_test_classes_and_async_tests() -> None:
    source = (
        "class TestThing:\n"
        "    def test_method(self):\n"
        "        run()\n"
        "async def test_async():\n"
        "    await run()\n"
    )
    assert [o.split(":")[0] for o in _scan(source)] == ["test_method", "test_async"]


def test_suite_scan_passes_real_checks() -> None:
    source = (
        "import pytest\n"
        "def test_assert():\n"
        "    assert f() == 1\n"
        "def test_raises():\n"
        "    with pytest.raises(ValueError):\n"
        "        f()\n"
        "def test_fail():\n"
        "    if f():\n"
        "        pytest.fail('f held')\n"
        "def test_mock(m):\n"
        "    m.assert_called_once_with(1)\n"
        "def test_helper(kit):\n"
        "    kit.expect_screen('hi')\n"
        "def test_indirect():\n"
        "    outer()\n"
        "def test_returns_after_checking():\n"
        "    assert f()\n"
        "    if g():\n"
        "        return\n"
        "    assert h()\n"
        "def test_nested_return_is_not_the_tests():\n"
        "    def pick(x):\n"
        "        return x\n"
        "    assert pick(1) == 1\n"
    )
    kit = (
        "def expect_screen(text):\n"
        "    if text not in screen():\n"
        "        raise AssertionError(text)\n"
        "def outer():\n"
        "    inner()\n"
        "def inner():\n"
        "    assert g()\n"
    )
    assert _scan(source, kit) == []


def test_suite_scan_does_not_count_a_helper_that_only_computes() -> None:
    kit = "def compute():\n    return 1\n"
    source = "def test_calls_a_pure_helper():\n    compute()\n"
    assert len(_scan(source, kit)) == 1
