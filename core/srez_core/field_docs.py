"""Field docstrings in a model's JSON schema, read when a schema is asked for, not at import.

House style documents every pydantic field by a docstring under it, and those docstrings are
the descriptions of the JSON schemas the project publishes (the OpenAPI document, the dialog
schema, the tools' parameters). pydantic's own ``use_attribute_docstrings`` reads them when each
class is created: on Python 3.11 it walks the frames, tokenises the class's block and parses it,
about a millisecond per model, which made a tenth of a second of every command that imports the
protocol. Only a JSON schema ever reads a description, so :func:`field_docstrings`, given as a
model's ``json_schema_extra``, reads them then: each module's source is parsed once, the class is
found by its qualified name, and each field documented by a docstring gets it as its description
unless ``Field(description=...)`` gave one. ``tests/test_field_docs.py`` holds every model's
schema equal to the one ``use_attribute_docstrings`` gives.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from pathlib import Path
from typing import Any


def field_docstrings(schema: dict[str, Any], model: type[Any]) -> None:
    """Sets the description of each property of ``schema`` from its field's docstring.

    A ``json_schema_extra`` hook: pydantic calls it with a model's schema and the model.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    fields: dict[str, Any] = getattr(model, "model_fields", {})
    for name, doc in docstrings_of(model).items():
        info = fields.get(name)
        if info is None or info.description is not None:
            continue
        for key in (info.serialization_alias, info.alias, info.validation_alias, name):
            if isinstance(key, str) and isinstance(properties.get(key), dict):
                properties[key]["description"] = doc  # pydantic sorts the keys after
                break


_MEMO: dict[type[Any], dict[str, str]] = {}


def docstrings_of(model: type[Any]) -> dict[str, str]:
    """The docstring under each annotated attribute of ``model`` and of the classes it
    inherits from (a subclass's own docstring wins).

    As with pydantic's option, a class's docstrings count only where its configuration asks for
    them: a field inherited from another library's model keeps that library's description.
    """
    if model in _MEMO:
        return _MEMO[model]
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        config = getattr(cls, "model_config", None)
        if isinstance(config, dict) and config.get("json_schema_extra") is field_docstrings:
            docs.update(_own_docstrings(cls))
    _MEMO[model] = docs
    return docs


def _own_docstrings(cls: type[Any]) -> dict[str, str]:
    node = _class_node(cls)
    if node is None:
        return {}
    docs: dict[str, str] = {}
    for before, statement in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(before, ast.AnnAssign)
            and isinstance(before.target, ast.Name)
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            docs[before.target.id] = inspect.cleandoc(statement.value.value)
    return docs


def _class_node(cls: type[Any]) -> ast.ClassDef | None:
    """The definition of ``cls`` in its module's source, found by its qualified name (a class
    defined in a function, or without a readable source, has none)."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if path is None or "<locals>" in cls.__qualname__:
        return None
    scope: list[ast.stmt] = _module_tree(path).body
    node: ast.ClassDef | None = None
    for name in cls.__qualname__.split("."):
        node = next(
            (n for n in scope if isinstance(n, ast.ClassDef) and n.name == name),
            None,
        )
        if node is None:
            return None
        scope = node.body
    return node


@functools.cache
def _module_tree(path: str) -> ast.Module:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])
