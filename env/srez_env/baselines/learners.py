"""Cheap learners: how far recall gets without diagnosis (docs/environment.md §6.18).

A learner is fit on published task sets (their files are public: prompts, observations and
answers) and, on a new task, predicts its answer from something it can see at once, with no
investigation:

* :func:`prompt_key` reads the prompt alone (title, brief with its numbers blanked, the active
  alerts, the step budget): if prompts named the incident, a lookup table would answer;
* :func:`signature` reads the T0 picture an agent gets in six calls (every service's status and
  the templates of every WARN and ERROR line of every service's logs, numbers blanked) and the
  budget: if the generator repeated the same incidents with new numbers, the nearest training
  signature would answer.

An :class:`Answer` is the root service, the fault kind and what the reference fix acts on. A
learner is scored by playing its prediction with a *perfect fixer*: when the prediction is the
task's own answer, the episode declares it and plays the task's reference fix; otherwise it
declares the prediction and submits. So its pass rate is the share of tasks its lookup alone
diagnoses, an upper bound on any agent that puts a real fixer behind the same lookup, and a set
on which it stays low cannot be passed by recall of this kind.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from srez_env.baselines.policy import call, json_list, output_text
from srez_env.env import SREEnv
from srez_env.grade import Grade, grade_episode
from srez_env.task import SERVICES, Task

LEVELS: Final = (" WARN ", " ERROR ")
_NUMBERS: Final = re.compile(r"\d+(?:\.\d+)?")
_HEX: Final = re.compile(r"\b[0-9a-f]{6,}\b")


class Answer(NamedTuple):
    """What a task asks for: the root service, the fault kind, and what its fix acts on."""

    service: str
    kind: str
    fix: tuple[tuple[str, str, str], ...]


def answer_of(task: Task) -> Answer:
    """The task's own answer, from its ground truth and reference fix."""
    root = task.ground_truth.root_cause
    fix = tuple(
        (a.tool, str(a.args.get("service", "")), str(a.args.get("key", "")))
        for a in task.reference_fix
    )
    return Answer(root.service, root.fault, fix)


def blank(text: str) -> str:
    """``text`` with its numbers and hex ids blanked: what stays the same across worlds."""
    return _NUMBERS.sub("#", _HEX.sub("#", text))


def prompt_key(task: Task) -> str:
    """What the prompt alone shows, with numbers blanked."""
    prompt = SREEnv(task).reset()
    alerts = sorted(f"{a['name']}@{a['service']}/{a['severity']}" for a in prompt["alerts"])
    return blank(f"{prompt['title']}|{prompt['brief']}|{','.join(alerts)}|{prompt['max_steps']}")


def signature(task: Task) -> frozenset[str]:
    """The T0 picture: statuses, WARN/ERROR log templates of every service, and the budget."""
    env = SREEnv(task)
    prompt = env.reset()
    features = {f"budget:{prompt['max_steps']}"}
    listing = json_list(env.step(call("list_services")).observation)
    features |= {f"status:{row['name']}:{row['status']}" for row in listing}
    for service in SERVICES:
        if env.done:
            break
        text = output_text(env.step(call("get_logs", service=service, limit=100)).observation)
        for line in text.splitlines():
            if any(level in line for level in LEVELS):
                body = line.split(" ", 2)[-1]  # drop the timestamp and the replica
                features.add(f"log:{service}:{blank(body)}")
    return frozenset(features)


@dataclass
class PromptLookup:
    """A table from :func:`prompt_key` to the answers seen with it."""

    table: dict[str, Counter[Answer]] = field(default_factory=dict)

    def fit(self, tasks: Iterable[Task]) -> PromptLookup:
        for task in tasks:
            self.table.setdefault(prompt_key(task), Counter())[answer_of(task)] += 1
        return self

    def predict(self, task: Task) -> Answer | None:
        seen = self.table.get(prompt_key(task))
        return seen.most_common(1)[0][0] if seen else None


@dataclass
class NearestSignature:
    """The answer of the training task whose :func:`signature` is nearest (Jaccard); a tie goes
    to the answer most of the tied tasks share."""

    examples: list[tuple[frozenset[str], Answer]] = field(default_factory=list)

    def fit(self, tasks: Iterable[Task]) -> NearestSignature:
        self.examples += [(signature(task), answer_of(task)) for task in tasks]
        return self

    def predict(self, task: Task) -> Answer | None:
        if not self.examples:
            return None
        mine = signature(task)
        scored = [(len(mine & s) / len(mine | s), answer) for s, answer in self.examples]
        best = max(score for score, _ in scored)
        tied = Counter(answer for score, answer in scored if score == best)
        return tied.most_common(1)[0][0]


def play_prediction(task: Task, predicted: Answer | None, *, name: str) -> Grade:
    """The grade of declaring ``predicted`` with a perfect fixer (see the module docstring)."""
    env = SREEnv(task, agent=name)
    env.reset()
    actions: list[dict[str, object]] = []
    if predicted is not None:
        if predicted == answer_of(task):
            actions += [a.model_dump() for a in task.reference_fix]
        actions.append(call("declare_root_cause", service=predicted.service, fault=predicted.kind))
    for action in [*actions, call("submit")]:
        if env.done:
            break
        env.step(action)
    return grade_episode(env.record())


class LearnerScore(NamedTuple):
    """One learner on one set: hard tasks passed, of how many, and the mean reward."""

    hard_passed: int
    hard: int
    mean_reward: float


def score(
    learner: PromptLookup | NearestSignature, tasks: Sequence[Task], name: str
) -> LearnerScore:
    """Plays ``learner``'s prediction on every task of ``tasks``."""
    grades = [(task, play_prediction(task, learner.predict(task), name=name)) for task in tasks]
    hard = [g for task, g in grades if task.difficulty == "hard"]
    mean = sum(g.reward.total for _, g in grades) / len(grades) if grades else 0.0
    return LearnerScore(sum(g.passed for g in hard), len(hard), mean)
