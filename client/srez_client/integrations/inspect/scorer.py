"""The scorer: the sample's grade as one multi-value ``Score``.

The values are the reward and, as 1 or 0, the five checks (``valid``, ``func``, ``safe``,
``intent``, ``rca``) plus ``resolved`` (the first four) and ``passed`` (all five); each has its
mean over the samples as a metric (the reward also its standard error). The explanation gives
every check with its reasons, as ``result.json`` words them; the answer is the last declared
root cause; the metadata holds the reward's components, the steps and how the episode ended.
The grade itself (all of ``result.json``) is in the sample's store under
:data:`~srez_client.integrations.inspect.solver.GRADE_KEY`.
"""

from __future__ import annotations

from typing import Final

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from srez_client.integrations.inspect.solver import GRADE_KEY
from srez_env.grade import Grade

CHECKS: Final = ("valid", "func", "safe", "intent", "rca")
"""The five checks, in the order ``result.json`` lists them."""
SCORE_KEYS: Final = ("reward", *CHECKS, "resolved", "passed")
"""The keys of every score's value."""


def grade_score(grade: Grade) -> Score:
    """The score of one graded episode."""
    value: dict[str, float] = {"reward": grade.reward.total}
    value |= {name: float(grade.checks[name].passed) for name in CHECKS}
    value |= {"resolved": float(grade.resolved), "passed": float(grade.passed)}
    lines = [f"reward {grade.reward.total:.6f}; resolved {grade.resolved}, passed {grade.passed}"]
    for name in CHECKS:
        check = grade.checks[name]
        reasons = "; ".join(check.reasons) or "no reason given"
        lines.append(f"{name}: {'pass' if check.passed else 'FAIL'}: {reasons}")
    declared = grade.metrics.declared
    return Score(
        value=value,
        answer=f"{declared.service}/{declared.fault}" if declared else None,
        explanation="\n".join(lines),
        metadata={
            "components": dict(grade.reward.components),
            "steps": grade.steps,
            "max_steps": grade.max_steps,
            "end_reason": grade.metrics.end_reason,
            "run_seed": grade.run_seed,
        },
    )


@scorer(metrics={key: [mean(), stderr()] if key == "reward" else [mean()] for key in SCORE_KEYS})
def srez_scorer() -> Scorer:
    """Scores a sample from the grade its episode left in the store."""

    async def score(state: TaskState, target: Target) -> Score:
        stored = state.store.get(GRADE_KEY)
        if stored is None:
            return Score(
                value=dict.fromkeys(SCORE_KEYS, 0.0),
                explanation="no episode was played for this sample (the srez_agent solver grades it)",
            )
        return grade_score(Grade.model_validate(stored))

    return score
