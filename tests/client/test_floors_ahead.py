"""The floors played ahead in a forked process (srez_client.floors.FloorsAhead): the same grades
as played here, the child reaped whatever happens, and a fallback when it fails.

Each case runs in a fresh interpreter: the fork is taken only in a process with no other thread,
which a pytest worker is not.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = """
import logging, os, sys, threading
logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stdout)
from srez_client import floors
from srez_client.floors import FloorsAhead, floor_grades
from srez_env.tasks import load_tasks

tasks = load_tasks(["sre-001", "sre-007", "sre-013"])
planned = [(t, s) for t in tasks for s in (0, 1)]
parent = os.getpid()

def children():
    # this process's children, zombies included: none once every child was reaped
    try:
        return [os.waitpid(-1, os.WNOHANG)]
    except ChildProcessError:
        return []
"""


def run(body: str) -> str:
    code = PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_forked_floors_grade_as_the_floors_played_here() -> None:
    out = run("""
        ahead = FloorsAhead(["noop", "restart-all"], planned)
        assert ahead._child is not None, "no fork"
        got = ahead.grades(planned)
        assert got == floor_grades(["noop", "restart-all"], planned)
        assert len(got) == 12 and {g["agent"] for g in got} == {"noop", "restart-all"}
        assert children() == [], children()
        print("same")
    """)
    assert out.strip() == "same"


def test_other_pairs_are_played_here_and_the_child_is_reaped() -> None:
    out = run("""
        ahead = FloorsAhead(["noop"], planned)
        kept = planned[:2]  # a --limit or a failed run kept fewer than planned
        assert ahead.grades(kept) == floor_grades(["noop"], kept)
        assert children() == [], children()
        print("kept")
    """)
    assert out.strip() == "kept"


def test_a_failing_child_falls_back_with_a_warning() -> None:
    out = run("""
        real = floors.floor_grades
        def fails_in_the_child(*args):
            if os.getpid() != parent:
                raise RuntimeError("boom")
            return real(*args)
        floors.floor_grades = fails_in_the_child
        ahead = FloorsAhead(["noop"], planned)
        assert ahead.grades(planned) == real(["noop"], planned)
        print("fell back")
    """)
    assert "the process playing them failed" in out
    assert out.strip().endswith("fell back")


def test_close_stops_a_child_not_read() -> None:
    out = run("""
        ahead = FloorsAhead(["noop", "restart-all"], planned)
        pid = ahead._child[0]
        ahead.close()
        assert children() == [], children()
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            print("gone")
    """)
    assert out.strip() == "gone"


def test_no_fork_while_another_thread_runs() -> None:
    out = run("""
        stop = threading.Event()
        threading.Thread(target=stop.wait).start()
        ahead = FloorsAhead(["noop"], planned)
        assert ahead._child is None
        assert ahead.grades(planned) == floor_grades(["noop"], planned)
        stop.set()
        print("here")
    """)
    assert out.strip() == "here"
