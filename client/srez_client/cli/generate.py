"""``srez tasks generate``: a fresh, verified task set from a seed (docs/environment.md §6.15).

Every task is a row of the matrix placed in its own drawn world and held to the canonical
contract (oracle 1.000, T0 fires exactly its injection, the reference clears it, the calibrators
behave as declared); a task that cannot be made to pass is refused and nothing is written. The
set is reproducible from (generator version, seed); a held-out set is one whose seed is kept
private. ``srez eval --tasks-dir DIR`` runs it (or ``--task-seed N``, which draws the set of 40
into a private cache itself: :mod:`srez_client.task_sets`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from srez_client.cli.parser import command
from srez_env.vocab import FAULT_KINDS

MAX_SEED = 2**53 - 1
"""``srez_env.generator.sets.MAX_SEED``, kept here so that parsing needs no generator (a test
holds them equal)."""


def add_parser(tasks_sub: Any) -> None:
    """Adds ``generate`` to the ``srez tasks`` subcommands."""
    gen = tasks_sub.add_parser(
        "generate", help="write a fresh task set drawn from a seed, every task verified"
    )
    gen.add_argument(
        "--seed",
        type=_seed,
        required=True,
        help=f"the set's seed (an integer from 0 to {MAX_SEED})",
    )
    gen.add_argument("--count", type=_count, default=40, help="how many tasks, 1-999 (40)")
    gen.add_argument("--out", type=Path, required=True, help="an empty or new folder")
    gen.add_argument(
        "--kinds",
        default=None,
        help="comma list of fault kinds (default: every kind and the no-fault control): "
        + ", ".join(FAULT_KINDS),
    )
    gen.add_argument(
        "--difficulty", default=None, help="comma list of easy, medium, hard (default: all)"
    )
    gen.set_defaults(func=command("srez_client.cli.generate:cmd_tasks_generate"))


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        msg = f"{text!r} is not a seed (an integer from 0 to {MAX_SEED})"
        raise argparse.ArgumentTypeError(msg)
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 999:
        msg = f"{text!r} is not a count (an integer from 1 to 999)"
        raise argparse.ArgumentTypeError(msg)
    return value


def _list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [part.strip() for part in text.split(",")]
    if not all(items):
        msg = f"empty item in {text!r} (write a comma list with no blanks)"
        raise ValueError(msg)
    return items


def cmd_tasks_generate(args: argparse.Namespace) -> int:
    """Generates, verifies and writes the set; exit 2 (nothing written) on any refusal."""
    # Imported here: the generator is not needed by any other command's start-up.
    from srez_client.task_sets import write_generated_set
    from srez_env.generator import sets
    from srez_env.generator.worlds import GENERATOR

    out: Path = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        return _fail(f"{out} exists and is not an empty folder (a set is written to a new one)")
    try:
        kinds, difficulty = _list(args.kinds), _list(args.difficulty)
        ids = write_generated_set(out, args.seed, args.count, kinds, difficulty)
    except sets.GenerationError as e:  # a task that never verified (docs/environment.md §6.15)
        return _fail(
            f"could not generate task {e}; nothing written "
            "(try another --seed, or leave that task's kind out with --kinds)"
        )
    except ValueError as e:  # a bad filter
        return _fail(f"{e}; nothing written")
    print(f"wrote {len(ids)} verified tasks ({GENERATOR}, seed {args.seed}) to {out}")
    return 0


def _fail(message: str) -> int:
    sys.stderr.write(f"srez: error: {message}\n")
    return 2
