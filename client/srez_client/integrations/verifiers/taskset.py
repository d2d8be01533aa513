"""The SRE-Zero taskset for verifiers: tasks, their tool server, their rubric and gold check.

* :class:`SrezTaskset` yields one :class:`SrezTask` per task: the packaged 40, ids, a task
  folder, or a set generated on demand from a seed (``--taskset.seed 7 --taskset.count 10``).
* Each task's prompt is the incident prompt (preamble, brief, alerts, tools, glossary); its tool
  server is :class:`~.toolset.SrezToolset`, one per rollout.
* The rubric: the reward is the grade's partial-credit reward (one weighted reward, ``reward``);
  the five checks, ``resolved`` and ``passed`` are metrics. The rollout stops once the episode
  has ended (``submit``, or the step budget).
* ``vf-validate``'s gold check plays the scripted oracle and requires a reward of 1.0; its noop
  check scores the untouched task (no call at all): 0 on every fault task, 0.6 on the two
  no-fault controls (nothing to fix, but no declaration), below 1 everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from verifiers.v1 import Trace

from srez_client.integrations.task_source import (
    TaskRef,
    TaskSetSpec,
    resolve,
    task_of,
    task_refs,
)
from srez_client.integrations.verifiers.models import (
    SrezData,
    SrezState,
    SrezTaskConfig,
    SrezTasksetConfig,
)
from srez_client.integrations.verifiers.scoring import (
    check_scores,
    grade_actions,
    oracle_actions,
)
from srez_client.integrations.verifiers.toolset import SrezToolset
from srez_env.env import SREEnv
from srez_env.grade import Grade


class SrezTask(vf.Task[SrezData, SrezState, SrezTaskConfig]):
    """One SRE-Zero incident as a verifiers task."""

    @classmethod
    def toolsets(cls, config: SrezTaskConfig) -> list[Any]:
        """The episode's tool server, launched per rollout."""
        return [SrezToolset(config.tools)]

    def _grade(self, trace: Trace) -> Grade:
        return grade_actions(resolve(self.data.ref), trace.state.actions)

    @vf.stop
    async def episode_over(self, trace: Trace) -> bool:
        """The agent submitted or spent its step budget: no further model turn."""
        return bool(trace.state.done)

    @vf.reward(weight=1.0)
    async def reward(self, trace: Trace) -> float:
        """The grade's partial-credit reward, in [0, 1]."""
        return self._grade(trace).reward.total

    @vf.metric
    async def checks(self, trace: Trace) -> dict[str, float]:
        """The five checks, ``resolved`` and ``passed``, each 1.0 or 0.0."""
        return check_scores(self._grade(trace))

    async def validate(self, runtime: Any) -> bool:
        """The gold check: the scripted oracle's calls must score 1.0."""
        task = resolve(self.data.ref)
        return grade_actions(task, oracle_actions(task)).reward.total == 1.0


class SrezTaskset(vf.Taskset[SrezTask, SrezTasksetConfig]):
    """SRE-Zero's incident tasks (see the module docstring)."""

    def refs(self) -> list[TaskRef]:
        """The references of the tasks this config selects, in order."""
        config = self.config
        task_set = None
        if config.seed is not None:
            task_set = TaskSetSpec(
                seed=config.seed,
                count=config.count,
                kinds=None if config.kinds is None else tuple(config.kinds),
                difficulties=None if config.difficulties is None else tuple(config.difficulties),
            )
        entries = task_refs(config.tasks, task_set, config.tasks_dir)
        return [e for e in entries if isinstance(e, TaskRef)]

    def load(self) -> Iterator[SrezTask]:
        """One task per reference, each with its incident prompt (realised as iterated)."""
        for ref in self.refs():
            task = task_of(ref)
            prompt = SREEnv(task).reset()["text"]
            data = SrezData(id=task.id, name=task.id, prompt=prompt, ref=ref)
            yield SrezTask(data, self.config.task)


__all__ = ["SrezState", "SrezTask", "SrezTaskset"]
