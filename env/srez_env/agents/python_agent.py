"""A Python agent named by import path: ``--agent package.module:AgentClass``.

The class is imported (from ``sys.path``, then from the current folder, as ``python -m`` would)
and called with the keywords its ``__init__`` accepts among ``task_id`` and ``run_seed`` (public
facts only: a Python agent is never handed the task file). The instance must have ``act``; its
``name`` (or, without one, the class name in lower case) names its results folder, so, as for a
custom command, it must be 1 to 40 of ``a-z 0-9 . _ -`` and never a built-in agent's name.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Final, cast

from srez_env.agent_contract import BUILTIN_AGENT_NAMES, CUSTOM_NAME, Agent
from srez_env.errors import EnvError

IMPORT_PATH: Final = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*)$")
"""``module.path:ClassName``."""
_RESERVED_PREFIXES: Final = ("replay", "cmd", "mcp")
"""Spec prefixes that are not modules (``replay:FILE``, ``cmd:NAME``, ``mcp:NAME``)."""


class PythonAgentError(EnvError, ValueError):
    """A Python agent named by import path cannot be loaded or used."""


def import_path(spec: str) -> tuple[str, str] | None:
    """(module, class) of a ``module:Class`` spec; None for any other spec."""
    found = IMPORT_PATH.match(spec)
    if found is None or found.group(1) in _RESERVED_PREFIXES:
        return None
    return found.group(1), found.group(2)


def module_source(module: str) -> Path | None:
    """The file or package folder of the module's top package, found on ``sys.path`` or in
    the current folder, for a process started elsewhere (the ``local`` backend's agent, which
    is shown it and nothing else of its folder); None if it is not found."""
    top = module.split(".")[0]
    for entry in [*sys.path, str(Path.cwd())]:
        base = Path(entry) if entry else Path.cwd()
        for found in (base / f"{top}.py", base / top):
            if found.is_file() or (found / "__init__.py").is_file():
                return found.resolve()
    return None


def _import(module: str, spec: str) -> object:
    top = module.split(".")[0]
    for attempt in range(2):
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != top:
                msg = f"--agent {spec}: importing {module!r} failed: {e}"
                raise PythonAgentError(msg) from e
            if attempt or str(Path.cwd()) in sys.path:
                msg = (
                    f"--agent {spec}: no module {top!r} on the Python path or in the current folder"
                )
                raise PythonAgentError(msg) from e
            sys.path.append(str(Path.cwd()))  # as `python -m` finds modules of the current folder
        except Exception as e:  # the module's own code failed
            msg = f"--agent {spec}: importing {module!r} failed: {type(e).__name__}: {e}"
            raise PythonAgentError(msg) from e
    raise AssertionError  # pragma: no cover - the loop returns or raises


def load_python_agent(spec: str, *, task_id: str, run_seed: int) -> Agent:
    """Import and build the agent ``spec`` names (see the module docstring).

    Raises:
        PythonAgentError: If the module or class is missing, the class cannot be built, lacks
            ``act``, or its name cannot be an agent's.
    """
    parts = import_path(spec)
    if parts is None:
        msg = f"--agent {spec!r} is not an import path (package.module:AgentClass)"
        raise PythonAgentError(msg)
    module_name, class_name = parts
    module = _import(module_name, spec)
    cls = getattr(module, class_name, None)
    if not inspect.isclass(cls):
        msg = f"--agent {spec}: module {module_name!r} has no class {class_name!r}"
        raise PythonAgentError(msg)
    try:
        accepted = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        accepted = {}  # type: ignore[assignment]
    offered = {"task_id": task_id, "run_seed": run_seed}
    try:
        agent = cls(**{k: v for k, v in offered.items() if k in accepted})
    except Exception as e:
        msg = f"--agent {spec}: {class_name}() failed: {type(e).__name__}: {e}"
        raise PythonAgentError(msg) from e
    if not callable(getattr(agent, "act", None)):
        msg = f"--agent {spec}: {class_name} has no act(observation) method"
        raise PythonAgentError(msg)
    name = getattr(agent, "name", None) or class_name.lower()
    if not isinstance(name, str) or not CUSTOM_NAME.fullmatch(name):
        msg = f"--agent {spec}: agent name {name!r} must be 1 to 40 of a-z 0-9 . _ - (set its name attribute)"
        raise PythonAgentError(msg)
    if name in BUILTIN_AGENT_NAMES:
        msg = (
            f"--agent {spec}: agent name {name!r} is a built-in agent's; give it a name of its own"
        )
        raise PythonAgentError(msg)
    try:
        agent.name = name  # type: ignore[attr-defined]
    except AttributeError as e:
        msg = (
            f"--agent {spec}: {class_name} takes no name attribute; give it one (name = 'my-agent')"
        )
        raise PythonAgentError(msg) from e
    return cast("Agent", agent)
