"""The README walk: LLM runs, ``srez explain`` and a managed run, against a scripted
OpenAI-compatible server reached through litellm's own ``OPENAI_API_BASE``."""

from __future__ import annotations

import json

from walk_kit import Step, Walker
from walk_steps import LLM, LLM_AND_MANAGED

from fakes.expert import expert_replies
from fakes.openai_server import FakeOpenAI, text

MANAGED = 3
"""Where the managed run's lines start in :data:`walk_steps.LLM_AND_MANAGED`."""


def test_walk_llm_runs_and_a_managed_run(
    walker: Walker, fake_openai: FakeOpenAI, bwrap: None
) -> None:
    walker.context["llm_base"] = fake_openai.base_url
    to_fake = {"OPENAI_API_BASE": fake_openai.base_url}

    def walk(lines: list[tuple[str, tuple[Step, ...]]]) -> None:
        for line, steps in lines:
            walker.walk(line, [Step(s.command, s.expect, env={**to_fake, **s.env}) for s in steps])

    fake_openai.push(*expert_replies("sre-007"), *expert_replies("sre-007"))
    fake_openai.push(text("the walk's explanation"))
    walk(LLM_AND_MANAGED[:MANAGED])
    assert fake_openai.pending == 0

    fake_openai.push(*expert_replies("sre-001"), *expert_replies("sre-007"))
    walk(LLM_AND_MANAGED[MANAGED:])
    assert fake_openai.pending == 0
    models = {r.model for r in fake_openai.requests}
    assert models >= {"gpt-4o-mini", "my-local-model"}, models
    summary = json.loads((walker.clone / "results/managed/nightly/summary.json").read_text())
    assert LLM in json.dumps(summary)
    assert (walker.clone / "results/managed/nightly/summary.png").stat().st_size > 10_000
