"""``srez eval --backend inline`` on two cores: half of the tasks played in a forked process.

The inline runs are CPU-bound and independent, and the machines evaluations run on have more
than one core. :class:`ForkedHalf` forks before the runs start (no thread of this process exists
yet to be copied mid-lock) and gives the child every other task: each process builds the worlds
of its own tasks only. The child plays its jobs exactly as the parent plays the rest
(:func:`~srez_client.backends.inline.host.run_inline`, its own
:class:`~srez_client.commit_queue.CommitQueue`), and sends each finished run back through a pipe
(its grade and report row, pickled, length-prefixed). The parent merges them in job order, so
the report is the one a single process would print.

Interrupts lose nothing that finished: the parent forwards its Ctrl-C (or any exception) to the
child as SIGINT; the child's run in flight is discarded as any interrupted inline run is, its
finished folders are completed, and everything it sent is read before the parent goes on. A child
that fails otherwise (an exception, a crash) is reported as the run loop's error, after what it
finished was read.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from types import FrameType
from typing import Any, Self

from srez_client.errors import ResultsError
from srez_client.layout import RunFolder
from srez_env.task import Task

Job = tuple[str, Task, int]
Finished = tuple[int, dict[str, object], dict[str, object], str | None]
"""(job index, grade, report row, the agent's error) of one finished run."""
Played = tuple[dict[str, object], dict[str, object], str | None]
"""What one run gave: its grade, report row and the agent's error."""
PlayOne = Callable[[Job, Callable[[RunFolder], None]], Played]
"""Plays one job, completing its folder with the given commit: its grade, report row and the
agent's error."""

Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
"""What :func:`signal.getsignal` returns."""

_HEADER = struct.Struct("!I")
_FAILED = -1
"""The job index of the child's last message when it failed (its text follows)."""


def can_fork() -> bool:
    """Fork is cheap on Linux, safe only while this process has no other thread (a thread
    holding a lock at the fork would leave it held in the child forever), and pays only with a
    second core."""
    return (
        sys.platform == "linux"
        and threading.active_count() == 1
        and len(os.sched_getaffinity(0)) > 1
    )


def split_by_task(jobs: list[Job]) -> tuple[list[int], list[int]]:
    """The job indices of this process and of the child: every other task goes to the child."""
    order = list(dict.fromkeys(task.id for _spec, task, _seed in jobs))
    child_tasks = set(order[1::2])
    mine = [i for i, (_s, task, _n) in enumerate(jobs) if task.id not in child_tasks]
    theirs = [i for i, (_s, task, _n) in enumerate(jobs) if task.id in child_tasks]
    return mine, theirs


class ForkedHalf:
    """The child playing ``indices`` of ``jobs`` with ``play``; read with :meth:`finished`."""

    def __init__(self, jobs: list[Job], indices: list[int], play: PlayOne) -> None:
        read, write = os.pipe()
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # the child: play, send, leave without unwinding the parent's state
            os.close(read)
            _die_with(parent)
            _child(jobs, indices, play, write)
        os.close(write)
        self._read = read
        self._buffer = b""
        self._done = False
        self.failure: str | None = None

    def ready(self) -> Iterator[Finished]:
        """The runs the child finished since the last call, without waiting."""
        while not self._done and select.select([self._read], [], [], 0)[0]:
            yield from self._take(os.read(self._read, 1 << 16))

    def rest(self) -> Iterator[Finished]:
        """Every run the child still sends, until it ends; then it is reaped."""
        while not self._done:
            yield from self._take(os.read(self._read, 1 << 16))
        os.close(self._read)
        _, status = os.waitpid(self.pid, 0)
        if os.waitstatus_to_exitcode(status) not in (0, -signal.SIGINT) and self.failure is None:
            self.failure = f"the process playing half of the tasks ended with status {status}"

    def interrupt(self) -> None:
        """Asks the child to stop after its run in flight (which it discards)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGINT)

    def _take(self, data: bytes) -> Iterator[Finished]:
        if not data:
            self._done = True
            return
        self._buffer += data
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if len(self._buffer) < _HEADER.size + size:
                return
            message = self._buffer[_HEADER.size : _HEADER.size + size]
            self._buffer = self._buffer[_HEADER.size + size :]
            finished: Any = pickle.loads(message)  # noqa: S301 - written by our own fork
            if finished[0] == _FAILED:
                self.failure = str(finished[1])
            else:
                yield finished


class HeldInterrupts:
    """SIGINT held while the run loop keeps its books, let through only while a run plays.

    A run loop must not be cut between a run's handover and its record (the folder ends final,
    so it would be kept on disk and missing from the count and the report), nor while it reads
    the other half's pipe (a message read and not yet parsed would be lost, and every message
    after it with it). Inside the ``with`` block a SIGINT waits, and acts (as the handler it
    replaced) when :meth:`playing` next lets it through or when the block ends. A Python handler,
    not a signal mask: a mask holds for the calling thread only, and the kernel gives a
    process-directed SIGINT to any thread that does not mask it (the commit queue's, tqdm's
    monitor), whose C handler still has the main thread raise.
    """

    def __init__(self) -> None:
        self._previous: Handler = signal.SIG_DFL
        self._held = True
        self._pending: list[FrameType | None] = []

    def __enter__(self) -> Self:
        self._previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if signal.getsignal(signal.SIGINT) == self._on_sigint:  # a handler may have set its own
            signal.signal(signal.SIGINT, self._previous)
        if self._pending and kind is None:
            _deliver(self._previous, signal.SIGINT, self._pending.pop())

    def hold(self) -> None:
        """From now on a SIGINT waits (a run's folder is being handed over)."""
        self._held = True

    @contextlib.contextmanager
    def playing(self) -> Iterator[None]:
        """Lets SIGINT through inside (one that waited acts first); holds it again after."""
        self._held = False
        try:
            if self._pending:
                _deliver(self._previous, signal.SIGINT, self._pending.pop())
            yield
        finally:
            self._held = True

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self._held:
            self._pending.append(frame)
        else:
            _deliver(self._previous, signum, frame)


def _deliver(handler: Handler, signum: int, frame: FrameType | None) -> None:
    """Acts on a SIGINT as ``handler`` (a previous ``signal.getsignal``) would."""
    if callable(handler):
        handler(signum, frame)
    elif handler != signal.SIG_IGN:  # the default action, or a handler set outside Python
        raise KeyboardInterrupt


def play_recorded(
    play: PlayOne,
    job: Job,
    submit: Callable[[RunFolder], None],
    record: Callable[[Played], None],
    interrupts: HeldInterrupts,
) -> None:
    """Plays ``job`` with SIGINT let through until its folder is handed over (to ``submit``),
    then records what it gave with SIGINT held (see :class:`HeldInterrupts`)."""

    def hand_over(folder: RunFolder) -> None:
        interrupts.hold()
        submit(folder)

    with interrupts.playing():
        got = play(job, hand_over)
    record(got)


def _child(jobs: list[Job], indices: list[int], play: PlayOne, write: int) -> None:
    from srez_client.commit_queue import CommitQueue

    def stop(_signum: int, _frame: object) -> None:
        # once: a Ctrl-C reaches this process from the terminal and from the parent, and the
        # second must not cut the completion of the folders that finished
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    status = 0
    try:
        with CommitQueue() as commits, HeldInterrupts() as interrupts:
            for index in indices:
                send = partial(_send_run, write, index)
                play_recorded(play, jobs[index], commits.submit, send, interrupts)
    except KeyboardInterrupt:
        pass  # asked to stop: what finished was sent and is final, the run in flight left nothing
    except BaseException as e:  # sent to the parent, which raises it as the loop's error
        with contextlib.suppress(BaseException):
            _send(write, (_FAILED, f"{type(e).__name__}: {e}"))
        status = 1
    finally:
        os._exit(status)


def _send_run(fd: int, index: int, got: Played) -> None:
    _send(fd, (index, *got))


def _die_with(parent: int) -> None:
    """Has the kernel kill this process when the parent dies (``kill -9`` included): an orphan
    would go on writing runs beside a ``--resume`` of the same evaluation."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the prctl
        os._exit(1)


def _send(fd: int, message: object) -> None:
    data = pickle.dumps(message)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def check(half: ForkedHalf) -> None:
    """Raises the child's failure, once everything it finished was merged."""
    if half.failure is not None:
        raise ResultsError(half.failure)
