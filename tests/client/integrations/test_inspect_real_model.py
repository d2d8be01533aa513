"""``inspect eval srez/sre_zero`` against a real model server that no one here wrote: llama.cpp's
own server (``xllamacpp``) serving SmolLM2-135M-Instruct on loopback (``bench/llama_server.py``),
reached through Inspect's own OpenAI-compatible provider (``openai-api/<service>/<model>`` with
``<SERVICE>_BASE_URL``), as a user of Inspect would point it at a local server.

Inspect's OpenAI-compatible providers need ``openai>=3.4``, which the ``verifiers`` extra does not
allow, so Inspect runs from a venv of its own (``.venv-inspect``: srez and Inspect alone, made by
``make test``). A missing venv is an error, never a skip.

What only a real server shows: the project's tool schemas are accepted by a real server's
tool-calling template, a real model's replies (whatever they are: SmolLM2 rarely calls a tool)
come back through Inspect into the episode, and a sample that Inspect's message limit ends is
still graded by the harness, with the five checks and the reward.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.llama_server import LlamaServer

from srez_env.actions import openai_tools

ROOT = Path(__file__).resolve().parents[3]
INSPECT_PYTHON = ROOT / ".venv-inspect" / "bin" / "python"
CHECKS = {"valid", "func", "safe", "intent", "rca"}

READ_LOG = """
import json, sys
from inspect_ai.log import read_eval_log
log = read_eval_log(sys.argv[1])
(sample,) = log.samples
(score,) = sample.scores.values()
tools = set()
for event in sample.events:
    if event.event == "model":
        tools |= {tool.name for tool in event.tools}
print(json.dumps({
    "status": log.status,
    "task": log.eval.task,
    "model": log.eval.model,
    "sample": sample.id,
    "limit": sample.limit.type if sample.limit else None,
    "score": score.value,
    "explanation": score.explanation,
    "assistant": sum(m.role == "assistant" for m in sample.messages),
    "output_tokens": sample.output.usage.output_tokens if sample.output.usage else 0,
    "tools": sorted(tools),
}))
"""


def test_inspect_eval_of_a_real_model_runs_and_grades_its_sample(
    llama: LlamaServer, tmp_path: Path
) -> None:
    assert INSPECT_PYTHON.is_file(), (
        f"{INSPECT_PYTHON} is missing: `make test` makes it (Inspect needs openai>=3.4, which the"
        " dev venv cannot hold beside verifiers)"
    )
    logs = tmp_path / "logs"
    command = [str(INSPECT_PYTHON), "-m", "inspect_ai", "eval", "srez/sre_zero"]
    command += ["--model", "openai-api/llama/smollm2", "--max-tokens", "256"]
    command += ["-T", "tasks=sre-001", "--message-limit", "6"]
    command += ["--log-dir", str(logs), "--display", "none"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SREZ_", "PYTEST", "OPENAI_"))}
    env.update(LLAMA_BASE_URL=llama.base_url, LLAMA_API_KEY="unused")
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    (path,) = logs.glob("*.eval")
    read = subprocess.run(
        [str(INSPECT_PYTHON), "-c", READ_LOG, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    import json

    log = json.loads(read.stdout)
    assert (log["status"], log["task"], log["model"]) == (
        "success",
        "srez/sre_zero",
        "openai-api/llama/smollm2",
    )
    assert log["sample"] == "sre-001" and log["limit"] == "message"
    # the real model answered, every time through Inspect into the episode
    assert log["assistant"] >= 2 and log["output_tokens"] > 0, log
    # it was offered the project's tools, by their names
    assert {spec["function"]["name"] for spec in openai_tools()} <= set(log["tools"]), log
    # and the sample the limit ended was graded by the harness: five checks and the reward
    assert set(log["score"]) >= CHECKS and "reward" in log["score"], log["score"]
    assert all(log["score"][check] in (0.0, 1.0) for check in CHECKS), log["score"]
    assert "valid:" in log["explanation"] and "rca:" in log["explanation"], log["explanation"]
    assert sys.executable != str(INSPECT_PYTHON)  # the dev venv's openai stayed as it was
