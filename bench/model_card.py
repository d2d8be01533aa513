"""``make model-card``: the first real model on the canonical 40, measured a task at a time.

SmolLM2-135M-Instruct, served by llama.cpp's own server (:mod:`bench.llama_server`) on this
machine's CPU, plays every canonical task once as ``srez eval --agent llm-json --backend local``
(seed 0, the sandboxed path any evaluation takes). On two cores a task takes some ten minutes,
so the forty take longer than one sitting: each task's grade is added to a ledger,
:data:`LEDGER`, as soon as its run ends, and the next invocation plays the tasks the ledger does
not hold yet. The ledger is committed with the project, so the measurement goes on across
machines and sessions; ``make card`` quotes it (``docs/benchmark-card.md``, figure
``model-card``) with how many of the forty it covers.

The ledger names what its grades depend on: the grade version, the model file, the server's
settings and the agent's, and with each grade the digest of the task it grades. A ledger written
under other settings is never mixed with new runs and never deleted: the command stops and says
so (``--restart`` moves it aside and starts again). A grade of a task whose content has changed
since (a redrawn canonical task) is no grade of today's task: it moves to the ledger's ``stale``
list, kept with its digest, and the task is played again. A run that ended by a provider or
harness failure is not a grade of the model: it is left out of the ledger and the command stops,
naming the run.

    python -m bench.model_card [--minutes N] [--restart] [--ledger PATH]

``--minutes`` bounds the sitting: no task starts once the time left is less than the slowest
task so far, or ten minutes before one was timed (the run in flight is never cut).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from bench.llama_server import GGUF, MODEL, LlamaServer, model_path
from srez_env.agents.failures import counted

ROOT: Final = Path(__file__).resolve().parent.parent
LEDGER: Final = ROOT / "bench" / "data" / "model-card.json"
RESULTS: Final = ROOT / "results" / "model-card"
AGENT: Final = "llm-json"
SETTINGS: Final = {"SREZ_LLM_MAX_TOKENS": "256"}
"""The agent's settings: a reply is one JSON call, and a small model given room rambles."""
N_CTX: Final = 8192
FIRST_GUESS_S: Final = 600.0
"""How long a task is taken to last before the ledger has timed one (``--minutes``)."""

Json = dict[str, Any]


class LedgerError(Exception):
    """The ledger cannot take this sitting's runs; the message says why and what to do."""


def identity() -> Json:
    """What all the ledger's grades depend on, besides the code of the model itself and each
    grade's task (:func:`task_digests`)."""
    from srez_env.grade import GRADE_SCHEMA_VERSION

    weights = model_path().read_bytes()
    return {
        "model": f"SmolLM2-135M-Instruct ({GGUF}, sha256 {hashlib.sha256(weights).hexdigest()[:16]})",
        "server": f"llama.cpp (xllamacpp), n_ctx {N_CTX}, one slot, two threads",
        "agent": AGENT,
        "slug": MODEL,
        "settings": SETTINGS,
        "grade_version": GRADE_SCHEMA_VERSION,
    }


def task_digests() -> dict[str, str]:
    """Each canonical task's digest, by id, in the set's order."""
    from srez_env.provenance import task_digest
    from srez_env.tasks import load_tasks

    return {task.id: task_digest(task) for task in load_tasks()}


def read_ledger(path: Path, expected: Json) -> Json:
    """The ledger at ``path``, or a new one for ``expected``; raises :class:`LedgerError` for a
    ledger of other settings or one that does not read."""
    if not path.exists():
        return {**expected, "runs": []}
    try:
        ledger: Json = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        msg = f"{path} does not read ({e}); move it aside or run with --restart"
        raise LedgerError(msg) from e
    if any("task_digest" not in run for run in ledger.get("runs", [])):
        msg = f"{path} holds grades that name no task digest; run with --restart to move it aside"
        raise LedgerError(msg)
    differ = sorted(k for k, v in expected.items() if ledger.get(k) != v)
    if differ:
        msg = (
            f"{path} was measured under another {', '.join(differ)}: its grades do not mix with"
            " new ones; run with --restart to move it aside and measure again"
        )
        raise LedgerError(msg)
    return ledger


def write_ledger(path: Path, ledger: Json) -> None:
    """Writes the ledger atomically (a sitting cut at any point leaves the last one whole)."""
    from srez_core.atomic import atomic_write_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(ledger, indent=1, sort_keys=True) + "\n").encode())


def is_current(run: Json, digests: dict[str, str]) -> bool:
    """Whether ``run`` grades the task of its id as it is today."""
    return bool(digests.get(run["task_id"]) == run["task_digest"])


def set_aside_stale(ledger: Json, digests: dict[str, str]) -> list[Json]:
    """Moves the grades of tasks that have changed since (or left the set) from ``runs`` to
    ``stale``, where they are kept; returns them."""
    stale = [run for run in ledger["runs"] if not is_current(run, digests)]
    if stale:
        ledger["runs"] = [run for run in ledger["runs"] if is_current(run, digests)]
        ledger["stale"] = [*ledger.get("stale", []), *stale]
    return stale


def remaining(ledger: Json, task_ids: list[str]) -> list[str]:
    """The canonical tasks the ledger holds no grade of, in the set's order."""
    done = {run["task_id"] for run in ledger["runs"]}
    return [t for t in task_ids if t not in done]


def play(
    server: LlamaServer, task_id: str, results: Path, extra: dict[str, str] | None = None
) -> tuple[Json, float]:
    """One ``srez eval`` of ``task_id`` under ``results`` (``extra`` adds to the agent's
    settings): its grade and wall time; raises :class:`LedgerError` when the run is not the
    model's own result."""
    args = [sys.executable, "-m", "srez_client.cli", "eval", "--agent", AGENT, "--model", MODEL]
    args += ["--tasks", task_id, "--backend", "local", "--results", str(results)]
    args += ["--no-floors", "--json"]
    env = {
        **os.environ,
        "SREZ_STATE": str(results / ".state"),
        "SREZ_LLM_API_BASE": server.base_url,
        "SREZ_LLM_API_KEY": "unused",
        **SETTINGS,
        **(extra or {}),
    }
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        msg = f"{task_id}: srez eval failed: {last}"
        raise LedgerError(msg)
    (row,) = json.loads(done.stdout)["runs"]
    run_dir = Path(row["run_dir"])
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    if not counted(summary.get("error_kind")):  # a provider or harness failure
        msg = f"{task_id}: the run ended by a {summary['error_kind']} failure ({run_dir}); not the model's result"
        raise LedgerError(msg)
    grade: Json = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    return grade, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=None, help="bound this sitting")
    parser.add_argument("--restart", action="store_true", help="move the ledger aside first")
    parser.add_argument("--ledger", type=Path, default=LEDGER, help=f"default {LEDGER}")
    args = parser.parse_args(argv)
    if args.minutes is not None and args.minutes <= 0:
        parser.error(f"--minutes must be above 0, got {args.minutes}")
    digests = task_digests()
    task_ids = list(digests)
    path: Path = args.ledger
    if args.restart and path.exists():
        aside = path.with_name(f"{path.stem}.{time.strftime('%Y%m%dT%H%M%S')}.json")
        path.rename(aside)
        print(f"model-card: the old ledger is now {aside}", file=sys.stderr)
    try:
        ledger = read_ledger(path, identity())
    except LedgerError as e:
        print(f"model-card: {e}", file=sys.stderr)
        return 2
    stale = set_aside_stale(ledger, digests)
    if stale:
        write_ledger(path, ledger)
        print(
            "model-card: grades of tasks changed since they were played, kept under 'stale':"
            f" {', '.join(run['task_id'] for run in stale)}; playing them again",
            file=sys.stderr,
        )
    todo = remaining(ledger, task_ids)
    deadline = None if args.minutes is None else time.monotonic() + 60 * args.minutes
    slowest = max((run["wall_s"] for run in ledger["runs"]), default=FIRST_GUESS_S)

    def time_for_one() -> bool:
        return deadline is None or deadline - time.monotonic() >= slowest

    if todo and time_for_one():
        with LlamaServer(n_ctx=N_CTX) as server:
            for task_id in todo:
                if not time_for_one():
                    break
                try:
                    grade, wall = play(server, task_id, RESULTS)
                except LedgerError as e:
                    print(f"model-card: {e}", file=sys.stderr)
                    return 1
                slowest = max(slowest, wall)
                run = {
                    "task_id": task_id,
                    "task_digest": digests[task_id],
                    "wall_s": round(wall, 1),
                    "grade": grade,
                }
                ledger["runs"].append(run)
                write_ledger(path, ledger)
                print(
                    f"model-card: {task_id} reward {grade['reward']['total']:.3f} in {wall:.0f} s"
                    f" ({len(ledger['runs'])} of {len(task_ids)})",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"model-card: {len(ledger['runs'])} of {len(task_ids)} tasks in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
