"""The scripted expert: the oracle playbook, an upper bound and CI's solvability test (§3.10).

It reads the ground truth, explicitly: required evidence in file order (each call with its match
and oracle args), the true declaration, the reference fix, submit.
"""

from __future__ import annotations

from srez_env.baselines.policy import Observation, Policy, PolicyAgent, call
from srez_env.task import Task


class ScriptedAgent(PolicyAgent):
    """Plays the task's expert trajectory."""

    name = "scripted"

    def __init__(self, task: Task) -> None:
        super().__init__()
        self.task = task

    def policy(self, prompt: Observation) -> Policy:
        gt = self.task.ground_truth
        for item in gt.required_evidence:
            yield call(item.tool, **item.match, **item.oracle_args)
        yield call("declare_root_cause", service=gt.root_cause.service, fault=gt.root_cause.fault)
        for action in self.task.reference_fix:
            yield call(action.tool, **action.args)
