"""``SREZeroEnv``: one SRE-Zero episode per Gymnasium episode (``srez/SREZero-v0``).

* **Action**: one tool call as JSON text, ``{"tool": "get_logs", "args": {"service": "db"}}``
  (a :class:`gymnasium.spaces.Text`); a mapping is accepted too. Text that is not a valid call
  is what it is everywhere in SRE-Zero: an invalid action that costs a step and says why.
* **Observation**: on reset, the incident prompt as an LLM reads it (preamble, brief, alerts,
  tools, glossary); after each step, the tool's observation as JSON text (``ok``, ``output`` or
  ``error``, ``step``, ``steps_left``, ``clock``, ``done``). Both are printable ASCII (JSON escapes
  anything else), which is what the observation space admits.
* **Reward**: 0 on every step, then on the last one the partial-credit reward of the grade
  (:func:`srez_env.grade.grade_episode`), in [0, 1].
* **Termination**: ``terminated`` when the agent submits; ``truncated`` when the step budget runs
  out (the harness then grades the episode as it stands, and that grade is the reward).
* **info**: on reset the structured prompt (``prompt``: tools as OpenAI function specs, alerts,
  budget) and ``task_id``; on each step ``step``, ``steps_left``, ``ok``, ``tool``; on the last
  step also ``grade`` (the five checks with their reasons, ``resolved``, ``passed``, the reward
  and its components). Nothing private (ground truth, injection, reference fix, the grade) is in
  an observation or in ``info`` before the episode ends.
* **Seeding**: ``reset(seed=...)`` is the run seed the grade records; with several tasks it also
  seeds the choice of the task. ``options={"task_id": ...}`` picks a task of the pool by id.

The simulator is deterministic, so two episodes of one task with the same actions give the same
observations and the same reward in any process.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, SupportsFloat

import gymnasium
from gymnasium import spaces

from srez_client.integrations.task_source import TaskLike, TaskRef, TaskSetSpec, task_of, task_refs
from srez_env.env import SREEnv
from srez_env.grade import Grade, grade_episode
from srez_env.task import Task

CHARSET: Final = frozenset(string.printable)
"""Printable ASCII with whitespace: every prompt and JSON observation fits in it."""
MAX_OBSERVATION: Final = 1 << 16
"""Longest observation, in characters (the longest tool output is under 4 KB)."""
MAX_ACTION: Final = 4096
"""Longest action text, in characters."""
AGENT_NAME: Final = "gym"


def _ascii(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii")


def _grade_info(grade: Grade) -> dict[str, Any]:
    return {
        "reward": grade.reward.total,
        "resolved": grade.resolved,
        "passed": grade.passed,
        "checks": {
            name: {"pass": check.passed, "reasons": list(check.reasons)}
            for name, check in grade.checks.items()
        },
        "components": dict(grade.reward.components),
        "end_reason": grade.metrics.end_reason,
    }


class SREZeroEnv(gymnasium.Env[str, str]):
    """SRE-Zero incident response as a Gymnasium environment (see the module docstring)."""

    # render_fps: text has no frame rate, but the env checker asks for one
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        task: TaskLike | Sequence[TaskLike] | None = None,
        *,
        task_set: TaskSetSpec | Mapping[str, Any] | None = None,
        tasks_dir: str | Path | None = None,
        render_mode: str | None = None,
    ) -> None:
        """Builds the environment over a pool of tasks.

        Args:
            task: A packaged task id, a :class:`~srez_env.task.Task`, or a list of them; the
                pool each reset draws from. None: ``task_set``, ``tasks_dir``, or all 40.
            task_set: A task set generated on demand, ``{"seed": 7, "count": 10}`` (also
                ``kinds`` and ``difficulties``); each task is realised when first drawn.
            tasks_dir: Read the tasks (all of the folder, or those ``task`` names) from here.
            render_mode: None or ``"ansi"`` (``render()`` returns the last observation).

        Raises:
            ValueError: a bad render mode or task selection.
            srez_env.errors.TaskError: an unknown task id.
        """
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            msg = f"render_mode {render_mode!r}: use None or 'ansi'"
            raise ValueError(msg)
        self.render_mode = render_mode
        self.pool: list[TaskRef | Task] = task_refs(task, task_set, tasks_dir)
        self.action_space = spaces.Text(MAX_ACTION, min_length=0, charset=CHARSET)
        self.observation_space = spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)
        self.episode: SREEnv | None = None
        self._last = ""

    @property
    def task_ids(self) -> list[str]:
        """The ids of the pool, in order."""
        return [entry.id for entry in self.pool]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Starts an episode: the prompt as text, and ``info`` with the structured prompt."""
        super().reset(seed=seed)
        run_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        task = task_of(self.pool[self._pick(options)])
        self.episode = SREEnv(task, run_seed=run_seed, agent=AGENT_NAME)
        prompt = self.episode.reset()
        self._last = _ascii(prompt["text"])
        return self._last, {"task_id": task.id, "run_seed": run_seed, "prompt": prompt}

    def _pick(self, options: Mapping[str, Any] | None) -> int:
        wanted = (options or {}).get("task_id")
        if wanted is not None:
            ids = self.task_ids
            if wanted not in ids:
                msg = f"options.task_id {wanted!r} is not in this environment's tasks"
                raise ValueError(msg)
            return ids.index(wanted)
        if len(self.pool) == 1:
            return 0
        return int(self.np_random.integers(0, len(self.pool)))

    def step(
        self, action: str | Mapping[str, Any]
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """One tool call. Returns (observation, reward, terminated, truncated, info)."""
        episode = self.episode
        if episode is None:
            msg = "step() before reset(): call reset() first"
            raise RuntimeError(msg)
        if episode.done:
            msg = "step() after the episode ended: call reset() to start another"
            raise RuntimeError(msg)
        result = episode.step(action)
        obs = result.observation
        self._last = json.dumps(obs, ensure_ascii=True)
        info: dict[str, Any] = {
            "step": obs["step"],
            "steps_left": obs["steps_left"],
            "ok": obs["ok"],
            "tool": obs["tool"],
        }
        if not result.done:
            return self._last, 0.0, False, False, info
        grade = grade_episode(episode.record())
        info["grade"] = _grade_info(grade)
        truncated = episode.log.end_reason == "step_budget"
        return self._last, grade.reward.total, not truncated, truncated, info

    def render(self) -> str | None:
        """The last observation (``render_mode="ansi"``), else None."""
        return self._last if self.render_mode == "ansi" else None
