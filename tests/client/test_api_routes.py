"""Every request of the daemon client goes through a route of the daemon's route table.

The client's request helpers take a :class:`~srez_daemon.protocol.routes.Route` and read its
method and path from it, so a call cannot name a route the daemon does not serve. This test reads
the client modules' source and holds them to that: every helper call passes a route of the table
(or hands on its own ``Route`` parameter), every session call takes its URL and method from one,
no ``/api/`` path is written by hand, and every route of the table has a caller.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from types import ModuleType

import pytest

from srez_client.daemon_client import api, connection, stream
from srez_daemon.protocol import routes
from srez_daemon.protocol.routes import ROUTES, Route

MODULES = (api, connection, stream)
HELPERS = frozenset({"_response", "_json", "websocket", "_url", "_unreachable"})
"""The client's helpers whose first argument is the route."""
SESSION_CALLS = frozenset({"request", "ws_connect"})
"""What the client may call on its aiohttp session (``get``, ``post``... would name a method)."""


def _tree(module: ModuleType) -> ast.Module:
    return ast.parse(inspect.getsource(module))


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _route_params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters annotated ``routes.Route``: a helper hands them on."""
    return {
        arg.arg
        for arg in [*function.args.args, *function.args.kwonlyargs]
        if arg.annotation is not None and ast.unparse(arg.annotation) == "routes.Route"
    }


def _table_route(node: ast.expr) -> Route | None:
    """The table's route a ``routes.NAME`` expression names."""
    if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "routes":
        value = getattr(routes, node.attr, None)
        return value if isinstance(value, Route) and value in ROUTES else None
    return None


def _is_route(node: ast.expr, params: set[str]) -> bool:
    return _table_route(node) is not None or (isinstance(node, ast.Name) and node.id in params)


def _calls(tree: ast.Module) -> Iterator[tuple[ast.Call, set[str]]]:
    """Every call, with the Route parameters of the function it is in."""
    for function in _functions(tree):
        params = _route_params(function)
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                yield node, params


def _prose(tree: ast.Module) -> set[int]:
    """The string statements: docstrings of modules, classes, functions and attributes."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_no_path_is_written_by_hand(module: ModuleType) -> None:
    tree = _tree(module)
    prose = _prose(tree)
    paths = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and "/api/" in node.value
        and id(node) not in prose
    ]
    assert paths == []


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_helper_call_passes_a_route_of_the_table(module: ModuleType) -> None:
    offenders = [
        ast.unparse(call)
        for call, params in _calls(_tree(module))
        if isinstance(call.func, ast.Attribute)
        and call.func.attr in HELPERS
        and not (call.args and _is_route(call.args[0], params))
    ]
    assert offenders == []


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_session_call_takes_method_and_url_from_one_route(module: ModuleType) -> None:
    offenders = []
    for call, _ in _calls(_tree(module)):
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and ast.unparse(func.value.func) == "self._http"
        ):
            continue
        url = call.args[1] if func.attr == "request" else call.args[0]
        route = ast.unparse(url.args[0]) if isinstance(url, ast.Call) else None
        good_url = isinstance(url, ast.Call) and ast.unparse(url.func) == "self._url"
        good_method = func.attr == "ws_connect" or ast.unparse(call.args[0]) == f"{route}.method"
        if func.attr not in SESSION_CALLS or not (good_url and good_method):
            offenders.append(ast.unparse(call).splitlines()[0])
    assert offenders == []


def test_websockets_are_opened_on_websocket_routes_only() -> None:
    opened = {
        route.name
        for module in MODULES
        for call, _ in _calls(_tree(module))
        if isinstance(call.func, ast.Attribute) and call.func.attr == "websocket"
        if (route := _table_route(call.args[0])) is not None
    }
    assert opened == {r.name for r in ROUTES if r.upgrades}


def test_every_route_of_the_table_has_a_caller() -> None:
    used = {
        route.name
        for module in MODULES
        for node in ast.walk(_tree(module))
        if isinstance(node, ast.expr) and (route := _table_route(node)) is not None
    }
    assert used == {r.name for r in ROUTES}
