"""Field docstrings reach the JSON schemas exactly as pydantic's ``use_attribute_docstrings``
would put them there (srez_core.field_docs), for every model of the project."""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from srez_core.field_docs import docstrings_of, field_docstrings

PACKAGES = ("srez_env", "srez_daemon", "srez_client")


def _subclasses(cls: type[BaseModel]) -> Iterator[type[BaseModel]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def project_models() -> list[type[BaseModel]]:
    """Every pydantic model the project defines (each module imported once)."""
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    models = {
        m
        for m in _subclasses(BaseModel)
        if m.__module__.split(".")[0] in PACKAGES
        and not m.__pydantic_generic_metadata__.get("origin")
    }
    return sorted(models, key=lambda m: f"{m.__module__}.{m.__qualname__}")


MODELS = project_models()


def test_the_project_defines_models() -> None:
    assert len(MODELS) > 100


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.__module__}.{m.__qualname__}")
def test_docstrings_are_pydantics_own(model: type[BaseModel]) -> None:
    """What field_docs reads is what pydantic's extractor reads, class by class up the MRO."""
    expected: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        hooked = getattr(cls, "model_config", {}).get("json_schema_extra") is field_docstrings
        if issubclass(cls, BaseModel) and hooked:
            expected.update(extract_docstrings_from_cls(cls, use_inspect=True))
    assert docstrings_of(model) == expected


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.__module__}.{m.__qualname__}")
def test_documented_models_publish_their_docstrings(model: type[BaseModel]) -> None:
    """A model with field docstrings hooks field_docstrings (or its schema would lose them),
    and no model pays for pydantic's import-time extraction."""
    assert not model.model_config.get("use_attribute_docstrings")
    documented = {n for n in docstrings_of(model) if n in model.model_fields}
    if not documented:
        return
    assert model.model_config.get("json_schema_extra") is field_docstrings
    for mode in ("validation", "serialization"):
        properties = model.model_json_schema(mode=mode).get("properties", {})
        described = [p for p in properties.values() if "description" in p]
        assert described, f"{model.__qualname__}: no description in its {mode} schema"


SAMPLE = """
from pydantic import BaseModel, ConfigDict, Field
from srez_core.field_docs import field_docstrings

CONFIG = ConfigDict({config})


class Inner(BaseModel):
    model_config = CONFIG
    x: int = 0
    \"\"\"Inner x.\"\"\"


class Base(BaseModel):
    model_config = CONFIG
    a: int
    \"\"\"Inherited a.

        Second paragraph, dedented as pydantic does.
    \"\"\"
    b: str = "b"
    \"\"\"Inherited b, overridden below.\"\"\"


class Model(Base):
    b: str = "bb"
    \"\"\"Own b.\"\"\"
    c: int | None = Field(default=None, alias="cee")
    \"\"\"Aliased c.\"\"\"
    d: Inner = Inner()
    \"\"\"A nested model's field.\"\"\"
    e: int = Field(default=1, description="explicit wins")
    \"\"\"Not this one.\"\"\"
    f: list[int] = []
    g: int = 0  # a comment is no docstring
    h: float = Field(default=0.5, serialization_alias="aitch", deprecated=True)
    \"\"\"Deprecated, with a serialization alias.\"\"\"

    class Nested(BaseModel):
        model_config = CONFIG
        n: int = 0
        \"\"\"A nested class's field.\"\"\"
"""


def _sample(tmp_path: Path, name: str, config: str) -> ModuleType:
    """The sample models as a module read from a file (so its source can be read)."""
    path = tmp_path / f"{name}.py"
    path.write_text(SAMPLE.format(config=config))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_schemas_equal_use_attribute_docstrings_byte_for_byte(tmp_path: Path) -> None:
    """The hook and pydantic's option give the same JSON text, key order included, for
    defaults, aliases, $ref, inheritance, explicit descriptions, deprecation, nested classes."""
    lazy = _sample(tmp_path, "sample_lazy", "json_schema_extra=field_docstrings")
    eager = _sample(tmp_path, "sample_eager", "use_attribute_docstrings=True")
    for mode in ("validation", "serialization"):
        for name in ("Model", "Base"):
            ours = json.dumps(getattr(lazy, name).model_json_schema(mode=mode), indent=1)
            theirs = json.dumps(getattr(eager, name).model_json_schema(mode=mode), indent=1)
            assert ours == theirs
        nested = lazy.Model.Nested.model_json_schema()
        assert nested["properties"]["n"]["description"] == "A nested class's field."
    ours = json.dumps(lazy.Model.model_json_schema())
    assert "Second paragraph, dedented" in ours
    assert "explicit wins" in ours
    assert "Not this one" not in ours


def test_a_class_without_source_has_no_docstrings() -> None:
    namespace: dict[str, object] = {}
    exec(  # a class defined from a string has no file to read
        "from pydantic import BaseModel\nclass Loose(BaseModel):\n    x: int = 0\n    '''doc'''\n",
        namespace,
    )
    loose = namespace["Loose"]
    assert isinstance(loose, type)
    assert docstrings_of(loose) == {}
