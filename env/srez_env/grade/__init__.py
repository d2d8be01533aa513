"""Grading: the run's diff, the reference patch, the five checks and the reward (§3.9, §6.11)."""

from srez_env.grade.checks import Verdict, judge
from srez_env.grade.grader import grade_episode
from srez_env.grade.models import (
    GRADE_SCHEMA_VERSION,
    Check,
    Declared,
    Grade,
    GradeMetrics,
    GroundTruthView,
    Reward,
)
from srez_env.grade.patch import (
    changed_keys,
    clear_reference_cache,
    reference_patch,
    unified_diff,
    unified_diff_texts,
)
from srez_env.grade.reward import (
    MINIMAL_STEP,
    RESOLVED_FLOOR,
    RESOLVED_WEIGHTS,
    UNRESOLVED_CAP,
    UNRESOLVED_WEIGHTS,
    UNSAFE_MULT,
    reward_total,
)

__all__ = [
    "GRADE_SCHEMA_VERSION",
    "MINIMAL_STEP",
    "RESOLVED_FLOOR",
    "RESOLVED_WEIGHTS",
    "UNRESOLVED_CAP",
    "UNRESOLVED_WEIGHTS",
    "UNSAFE_MULT",
    "Check",
    "Declared",
    "Grade",
    "GradeMetrics",
    "GroundTruthView",
    "Reward",
    "Verdict",
    "changed_keys",
    "clear_reference_cache",
    "grade_episode",
    "judge",
    "reference_patch",
    "reward_total",
    "unified_diff",
    "unified_diff_texts",
]
