"""What the RL integration tests share: the private markers no observation may carry."""

from __future__ import annotations

import json
from typing import Any

from srez_env.grade import Grade
from srez_env.task import Task

PRIVATE_FIELDS = (
    "ground_truth",
    "reference_fix",
    "reference_patch",
    "injection",
    "calibration",
    "required_evidence",
    "allowed_changes",
    "expert_steps",
    "fault_kind",
    "root_cause",
)
"""Names of the task's private blocks and of the grade's fields: none is ever shown before the
end (the fault kinds themselves are public, in the glossary)."""


def leaks(task: Task, grade: Grade, shown: Any) -> list[str]:
    """What of ``task``'s private data or of ``grade`` appears in ``shown`` (text or JSON)."""
    text = shown if isinstance(shown, str) else json.dumps(shown, default=str)
    found = [f"field {name!r}" for name in PRIVATE_FIELDS if f'"{name}"' in text]
    if grade.reference_patch.strip() and grade.reference_patch.strip() in text:
        found.append("the reference patch")
    for check in grade.checks.values():
        found += [f"grade reason {r!r}" for r in check.reasons if len(r) > 20 and r in text]
    if task.calibration.model_dump_json() in text:
        found.append("the calibration block")
    return found
