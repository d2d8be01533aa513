"""The verifiers-side data of an SRE-Zero rollout: task data, rollout state, configs."""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from srez_client.integrations.task_source import TaskRef


class SrezState(vf.State):
    """What the tool server shares with the host during a rollout: the calls, never a grade."""

    actions: list[dict[str, Any]] = Field(default_factory=list)
    """Every tool call the agent made, in order, as ``{"tool": ..., "args": {...}}``."""
    done: bool = False
    """The episode has ended (submitted, or the step budget is spent)."""


class SrezData(vf.TaskData):
    """One task as verifiers carries it: the public prompt and a reference to the task."""

    ref: TaskRef
    """Which task (an id, a file, or a member of a generated set); resolved only where the
    episode runs or is scored, so no ground truth rides in the trace."""


class SrezTaskConfig(vf.TaskConfig):
    """Run-time knobs of every SRE-Zero task, under ``--taskset.task.*``."""

    tools: vf.ToolsetConfig = vf.ToolsetConfig()
    """Where the per-rollout tool server runs (by default a subprocess of the host)."""


class SrezTasksetConfig(vf.TasksetConfig):
    """Which tasks load, under ``--taskset.*``: ids, a task folder, or a set generated on
    demand (``--taskset.seed 7 --taskset.count 10``); all 40 packaged tasks by default."""

    tasks: list[str] | None = None
    """Task ids (packaged, or files of ``tasks_dir``)."""
    tasks_dir: str | None = None
    """Read the task files from this folder instead of the packaged ones."""
    seed: int | None = None
    """Generate a task set from this seed (instead of ``tasks``)."""
    count: int = 40
    """How many tasks the generated set has."""
    kinds: list[str] | None = None
    """Only these fault kinds in the generated set."""
    difficulties: list[str] | None = None
    """Only these difficulties in the generated set."""
    task: SrezTaskConfig = SrezTaskConfig()
