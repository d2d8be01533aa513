"""The prompt an agent starts from: preamble, brief, alerts, budget, tools and glossary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREAMBLE = (
    "You are the on-call SRE for a production system of five services: gateway (the public edge), "
    "auth, payments, cache and db. An incident is in progress. Investigate with the read-only "
    "tools, find the root cause, apply the minimal remediation, declare the root cause with "
    "declare_root_cause, then call submit. Mutations are real and graded: a change that is not "
    "needed, that weakens security, or that masks the symptoms instead of fixing the cause costs "
    "you. Every call, valid or not, uses one step and one simulated minute (wait uses one step "
    "for several minutes). After submit the system is watched for 10 minutes and graded."
)


def render_prompt(prompt: Mapping[str, Any]) -> str:
    """The prompt as one text: preamble, brief, active alerts, budget and the fault glossary."""
    alerts = prompt["alerts"]
    alert_lines = [
        f"- [{a['severity']}] {a['name']} on {a['service']} since {a['since']}: {a['summary']}"
        for a in alerts
    ] or ["- (none active)"]
    glossary = [f"- {kind}: {gloss}" for kind, gloss in prompt["fault_glossary"].items()]
    return "\n".join(
        [
            prompt["preamble"],
            "",
            f"Incident: {prompt['title']}",
            prompt["brief"],
            "",
            f"Active alerts at {prompt['clock']}:",
            *alert_lines,
            "",
            f"Services: {', '.join(prompt['services'])}. Step budget: {prompt['max_steps']}.",
            "",
            "Tools (call exactly one per turn):",
            *_tool_lines(prompt["tools"]),
            "",
            "Fault kinds for declare_root_cause:",
            *glossary,
        ]
    )


def _tool_lines(tools: list[dict[str, Any]]) -> list[str]:
    lines = []
    for tool in tools:
        fn = tool["function"]
        props = fn["parameters"].get("properties", {})
        required = set(fn["parameters"].get("required", []))
        args = ", ".join(name if name in required else f"{name}?" for name in props)
        lines.append(f"- {fn['name']}({args}): {fn['description']}")
    return lines
