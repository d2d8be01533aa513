"""Suite-wide rules: docker-marked tests skip only when no Docker engine answers, and fail
instead when ``REQUIRE_DOCKER=1`` (so CI cannot go green by silently skipping them); tmux-marked
tests likewise skip only when tmux is missing, and fail instead when ``REQUIRE_TMUX=1``; pty-marked
tests skip only when no pseudo-terminal opens, and fail instead when ``REQUIRE_PTY=1``;
browser-marked tests skip only when Debian's chromium or chromedriver is missing, and fail instead
when ``REQUIRE_BROWSER=1``; tests that
take the ``bwrap`` fixture skip only when bubblewrap cannot make a sandbox here, and fail instead
when ``REQUIRE_BWRAP=1``; the ``fake_openai`` fixture, a scripted OpenAI-compatible server (``tests/fakes/openai_server.py``);
and no resource may outlive the session: after the last test's teardown, a garbage collection
must raise no ``ResourceWarning`` and no TCP socket may still be open (one that is would be
collected unclosed at interpreter exit, after pytest, where no warning filter turns it into a
failure). That teardown then fails, naming them; under xdist each worker checks its own."""

from __future__ import annotations

import functools
import gc
import os
import shutil
import socket
import sys
import warnings
from collections.abc import Generator, Iterator

import pytest

from fakes.openai_server import FakeOpenAI


@functools.cache
def _engine_problem() -> str | None:
    try:
        import docker

        client = docker.from_env(timeout=3)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as e:  # any failure means: no usable engine here
        return f"no Docker engine answers ({type(e).__name__}: {str(e)[:120]})"
    return None


@pytest.hookimpl(trylast=True)  # after -m deselection: no engine ping when no docker test runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    needs = (
        ("docker", "REQUIRE_DOCKER", _engine_problem),
        ("tmux", "REQUIRE_TMUX", _tmux_problem),
        ("pty", "REQUIRE_PTY", _pty_problem),
        ("browser", "REQUIRE_BROWSER", _browser_problem),
    )
    for marker, required_by, problem_of in needs:
        marked = [item for item in items if item.get_closest_marker(marker)]
        problem = problem_of() if marked else None
        if problem is None:
            continue
        if os.environ.get(required_by) == "1":
            raise pytest.UsageError(f"{required_by}=1 but {problem}")
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=problem))


def _browser_problem() -> str | None:
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    return (
        f"{' and '.join(missing)} not installed (Debian: chromium chromium-driver)"
        if missing
        else None
    )


def _tmux_problem() -> str | None:
    return None if shutil.which("tmux") else "tmux is not installed"


def _pty_problem() -> str | None:
    from srez_daemon.probe import terminal_available

    return None if terminal_available() else "no pseudo-terminal can be opened here"


@functools.cache
def _bwrap_problem() -> str | None:
    from srez_client.backends.local.sandbox import bwrap_problem
    from srez_daemon.protocol.sandbox import find_bwrap

    found = find_bwrap(os.environ)
    return "bubblewrap is not installed" if found is None else bwrap_problem(found)


@pytest.fixture(scope="session")
def bwrap() -> None:
    """Skips the test when bubblewrap cannot make a sandbox here (fails with REQUIRE_BWRAP=1)."""
    problem = _bwrap_problem()
    if problem is None:
        return
    if os.environ.get("REQUIRE_BWRAP") == "1":
        pytest.fail(f"REQUIRE_BWRAP=1 but {problem}")
    pytest.skip(problem)


@pytest.fixture(scope="module")
def fake_openai_server() -> Iterator[FakeOpenAI]:
    """One scripted OpenAI-compatible server per test module (see ``tests/fakes``)."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAI) -> FakeOpenAI:
    """The module's fake OpenAI server with an empty script and no recorded requests."""
    fake_openai_server.reset()
    return fake_openai_server


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """After the last test's teardown (every fixture finalised): fails it if anything leaked."""
    yield
    if nextitem is None:
        leaks = session_leaks()
        if leaks:
            pytest.fail("resources outlive the test session:\n" + "\n".join(leaks))


def session_leaks() -> list[str]:
    """``ResourceWarning``s a garbage collection raises now, and the TCP sockets still open."""
    found: list[str] = []

    def capture(unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, ResourceWarning):
            found.append(f"ResourceWarning: {unraisable.exc_value}")
        else:
            previous(unraisable)  # pytest's own hook reports the others

    previous = sys.unraisablehook
    sys.unraisablehook = capture
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)  # a warning in __del__ is unraisable
            gc.collect()
    finally:
        sys.unraisablehook = previous
    inet = (socket.AF_INET, socket.AF_INET6)
    found.extend(
        f"still open (collected unclosed at exit): {obj!r}"
        for obj in gc.get_objects()
        if isinstance(obj, socket.socket) and obj.fileno() != -1 and obj.family in inet
    )
    return found
