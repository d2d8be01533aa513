"""The Evaluation Result tab: the grade (``result.json``) and how the run ended, as rows.

``result.json`` is read as a plain dict on purpose: a viewer must show an older or partial grade
rather than refuse it, so every field is optional here and a missing check reads N/A with the
reason. All strings are sanitised (grade reasons quote what the agent wrote).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from srez_client.sanitize import sanitize, sanitize_line

CHECKS: Final = ("valid", "func", "safe", "intent", "rca")
"""The five checks of the grade, in order."""
CHECK_TITLES: Final = {
    "valid": "valid (the final config files parse, agree, and are live)",
    "func": "func (the incident is fixed)",
    "safe": "safe (no harmful change)",
    "intent": "intent (the cause, not the symptom)",
    "rca": "rca (root cause declared)",
}
SCRIPTED_NOTE: Final = (
    "Scripted oracle run: the agent is handed the ground truth, so this grade checks the task "
    "(that its reference fix solves it), not a model."
)
CheckState = Literal["pass", "fail", "n/a"]


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One of the five checks."""

    name: str
    state: CheckState
    reasons: tuple[str, ...] = ()


@dataclass(slots=True)
class Evaluation:
    """Everything the tab shows."""

    graded: bool = False
    checks: list[CheckRow] = field(default_factory=list)
    reward: float | None = None
    components: list[tuple[str, float, float | None]] = field(default_factory=list)
    """(name, value, weight)."""
    steps: int | None = None
    max_steps: int | None = None
    duration_s: float | None = None
    timed_out: bool = False
    end_reason: str = ""
    resolved: bool | None = None
    passed: bool | None = None
    error: str = ""
    error_log: str = ""
    """The end of the evaluator's (or agent's) log, shown with an error."""
    note: str = ""


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _check(name: str, raw: object) -> CheckRow:
    if not isinstance(raw, Mapping):
        return CheckRow(name, "n/a", ("not in the grade",))
    reasons = raw.get("reasons")
    texts = tuple(sanitize(str(r)) for r in reasons) if isinstance(reasons, list) else ()
    verdict = raw.get("pass")
    if verdict is None:
        return CheckRow(name, "n/a", texts or ("not applicable to this task",))
    return CheckRow(name, "pass" if verdict is True else "fail", texts)


def build_evaluation(
    grade: Mapping[str, object] | None,
    summary: Mapping[str, object] | None = None,
    *,
    agent: str = "",
    log_tail: str = "",
) -> Evaluation:
    """The tab's rows from ``result.json`` and ``summary.json`` (either may be missing)."""
    ev = Evaluation()
    summary = summary or {}
    if agent == "scripted" or (grade or {}).get("agent") == "scripted":
        ev.note = SCRIPTED_NOTE
    end = summary.get("end_reason")
    if grade:
        ev.graded = True
        checks = grade.get("checks")
        checks = checks if isinstance(checks, Mapping) else {}
        ev.checks = [_check(name, checks.get(name)) for name in CHECKS]
        reward = grade.get("reward")
        if isinstance(reward, Mapping):
            ev.reward = _num(reward.get("total"))
            comps = reward.get("components")
            weights = reward.get("weights")
            weights = weights if isinstance(weights, Mapping) else {}
            if isinstance(comps, Mapping):
                for key, value in comps.items():
                    number = _num(value)
                    if number is not None:
                        ev.components.append(
                            (sanitize_line(str(key)), number, _num(weights.get(key)))
                        )
        else:
            ev.reward = _num(reward)
        steps, max_steps = _num(grade.get("steps")), _num(grade.get("max_steps"))
        ev.steps = None if steps is None else int(steps)
        ev.max_steps = None if max_steps is None else int(max_steps)
        resolved, passed = grade.get("resolved"), grade.get("passed")
        ev.resolved = resolved if isinstance(resolved, bool) else None
        ev.passed = passed if isinstance(passed, bool) else None
        metrics = grade.get("metrics")
        if isinstance(metrics, Mapping) and end is None:
            end = metrics.get("end_reason")
    ev.end_reason = sanitize_line(str(end)) if end else ""
    ev.timed_out = end == "time_limit"
    ev.duration_s = _num(summary.get("duration_s"))
    if ev.steps is None and (steps := _num(summary.get("steps"))) is not None:
        ev.steps = int(steps)
    error = summary.get("error")
    if error:
        ev.error = sanitize(str(error))
        ev.error_log = sanitize(log_tail)
    return ev


def yes_no(value: bool | None) -> str:
    """``yes``/``no``/``-``."""
    return {True: "yes", False: "no", None: "-"}[value]
