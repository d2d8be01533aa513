"""The model catalogue (``notes/available_models.md``) names only models litellm knows.

The check runs in a fresh interpreter with ``LITELLM_LOCAL_MODEL_COST_MAP=True``, so litellm
reads the model list bundled with the installed release (no network), whatever another test
imported before. Each slug must resolve to a provider (``litellm.get_llm_provider``) and, except
for ``ollama/`` (local models served by name, never in the list), have an entry in that list
(``litellm.get_model_info``), as it must for litellm to price its runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from srez_client.models_catalog import load_catalog, parse_catalog

ROOT = Path(__file__).resolve().parents[2]
CHECK = """
import json, sys
import litellm
out = {}
for slug in json.loads(sys.argv[1]):
    try:
        provider = litellm.get_llm_provider(slug)[1]
    except Exception as e:
        out[slug] = f"no provider: {type(e).__name__}"
        continue
    if provider == "ollama":
        continue
    try:
        litellm.get_model_info(slug)
    except Exception as e:
        out[slug] = f"not in litellm's model list ({provider}): {type(e).__name__}"
print(json.dumps(out))
"""


def unknown_to_litellm(slugs: list[str]) -> dict[str, str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(slugs)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    result: dict[str, str] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_every_catalogue_slug_is_known_to_litellm() -> None:
    catalog = load_catalog(ROOT / "notes" / "available_models.md")
    assert catalog.problems == ()
    assert len(catalog.models) >= 10 and len(catalog.defaults) >= 1
    slugs = [m.slug for m in catalog.models]
    # the check itself fails on an unknown slug, a retired one, and passes a local one
    probe = ["openai/not-a-model-xyz", "gemini/gemini-1.5-pro", "ollama/anything-local"]
    assert set(unknown_to_litellm(slugs + probe)) == set(probe[:2])


def test_the_catalogue_defaults_are_tool_calling_models() -> None:
    text = (ROOT / "notes" / "available_models.md").read_text()
    catalog = parse_catalog(text)
    for slug in catalog.defaults:
        entry = catalog.get(slug)
        assert entry is not None and "tool calling" in entry.note, slug
