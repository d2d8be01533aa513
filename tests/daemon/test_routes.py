"""The route table (``srez_daemon.protocol.routes``) is sound, is the OpenAPI document's source,
and states the bounds the handlers enforce."""

from __future__ import annotations

from collections import Counter
from typing import get_args

import pytest
from processkit import loaded_by
from pydantic import BaseModel

from srez_daemon.app import check_bindings
from srez_daemon.openapi import openapi_document
from srez_daemon.protocol import api, routes
from srez_daemon.protocol.routes import ROUTES, ModelName, Route
from srez_daemon.services.pty import MAX_SIDE
from srez_daemon.stream import MAX_PAGE_LIMIT

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def test_every_route_is_listed_once_under_its_own_name() -> None:
    declared = [value for value in vars(routes).values() if isinstance(value, Route)]
    assert sorted(r.name for r in declared) == sorted(r.name for r in ROUTES)
    assert Counter(r.name for r in ROUTES).most_common(1)[0][1] == 1
    assert Counter((r.method, r.path) for r in ROUTES).most_common(1)[0][1] == 1
    assert all(r.path.startswith("/api/") and r.name.isidentifier() for r in ROUTES)


def test_the_methods_of_one_path_share_who_may_call_them() -> None:
    access: dict[str, set[str]] = {}
    for route in ROUTES:
        access.setdefault(route.path, set()).add(route.access)
    assert all(len(levels) == 1 for levels in access.values())
    assert {r.path for r in ROUTES if r.access == "open"} == {"/api/health"}
    assert {r.path for r in ROUTES if r.access == "admin"} == {"/api/exec", "/api/pty"}


def test_every_model_the_table_names_is_a_wire_model() -> None:
    for name in get_args(ModelName):
        model = getattr(api, name)
        assert isinstance(model, type) and issubclass(model, BaseModel), name
    named = {a.model for r in ROUTES for a in r.answers} | {r.body for r in ROUTES}
    assert named - {None} == set(get_args(ModelName))


def test_websocket_routes_are_gets_that_upgrade() -> None:
    assert {r.name for r in ROUTES if r.upgrades} == {"stream", "pty"}
    assert all(r.method == "GET" for r in ROUTES if r.upgrades)


def test_the_documented_bounds_are_the_ones_the_handlers_enforce() -> None:
    def bound(route: Route, param: str) -> object:
        (schema,) = [p.schema for p in route.params if p.name == param]
        return schema["maximum"]

    assert bound(routes.DIALOG, "limit") == MAX_PAGE_LIMIT
    assert bound(routes.DIALOG, "offset") == bound(routes.STREAM, "offset") == 10**18 - 1
    assert bound(routes.PTY, "cols") == bound(routes.PTY, "rows") == MAX_SIDE


def test_openapi_paths_and_methods_are_the_route_table() -> None:
    document = openapi_document("0")
    operations = {
        (method.upper(), path, op["operationId"])
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in METHODS
    }
    assert operations == {(r.method, r.path, r.name) for r in ROUTES}
    for route in ROUTES:
        op = document["paths"][route.path][route.method.lower()]
        assert ("security" in op) == (route.access == "open")
        assert ("401" in op["responses"]) == (route.access != "open")
        assert {str(a.status) for a in route.answers} <= set(op["responses"])
        assert [p["name"] for p in op.get("parameters", [])] == [p.name for p in route.params]


def test_openapi_document_validates() -> None:
    from openapi_spec_validator import validate
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

    document = openapi_document("0")
    validate(document)  # type: ignore[arg-type]
    # the control: the validator does refuse a document of ours with one answer-less operation
    broken = {**document, "paths": {**document["paths"]}}
    path, operations = next(iter(document["paths"].items()))
    method = next(iter(operations))
    broken["paths"][path] = {**operations, method: {**operations[method], "responses": None}}
    with pytest.raises(OpenAPIValidationError):
        validate(broken)  # type: ignore[arg-type]


def test_bindings_must_cover_the_table_once() -> None:
    names = [r.name for r in ROUTES]
    check_bindings(ROUTES, names[:1], names[1:])
    with pytest.raises(ValueError, match=r"unbound \['run'\]"):
        check_bindings(ROUTES, ["health"], [n for n in names[1:] if n != "run"])
    with pytest.raises(ValueError, match=r"unknown \['nope'\]"):
        check_bindings(ROUTES, names, ["nope"])
    with pytest.raises(ValueError, match=r"bound twice \['health'\]"):
        check_bindings(ROUTES, names, ["health"])


def test_the_app_and_its_table_load_without_pydantic() -> None:
    # the daemon registers its routes before it listens, and answers health before pydantic loads
    assert loaded_by("srez_daemon.app", ("pydantic", "srez_env")) == []
