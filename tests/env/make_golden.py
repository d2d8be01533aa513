"""Regenerates the golden files of the environment tests (``make golden``); review the diff.

* ``golden/<id>.patch``: the reference patch of each task.
* ``golden/<id>-seed0.jsonl``: the scripted expert's transcript (run seed 0).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from envkit import run_agent  # noqa: E402

from srez_env.grade import reference_patch  # noqa: E402
from srez_env.tasks import load_tasks  # noqa: E402

GOLDEN = (
    HERE / "golden"
)  # not srez_env/...: a folder of that name on sys.path would shadow the package


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for task in load_tasks():
        (GOLDEN / f"{task.id}.patch").write_text(reference_patch(task))
        env = run_agent(task, "scripted")
        (GOLDEN / f"{task.id}-seed0.jsonl").write_text("\n".join(env.transcript) + "\n")
    print(f"wrote golden files for {len(load_tasks())} tasks to {GOLDEN}")


if __name__ == "__main__":
    main()
