"""The cheap learners of docs/environment.md §6.18 are real learners: fit on a set, they recall
it; their features are what an agent sees, with the numbers blanked; and the perfect fixer plays
the reference fix exactly when the prediction is the task's answer."""

from __future__ import annotations

from srez_env.baselines import learners
from srez_env.baselines.learners import Answer
from srez_env.env import SREEnv
from srez_env.tasks import load_tasks

TASKS = load_tasks()


def test_blank_keeps_the_words_and_drops_numbers_and_ids() -> None:
    assert learners.blank("dial tcp 10.0.3.15:6434: refused after 812.4 ms (id 3fa9c2d1)") == (
        "dial tcp #.#:#: refused after # ms (id #)"
    )


def test_the_prompt_key_is_what_the_prompt_shows_and_names_no_task() -> None:
    for task in TASKS:
        key = learners.prompt_key(task)
        assert task.id not in key and task.fault_kind not in key
        assert SREEnv(task).reset()["title"] in key


def test_the_signature_is_deterministic_and_reads_every_service() -> None:
    task = TASKS[1]
    first, again = learners.signature(task), learners.signature(task)
    assert first == again
    assert {f.split(":")[1] for f in first if f.startswith("status:")} == {
        "gateway",
        "auth",
        "payments",
        "cache",
        "db",
    }
    assert any(f.startswith("log:") for f in first) and "budget:40" in first


def test_a_learner_fit_on_a_set_recalls_it_where_its_features_tell_answers_apart() -> None:
    lookup = learners.PromptLookup().fit(TASKS)
    answers_of_prompt: dict[str, set[Answer]] = {}
    for task in TASKS:
        answers_of_prompt.setdefault(learners.prompt_key(task), set()).add(learners.answer_of(task))
    told_apart = [t for t in TASKS if len(answers_of_prompt[learners.prompt_key(t)]) == 1]
    assert all(lookup.predict(t) == learners.answer_of(t) for t in told_apart)
    assert len(told_apart) >= 36  # a lookup fit on the set it is scored on is near perfect
    got = learners.score(lookup, TASKS, "lookup")
    assert got.hard == 14
    assert got.hard_passed >= sum(t.difficulty == "hard" for t in told_apart)
    nearest = learners.NearestSignature().fit(TASKS)
    assert learners.score(nearest, TASKS, "nearest").hard_passed >= 7


def test_the_perfect_fixer_fixes_only_a_right_prediction() -> None:
    task = next(t for t in TASKS if t.id == "sre-007")
    right = learners.answer_of(task)
    assert learners.play_prediction(task, right, name="x").passed
    wrong_kind = Answer(right.service, "dependency_timeout", right.fix)
    graded = learners.play_prediction(task, wrong_kind, name="x")
    assert not graded.resolved and not graded.passed
    assert not learners.play_prediction(task, None, name="x").resolved
