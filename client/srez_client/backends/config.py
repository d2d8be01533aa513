"""How backends are configured: the settings they share, and the base of each backend's own config.

:class:`BackendSettings` is read once from the environment (``SREZ_STATE``, ``--any``) and keeps
the ``SREZ_*`` variables, so that each backend's config (:class:`BackendConfig` subclasses, one in
each backend's folder, ``kind: Literal["<name>"]``) picks its own variables from them: the shared
settings never grow a field for one backend. This module imports no backend; the registry
(:mod:`srez_client.backends.registry`) pairs each config with the class it configures.

A config that cannot be built raises :class:`~srez_client.errors.UsageError` with one line per
problem that names the variable (or field), the value and what is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from srez_client.errors import UsageError
from srez_core.field_docs import field_docstrings


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """What every backend is configured from; built once by :meth:`from_env`."""

    state_dir: Path
    """Where backends keep their state (``$SREZ_STATE``, default ``~/.local/state/srez``)."""
    any_owner: bool = False
    """Act on runs another owner or state launched (``--any``)."""
    variables: Mapping[str, str] = field(default_factory=dict)
    """The ``SREZ_*`` variables of the environment; each backend's config reads its own."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, any_owner: bool = False) -> BackendSettings:
        """Read ``SREZ_STATE`` (else ``$HOME/.local/state/srez``) and keep the ``SREZ_*``
        variables of an environment mapping."""
        state = environ.get("SREZ_STATE", "").strip()
        if state:
            state_dir = Path(state).expanduser()
        else:
            home = environ.get("HOME", "").strip() or os.path.expanduser("~")  # noqa: PTH111
            state_dir = Path(home) / ".local" / "state" / "srez"
        variables = {k: v for k, v in environ.items() if k.startswith("SREZ_")}
        return cls(state_dir, any_owner, variables)


class BackendConfig(BaseModel):
    """The settings every backend has; each backend subclasses it with ``kind`` and its own.

    Subclasses name the environment variables their fields are read from in :attr:`ENV`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=field_docstrings)

    ENV: ClassVar[Mapping[str, str]] = {}
    """Field name -> the ``SREZ_*`` variable it is read from (an empty variable is unset)."""
    OPTIONS: ClassVar[Mapping[str, str]] = {}
    """Field name -> a command-line option of the run commands that sets it (``--ray-address``);
    the option stands for the field's variable in :attr:`ENV`, and wins over it."""

    kind: str
    """The backend's name (a ``Literal`` in each subclass)."""
    state_dir: Path
    """The client's state folder (``$SREZ_STATE``)."""
    any_owner: bool = False
    """Act on runs this state did not launch (``--any``)."""

    @classmethod
    def of(cls, config: BackendConfig) -> Self:
        """``config``, checked to be this backend's (what its ``from_config`` is given).

        Raises:
            TypeError: If it is another backend's config.
        """
        if not isinstance(config, cls):
            msg = f"the {config.kind} config {type(config).__name__} is not a {cls.__name__}"
            raise TypeError(msg)
        return config

    def options(self) -> dict[str, Any]:
        """The settings besides ``kind`` and ``state_dir``, by field name: each backend's
        constructor takes them as keyword arguments of the same names."""
        fields = type(self).model_fields
        return {name: getattr(self, name) for name in fields if name not in ("kind", "state_dir")}

    @classmethod
    def from_settings(cls, settings: BackendSettings) -> Self:
        """This backend's config: the shared settings plus its own variables (:attr:`ENV`).

        Raises:
            UsageError: If a variable has a value the backend does not accept.
        """
        values: dict[str, Any] = {"state_dir": settings.state_dir, "any_owner": settings.any_owner}
        read = {}
        for name, variable in cls.ENV.items():
            if text := settings.variables.get(variable, "").strip():
                values[name] = text
                read[name] = variable
        return cls.parse(values, variables=read)

    @classmethod
    def parse(
        cls, values: Mapping[str, Any], *, variables: Mapping[str, str] | None = None
    ) -> Self:
        """Validate ``values`` (``kind`` may be left out).

        Args:
            values: Field name -> value.
            variables: Field name -> the variable its value was read from (for messages).

        Raises:
            UsageError: One line per problem: the variable or field, the value, what is allowed.
        """
        try:
            return cls.model_validate(dict(values))
        except ValidationError as e:
            problems = "; ".join(cls._problem(error, variables or {}) for error in e.errors())
            raise UsageError(problems) from e

    @classmethod
    def _problem(cls, error: ErrorDetails, variables: Mapping[str, str]) -> str:
        name = str(error["loc"][0]) if error["loc"] else ""
        kind = cls.model_fields["kind"].default
        source = variables.get(name) or f"{kind} backend setting {name}"
        context = error.get("ctx") or {}
        if error["type"] == "extra_forbidden":
            allowed = ", ".join(n for n in cls.model_fields if n != "kind")
            return f"the {kind} backend has no setting {name!r} (it has: {allowed})"
        if error["type"] == "value_error":
            return f"{source}: {context['error']}"
        if error["type"] == "missing":
            return f"{source} is required"
        if error["type"] == "literal_error":
            return f"{source}={error['input']!r} must be one of {context['expected']}"
        message = error["msg"][:1].lower() + error["msg"][1:]
        return f"{source}={error['input']!r}: {message}"
