"""``make bench`` figures of the LLM agents against a real model: SmolLM2-135M-Instruct served
by llama.cpp's own server (:mod:`bench.llama_server`), on this machine's CPU.

* ``evals``: a ten-task ``srez eval --agent llm-json`` on ``local``, on ``ray`` (a Ray instance
  of the command's own on 127.0.0.1) and on a generated set (seed :data:`HELD_OUT_SEED`), each
  task cut after a few model calls by a price and a cost cap (the agent then submits: a whole
  episode, a short one), with its wall time, its model calls, its invalid-action rate (replies
  the environment rejected: not one JSON call, or arguments the tool refuses) and the harness's
  time per step (from the agent's reply to the observation it gets back: posting the action,
  the environment's step, the dialog; p50 and p99 over every step);
* ``invalid_rate_without_schema``: the same ``local`` eval on three tasks with
  ``SREZ_LLM_RESPONSE_FORMAT=0``: what the schema in ``response_format`` is worth;
* ``relay_overhead_ms``: what the launcher's model relay adds to a model call, p50 and p99:
  the same small completion asked of the server directly and through a
  :class:`~srez_client.relay.server.ModelRelay`, alternating, in this process.

The figures are measured, never asserted: a slower machine gives larger times.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from bench.llama_server import MODEL, LlamaServer

TASKS: Final = ",".join(f"sre-{n:03d}" for n in range(1, 11))
HELD_OUT_SEED: Final = 9001
INVALID_CODES: Final = ("PARSE_ERROR", "BAD_ARGS", "UNKNOWN_TOOL")
CAPPED: Final = {
    "SREZ_LLM_MAX_TOKENS": "256",
    "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.001",
    "SREZ_LLM_COST_CAP_USD": "3",  # some three calls: the prompt alone is 1,300 tokens
}
RELAY_CALLS: Final = 20


def _srez(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "srez_client.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )


def _ts(entry: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(entry["ts"]).replace("Z", "+00:00")).timestamp()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _dialog_figures(results: Path) -> dict[str, Any]:
    """Model calls, invalid actions and the harness's time per step over every run's dialog."""
    calls = steps = invalid = 0
    harness_ms: list[float] = []
    for path in results.glob("*/*/*/*/archive/dialog.jsonl"):
        entries = [json.loads(line) for line in path.read_text().splitlines()]
        replied: float | None = None
        for entry in entries:
            if entry["type"] == "assistant":
                calls += 1
                replied = _ts(entry)
            elif entry["type"] == "tool_result":
                steps += 1
                invalid += any(code in str(entry.get("result")) for code in INVALID_CODES)
                if replied is not None:
                    harness_ms.append(1000 * (_ts(entry) - replied))
                    replied = None
    return {
        "model_calls": calls,
        "steps": steps,
        "invalid_action_rate": round(invalid / steps, 3) if steps else None,
        "harness_ms_per_step": {
            "p50": round(_pct(harness_ms, 0.5), 1),
            "p99": round(_pct(harness_ms, 0.99), 1),
        },
    }


def _eval(server: LlamaServer, folder: Path, *extra: str, **env: str) -> dict[str, Any]:
    results = folder / "results"
    args = ["eval", "--agent", "llm-json", "--model", MODEL, "--no-floors", "--json"]
    args += ["--results", str(results), *extra]
    model_env = {"SREZ_LLM_API_BASE": server.base_url, "SREZ_LLM_API_KEY": "unused", **CAPPED}
    started = time.perf_counter()
    done = _srez(args, {"SREZ_STATE": str(folder / "state"), **model_env, **env})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["no output"]}
    report = json.loads(done.stdout)
    runs = report["runs"]
    return {
        "tasks": len(runs),
        "wall_s": round(wall, 1),
        "mean_reward": round(statistics.fmean(r["reward"] or 0.0 for r in runs), 3),
        **_dialog_figures(results),
    }


def _complete(url: str, token: str | None) -> float:
    body = {"model": "m", "messages": [{"role": "user", "content": "Say ok."}], "max_tokens": 1}
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{url}/chat/completions", json.dumps(body).encode(), headers)
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as answer:
        answer.read()
    return 1000 * (time.perf_counter() - started)


def _relay_overhead(server: LlamaServer) -> dict[str, float]:
    """p50/p99 of (through the relay - direct), alternating, over :data:`RELAY_CALLS` pairs."""
    from srez_client.relay.server import ModelRelay

    relay = ModelRelay("127.0.0.1")
    relay.start_blocking()
    try:
        _complete(server.base_url, None)  # the server's first answer and litellm's import
        extra: list[float] = []
        for n in range(RELAY_CALLS + 1):
            # a fresh run each time: the relay answers a repeated request of one run itself
            grant = relay.register(f"bench-{n}", MODEL, server.base_url, api_key="unused")
            through = _complete(grant.base_url, grant.token)
            direct = _complete(server.base_url, None)
            if n:  # the first call through the relay imports litellm
                extra.append(through - direct)
    finally:
        relay.close_blocking()
    return {"p50": round(_pct(extra, 0.5), 2), "p99": round(_pct(extra, 0.99), 2)}


def real_model_figures() -> dict[str, Any]:
    """Every figure of the module docstring."""
    with tempfile.TemporaryDirectory(prefix="srez-bench-model-") as tmp:
        root = Path(tmp)
        with LlamaServer(n_ctx=8192, log=root / "server.log") as server:
            figures: dict[str, Any] = {
                "model": "SmolLM2-135M-Instruct Q4_1 on llama.cpp (xllamacpp), 8k context",
                "relay_overhead_ms": _relay_overhead(server),
            }
            local = ["--backend", "local", "--tasks", TASKS]
            figures["evals"] = {
                "local": _eval(server, root / "local", *local),
                "ray": _eval(server, root / "ray", "--backend", "ray", "--tasks", TASKS),
                "generated_set": _eval(
                    server,
                    root / "set",
                    *local[:2],
                    "--task-seed",
                    str(HELD_OUT_SEED),
                    "--limit",
                    "10",
                ),  # fmt: skip
            }
            figures["invalid_rate_without_schema"] = _eval(
                server, root / "plain", "--backend", "local", "--tasks", "sre-001,sre-002,sre-003",
                SREZ_LLM_RESPONSE_FORMAT="0",
            )["invalid_action_rate"]  # fmt: skip
    return figures


if __name__ == "__main__":
    print(json.dumps(real_model_figures(), indent=2))
