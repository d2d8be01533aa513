"""The top bar and "More details": one line about the run, and the brief, the alerts at T0 and
the run's settings. The alerts are read from the task prompt (its ``Active alerts at`` section),
which both live and finished runs have, so no task file is needed."""

from __future__ import annotations

from collections.abc import Mapping

from srez_client.sanitize import sanitize, sanitize_line


def alerts_at_t0(prompt: str) -> list[str]:
    """The alert lines of the task prompt's ``Active alerts at ...`` section."""
    lines = prompt.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Active alerts at"):
            out = []
            for item in lines[i + 1 :]:
                if not item.strip():
                    break
                out.append(sanitize_line(item.strip()))
            return out
    return []


def top_line(
    *, task_id: str, difficulty: str, model: str, agent: str, phase: str, version: str
) -> str:
    """The top bar's text."""
    task = sanitize_line(task_id) + (f" ({sanitize_line(difficulty)})" if difficulty else "")
    parts = [
        task or "?",
        f"model {sanitize_line(model) or '?'}",
        f"agent {sanitize_line(agent) or '?'}",
    ]
    parts.append(f"phase {sanitize_line(phase) or '?'}")
    if version:
        parts.append(f"srez {sanitize_line(version)}")
    return " · ".join(parts)


def details_text(brief: str, alerts: list[str], settings: Mapping[str, str]) -> str:
    """The "More details" overlay's text."""
    out = ["Brief:", sanitize(brief.strip()) or "(not known yet)", "", "Alerts at T0:"]
    out += [f"  {a}" for a in alerts] or ["  (none seen yet)"]
    out += ["", "Run settings:"]
    out += [f"  {sanitize_line(k)}: {sanitize_line(v)}" for k, v in settings.items()]
    return "\n".join(out)
