"""The OpenAPI 3.1 document of the public API, rendered from the route table and the wire models
(docs/design.md §4).

Every operation comes from a :class:`~srez_daemon.protocol.routes.Route`, every schema from the
models of :mod:`srez_daemon.protocol.api` the routes name, so the document lists exactly the
routes the daemon serves. It is held to the server by a schemathesis run against a live daemon
(``tests/daemon/test_openapi_conformance.py``): every status, header and body the server sends
must be one the document describes, and what the document forbids the server must refuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from srez_daemon.protocol import api
from srez_daemon.protocol.routes import (
    JSON_MEDIA,
    ROUTES,
    Answer,
    ModelName,
    Param,
    Route,
    refused,
)

REF: Final = "#/components/schemas/{model}"
UNAUTHORIZED: Final = refused(401, "missing or wrong token")
FOREIGN_HOST: Final = refused(403, "foreign Host or Origin")


def model_class(name: ModelName) -> type[BaseModel]:
    """The model of :mod:`srez_daemon.protocol.api` a route names."""
    model = getattr(api, name)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        msg = f"the route table names {name!r}, which is not a model of srez_daemon.protocol.api"
        raise TypeError(msg)
    return model


def models_of(routes: Iterable[Route]) -> list[type[BaseModel]]:
    """The models the routes' bodies and answers are made of (the refusals' ``ErrorResponse``
    among them), sorted by name."""
    names: set[ModelName] = {"ErrorResponse"}
    for route in routes:
        names.update(answer.model for answer in route.answers if answer.model is not None)
        if route.body is not None:
            names.add(route.body)
    return [model_class(name) for name in sorted(names)]


def _ref(model: ModelName) -> dict[str, str]:
    return {"$ref": REF.format(model=model)}


def _answer(answer: Answer) -> dict[str, Any]:
    out: dict[str, Any] = {"description": answer.description}
    if answer.model is not None:
        out["content"] = {JSON_MEDIA: {"schema": _ref(answer.model)}}
    elif answer.media is not None:
        schema = {"type": "object" if answer.media == JSON_MEDIA else "string"}
        out["content"] = {answer.media: {"schema": schema}}
    return out


def _param(param: Param) -> dict[str, Any]:
    return {
        "name": param.name,
        "in": param.where,
        "required": param.required,
        "schema": dict(param.schema),
        "description": param.description,
    }


def operation(route: Route) -> dict[str, Any]:
    """One route's operation: its own answers, and the refusals its access level brings (401
    unless it is open, 403 for a foreign Host or Origin unless the route says more)."""
    answers = list(route.answers)
    if route.access != "open":
        answers.append(UNAUTHORIZED)
    if all(answer.status != 403 for answer in answers):
        answers.append(FOREIGN_HOST)
    op: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "responses": {str(answer.status): _answer(answer) for answer in answers},
    }
    if route.params:
        op["parameters"] = [_param(param) for param in route.params]
    if route.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {JSON_MEDIA: {"schema": _ref(route.body)}},
        }
    if route.access == "open":
        op["security"] = []
    return op


def openapi_document(version: str) -> dict[str, Any]:
    """The whole document: paths, the bearer scheme and the component schemas."""
    models = models_of(ROUTES)
    _, defs = models_json_schema([(m, "serialization") for m in models], ref_template=REF)
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "srez run daemon",
            "version": version,
            "description": "One daemon per run: the dialog, the diff, the reference after the agent phase, the grade, logs, exec and a pty.",
        },
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
