"""The 40 task files (``sre-001.yaml`` … ``sre-040.yaml``, written by ``env/tools/gen_tasks.py``)
and their loader.

The loader is ``yaml.safe_load`` then :meth:`Task.model_validate`; every failure becomes a
:class:`TaskError` with one line ``<file>: <field path>: <what is wrong>``.

:func:`packaged_summaries` reads the few fields a listing shows from the packaged files without
building the task models (no pydantic: ``srez tasks list`` answers at once). The packaged files are
validated by the test suite and by every command that plays them; a user's task files are always
read with :func:`load_task`.

``index.json`` beside the files (also written by ``gen_tasks.py``, and compared by its
``--check``) holds each file's parsed mapping as JSON, keyed by the file's SHA-256: reading it is
about fifteen times faster than parsing the forty YAML documents, which is most of what a listing
costs. The YAML files stay the tasks' one source: a file is read from the index only when its bytes
hash to the digest recorded there, and parsed as YAML otherwise (an edited file, an old index), so
the index can be stale or missing and nothing changes but the time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srez_env.errors import TaskError

if TYPE_CHECKING:  # imported when a task is validated: a listing needs no pydantic
    from pydantic import ValidationError

    from srez_env.task import Task

INDEX_NAME = "index.json"
INDEX_FORMAT = "srez-task-index/1"
_TASK_FILE_RE = re.compile(r"^sre-(?:[0-9a-f]{6}-)?\d{3}$")
_SUBFIELD_RE = re.compile(r"^([a-z_]+): (.+)$", re.DOTALL)


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _one_line(source: str, err: ValidationError) -> str:
    errors = err.errors(include_url=False)
    first = errors[0]
    ctx = first.get("ctx") or {}
    # Our own validators raise ValueError; pydantic wraps them as "Value error, <msg>".
    reason = (
        str(ctx["error"]) if first["type"] == "value_error" and "error" in ctx else first["msg"]
    )
    loc = _format_loc(tuple(first["loc"]))
    # A model-level check names its sub-field first ("key: ..."); fold it into the path.
    named = _SUBFIELD_RE.match(reason)
    if loc and first["type"] == "value_error" and named is not None:
        loc, reason = f"{loc}.{named.group(1)}", named.group(2)
    text = f"{source}: {loc}: {reason}" if loc else f"{source}: {reason}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return " ".join(text.split())


def parse_task(text: str, source: str = "<task>") -> Task:
    """Parses and validates the YAML text of one task.

    Args:
        text: The YAML document.
        source: A name for messages, usually the file name.

    Returns:
        The validated task.

    Raises:
        TaskError: The text is not YAML, not a mapping, or fails validation. The message is one
            line: ``<source>: <field path>: <what is wrong>``.
    """
    return _validated(_yaml_mapping(text, source), source)


def parse_task_json(data: str | bytes, source: str = "<task>") -> Task:
    """Parses and validates one task given as its model's JSON (``Task.model_dump_json()``): how
    a task that is not packaged travels from the host to a run's daemon, exactly, so that its
    digest is the host's.

    Raises:
        TaskError: The text is not a valid task; one line, ``<source>: <field path>: <what>``.
    """
    from pydantic import ValidationError

    from srez_env.task import Task

    try:
        return Task.model_validate_json(data)
    except ValidationError as e:
        raise TaskError(_one_line(source, e)) from e


def _yaml_mapping(text: str, source: str) -> dict[str, Any]:
    """The YAML text of a task as a mapping (one-line :class:`TaskError` otherwise)."""
    import yaml  # 15 ms: a listing served from the index never parses YAML

    # libyaml's safe loader when it is built in: about ten times faster than the pure-Python one
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data: Any = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        msg = f"{source}: not valid YAML{where}: {problem}"
        raise TaskError(msg) from e
    except RecursionError as e:  # [[[[...: no task nests deeper than a few levels
        msg = f"{source}: the YAML is nested too deeply to be a task"
        raise TaskError(msg) from e
    if not isinstance(data, dict):
        msg = f"{source}: expected a mapping of task fields, got {type(data).__name__}"
        raise TaskError(msg)
    return data


def load_task(path: str | os.PathLike[str]) -> Task:
    """Loads one task file (``yaml.safe_load`` then ``Task.model_validate``).

    Args:
        path: The YAML file. If its stem looks like a task id, it must equal the task's id.

    Returns:
        The validated task.

    Raises:
        TaskError: The file cannot be read or is invalid; the message names the file and field.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as e:
        msg = f"{file.name}: cannot read task file: {e.strerror or e}"
        raise TaskError(msg) from e
    return _checked(parse_task(text, file.name), file.name)


def _checked(task: Task, name: str) -> Task:
    stem = name.removesuffix(".yaml")
    if _TASK_FILE_RE.match(stem) and stem != task.id:
        msg = f"{name}: id: {task.id!r} does not match the file name"
        raise TaskError(msg)
    return task


def _packaged_names() -> list[str]:
    folder = resources.files("srez_env.tasks")
    return sorted(e.name for e in folder.iterdir() if e.is_file() and e.name.endswith(".yaml"))


def index_text(files: dict[str, str]) -> str:
    """The ``index.json`` of task files (name -> YAML text): each file's SHA-256 and mapping."""
    entries = {
        name: {"sha256": _digest(text.encode()), "data": _yaml_mapping(text, name)}
        for name, text in sorted(files.items())
    }
    return json.dumps({"format": INDEX_FORMAT, "tasks": entries}, separators=(",", ":")) + "\n"


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


@functools.cache
def _index() -> Mapping[str, Any]:
    return read_index(resources.files(__name__))


def read_index(folder: Traversable) -> Mapping[str, Any]:
    """The entries of ``folder``'s index by file name (none when it is missing, unreadable or of
    another format)."""
    try:
        index = json.loads(folder.joinpath(INDEX_NAME).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        return {}
    tasks = index.get("tasks")
    return tasks if isinstance(tasks, dict) else {}


def task_mapping(folder: Traversable, name: str, index: Mapping[str, Any]) -> dict[str, Any]:
    """A task file's mapping: from ``index`` when the file's bytes match its digest there,
    parsed from the YAML otherwise."""
    raw = folder.joinpath(name).read_bytes()
    entry = index.get(name)
    if isinstance(entry, dict) and entry.get("sha256") == _digest(raw):
        data = entry.get("data")
        if isinstance(data, dict):
            return data
    return _yaml_mapping(raw.decode("utf-8"), name)


def _packaged_mapping(name: str) -> dict[str, Any]:
    return task_mapping(resources.files(__name__), name, _index())


@functools.cache
def _packaged_task(name: str) -> Task:
    # Read once per process: tasks are immutable data, and the package never changes underfoot.
    # The anchor is the data package itself, so the lookup works however srez_env was found.
    return _checked(_validated(_packaged_mapping(name), name), name)


def _validated(data: dict[str, Any], source: str) -> Task:
    from pydantic import ValidationError

    from srez_env.task import Task

    try:
        return Task.model_validate(data)
    except ValidationError as e:
        raise TaskError(_one_line(source, e)) from e


def _packaged_file_names(ids: Iterable[str] | None) -> list[str]:
    """The packaged files of ``ids`` in that order (None: all, sorted by id)."""
    names = _packaged_names()
    if ids is None:
        return names
    out = []
    for task_id in ids:
        name = f"{task_id}.yaml"
        if name not in names:
            known = f"{names[0][:-5]} … {names[-1][:-5]}" if names else "none"
            msg = f"unknown task id {task_id!r} (known: {known})"
            raise TaskError(msg)
        out.append(name)
    return out


@dataclass(frozen=True, slots=True)
class TaskSummary:
    """What a listing shows of a task: its public brief and the headline of its ground truth."""

    id: str
    title: str
    fault_kind: str
    root_service: str
    difficulty: str
    max_steps: int
    brief: str

    @classmethod
    def of(cls, task: Task) -> TaskSummary:
        """The summary of a validated task."""
        return cls(
            id=task.id,
            title=task.title,
            fault_kind=task.fault_kind,
            root_service=task.ground_truth.root_cause.service,
            difficulty=task.difficulty,
            max_steps=task.max_steps,
            brief=task.incident.brief,
        )


def packaged_summaries(ids: Iterable[str] | None = None) -> list[TaskSummary]:
    """The summaries of packaged tasks, read from their mappings without building the models.

    Raises:
        TaskError: An id is unknown, or a packaged file lacks a field a summary shows.
    """
    out = []
    for name in _packaged_file_names(ids):
        data = _packaged_mapping(name)
        try:
            out.append(
                TaskSummary(
                    id=str(data["id"]),
                    title=str(data["title"]),
                    fault_kind=str(data["fault_kind"]),
                    root_service=str(data["ground_truth"]["root_cause"]["service"]),
                    difficulty=str(data["difficulty"]),
                    max_steps=int(data["max_steps"]),
                    brief=str(data["incident"]["brief"]),
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            msg = f"{name}: not a task file (no {e})"
            raise TaskError(msg) from e
    return out


def load_tasks(ids: Iterable[str] | None = None) -> list[Task]:
    """Loads packaged tasks (``srez_env/tasks/*.yaml``); each file is read once per process, and
    only the files asked for are read (a daemon needs one task, not forty).

    Args:
        ids: Task ids to return, in the order given; ``None`` returns every task sorted by id.

    Returns:
        The validated tasks.

    Raises:
        TaskError: A packaged file is invalid, or an id is unknown.
    """
    return [_packaged_task(name) for name in _packaged_file_names(ids)]
