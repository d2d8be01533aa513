"""``srez eval --backend inline`` with every other task in a forked process
(srez_client.inline_split): the same report as one process, nothing lost on Ctrl-C or kill -9,
and a failing child reported after what it finished."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from srez_client.inline_split import HeldInterrupts, split_by_task
from srez_client.results.finder import find_results
from srez_env.tasks import load_tasks

SREZ = Path(sys.executable).parent / "srez"


def finals(results: Path) -> list[Path]:
    return [p for p in results.glob("*/*/*/*") if not p.name.startswith(".")]


def test_every_other_task_goes_to_the_child() -> None:
    tasks = load_tasks(["sre-001", "sre-002", "sre-003"])
    jobs = [(spec, task, seed) for spec in ("a", "b") for task in tasks for seed in (0, 1)]
    mine, theirs = split_by_task(jobs)
    assert sorted(mine + theirs) == list(range(len(jobs)))
    assert {jobs[i][1].id for i in theirs} == {"sre-002"}
    assert {jobs[i][1].id for i in mine} == {"sre-001", "sre-003"}


def eval_json(results: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, object]:
    argv = [str(SREZ), "eval", "--agent", "scripted,random", "--tasks", "all", "--seeds", "2"]
    argv += ["--backend", "inline", "--results", str(results), "--json", *extra]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_the_split_reports_what_one_process_reports(tmp_path: Path) -> None:
    """The same aggregates, comparisons and floors, and the runs in the same order, as the
    single process gives (a process with a second thread never forks: the reference)."""
    split = eval_json(tmp_path / "split")
    one = subprocess.run(
        [
            sys.executable,
            "-c",
            "import threading, sys; threading.Thread(target=threading.Event().wait, daemon=True)"
            ".start(); from srez_client.cli import main; sys.exit(main(sys.argv[1:]))",
            *["eval", "--agent", "scripted,random", "--tasks", "all", "--seeds", "2"],
            *["--backend", "inline", "--results", str(tmp_path / "one"), "--json"],
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert one.returncode == 0, one.stderr
    single = json.loads(one.stdout)
    for key in ("agents", "leaderboard", "comparisons", "floors"):
        assert split[key] == single[key], key
    runs = split["runs"]
    assert isinstance(runs, list) and len(runs) == 160
    order = [(r["agent"], r["task_id"], r["run_seed"]) for r in runs]
    assert order == [(r["agent"], r["task_id"], r["run_seed"]) for r in single["runs"]]
    assert len(find_results(tmp_path / "split")) == 160
    assert not list((tmp_path / "split").glob("*/*/*/.*.partial"))


def interrupt_from_another_thread() -> None:
    """A process-directed SIGINT as a terminal sends it, while a second thread runs: the
    kernel may hand it to that thread, whose C handler still has the main thread raise."""
    worker = threading.Thread(target=lambda: time.sleep(0.2))
    worker.start()
    signal.raise_signal(signal.SIGINT)
    worker.join()


def held_then_played(books: list[str]) -> None:
    with HeldInterrupts() as interrupts:
        interrupt_from_another_thread()
        books.append("recorded")  # the bookkeeping after a handover is not cut
        with interrupts.playing():
            books.append("played")  # never: the interrupt that waited acts first


def interrupted_while_playing(books: list[str]) -> None:
    with HeldInterrupts() as interrupts, interrupts.playing():
        interrupt_from_another_thread()
        time.sleep(1)
        books.append("played on")


def held_to_the_end(books: list[str]) -> None:
    with HeldInterrupts():
        interrupt_from_another_thread()
        books.append("recorded")


@pytest.mark.parametrize(
    ("loop", "done"),
    [
        (held_then_played, ["recorded"]),
        (interrupted_while_playing, []),
        (held_to_the_end, ["recorded"]),
    ],
)
def test_a_held_interrupt_waits_for_the_books_and_acts_when_a_run_plays(
    loop: Callable[[list[str]], None], done: list[str]
) -> None:
    books: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        loop(books)
    assert books == done
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_keeps_what_both_halves_finished_and_resume_plays_the_rest(tmp_path: Path) -> None:
    results = tmp_path / "results"
    argv = [str(SREZ), "eval", "--agent", "scripted,random,heuristic", "--tasks", "all"]
    argv += ["--backend", "inline", "--results", str(results)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(finals(results)) < 10:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)  # to the parent only: it stops the child itself
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    kept = finals(results)
    assert 10 <= len(kept) < 120
    assert f"interrupted after {len(kept)} of 120 runs" in err, err
    assert not list(results.glob("*/*/*/.*.partial")), "a half-written run was left"
    for run in kept:
        assert (run / "summary.json").stat().st_size > 0
    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{len(kept)} of 120 runs already complete" in done.stderr
    assert len(find_results(results)) == 120


def test_a_child_that_fails_is_reported_after_what_it_finished() -> None:
    code = textwrap.dedent("""
        from srez_client import inline_split
        from srez_client.errors import ResultsError
        from srez_env.tasks import load_tasks

        tasks = load_tasks(["sre-001", "sre-002"])
        jobs = [("scripted", t, s) for t in tasks for s in range(3)]

        def play(job, commit):
            _spec, task, seed = job
            if seed == 2:
                raise OSError("disk full")
            return {"task": task.id, "seed": seed}, {}, None

        half = inline_split.ForkedHalf(jobs, [3, 4, 5], play)
        got = sorted((g["task"], g["seed"]) for _i, g, _r, _e in half.rest())
        assert got == [("sre-002", 0), ("sre-002", 1)], got
        try:
            inline_split.check(half)
        except ResultsError as e:
            print("raised:", e)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "raised: OSError: disk full"


def test_the_child_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """kill -9 of the evaluation: its child does not go on writing runs (it would race a
    --resume), and every folder under a final name is whole."""
    results = tmp_path / "results"
    argv = [str(SREZ), "eval", "--agent", "scripted,random,heuristic", "--tasks", "all"]
    argv += ["--backend", "inline", "--results", str(results)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(finals(results)) < 10:
        time.sleep(0.01)
    children = psutil.Process(proc.pid).children()
    assert children, "no forked half"
    proc.kill()
    proc.wait()
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], "the child outlived it"
    settled = len(finals(results))
    time.sleep(0.5)
    assert len(finals(results)) == settled, "runs were still written after the kill"
    for run in finals(results):
        assert (run / "summary.json").stat().st_size > 0
