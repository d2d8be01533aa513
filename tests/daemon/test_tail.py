"""DialogTail on real files: torn tails, oversized lines, truncation and rotation (docs/security.md
§4.4 tests 24-26; 24 at 1 GiB in the slow suite), page reads by offset, and both change sources."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psutil
import pytest
from dialogkit import append, line

from srez_core.aio import spawn
from srez_daemon.file_watch import Watcher
from srez_daemon.protocol import MAX_LINE_BYTES, ErrorEntry, Thinking, parse_line
from srez_daemon.protocol.api import DialogFrame
from srez_daemon.tail import DialogTail


def size_of(path: Path) -> int:
    return path.stat().st_size


def link(path: Path, target: Path) -> None:
    path.symlink_to(target)


def file_frames(data: bytes) -> list[tuple[int, int, dict[str, object]]]:
    """(offset, next_offset, entry) of every complete, non-blank line, as a reader must see it."""
    out = []
    offset, line_no = 0, 0
    while (end := data.find(b"\n", offset)) >= 0:
        line_no += 1
        raw = data[offset : end + 1]
        if raw.strip():
            entry = parse_line(raw, line_no=line_no, offset=offset)
            out.append((offset, end + 1, entry.model_dump()))
        offset = end + 1
    return out


def is_error(frame: DialogFrame, kind: str) -> bool:
    return isinstance(frame.entry, ErrorEntry) and frame.entry.kind == kind


class Collector:
    """Every frame the tail delivers, and what a viewer holds after applying them."""

    def __init__(self, tail: DialogTail) -> None:
        self.frames: list[DialogFrame] = []
        self.view: list[DialogFrame] = []
        self.resets = 0
        self.repeated = 0  # frames starting before the end of what the viewer already holds
        self._event = asyncio.Event()
        tail.add_listener(self._on)

    def _on(self, frame: DialogFrame) -> None:
        self.frames.append(frame)
        if is_error(frame, "file_reset"):
            self.resets += 1
            self.view = [f for f in self.view if f.offset < frame.offset]
        else:
            if self.view and frame.offset < self.view[-1].next_offset:
                self.repeated += 1
            self.view.append(frame)
        self._event.set()

    def view_triples(self) -> list[tuple[int, int, dict[str, object]]]:
        return [(f.offset, f.next_offset, f.entry.model_dump()) for f in self.view]

    async def until(self, done: Callable[[], bool], seconds: float = 10.0) -> None:
        async with asyncio.timeout(seconds):
            while not done():
                self._event.clear()
                await self._event.wait()


@pytest.fixture
def dialog(tmp_path: Path) -> Path:
    (tmp_path / "archive").mkdir()
    return tmp_path / "archive" / "dialog.jsonl"


@pytest.fixture
async def tails() -> AsyncIterator[list[DialogTail]]:
    started: list[DialogTail] = []
    yield started
    for tail in started:
        await tail.stop()


async def start(
    tails: list[DialogTail],
    path: Path,
    *,
    watcher: Watcher = "auto",
    safety_poll_s: float = 0.2,
) -> tuple[DialogTail, Collector]:
    """A started tail, and a collector attached before its first read."""
    tail = DialogTail(path, safety_poll_s=safety_poll_s, watcher=watcher)
    seen = Collector(tail)
    await tail.start()
    tails.append(tail)
    return tail, seen


@pytest.mark.parametrize("watcher", ["inotify", "watchfiles"])
async def test_tail_follows_appends_in_order(
    dialog: Path, tails: list[DialogTail], watcher: Watcher
) -> None:
    """Figure: 40/40 entries in order with contiguous offsets, with each change source."""
    append(dialog, b"".join(line(i) for i in range(20)))
    tail, seen = await start(tails, dialog, watcher=watcher, safety_poll_s=30.0)  # no safety net
    assert len(seen.frames) == 20  # read by start()
    for i in range(20, 40):
        append(dialog, line(i))
        await seen.until(lambda i=i: len(seen.frames) == i + 1)
    assert [f.entry.seq for f in seen.frames] == list(range(40))
    page = tail.read_page(0, 1000)
    assert [e.seq for e in page.entries] == list(range(40))
    assert page.next_offset == tail.end_offset == size_of(dialog)
    assert seen.frames[0].offset == 0
    assert all(
        a.next_offset == b.offset for a, b in zip(seen.frames, seen.frames[1:], strict=False)
    )


async def test_tail_waits_for_the_file_and_its_folder(
    tmp_path: Path, tails: list[DialogTail]
) -> None:
    """Figure: a tail started before its folder exists delivers 3/3 entries once written."""
    path = tmp_path / "later" / "dialog.jsonl"
    tail, seen = await start(tails, path)
    path.parent.mkdir()
    append(path, line(0) + line(1) + line(2))
    await seen.until(lambda: len(seen.frames) == 3)
    assert [f.entry.seq for f in seen.frames] == [0, 1, 2]


async def test_tail_never_opens_a_symlink(
    dialog: Path, tmp_path: Path, tails: list[DialogTail]
) -> None:
    """Figure: a dialog path that is a link to another file yields 0 frames."""
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(line(0))
    link(dialog, secret)
    tail, seen = await start(tails, dialog)
    await asyncio.sleep(0.5)
    assert seen.frames == [] and tail.end_offset == 0
    assert tail.read_page(0).entries == []


async def test_tail_torn_last_line_is_pending_until_finish(
    dialog: Path, tails: list[DialogTail]
) -> None:
    """docs/security.md test 25: a torn last line gives 0 error entries while live, exactly 1
    ``truncated_tail`` after finish(), and the page read agrees."""
    append(dialog, line(0) + line(1))
    tail, seen = await start(tails, dialog)
    del seen.frames[:2]
    torn = line(2)[:25]
    append(dialog, torn)  # the writer was killed mid-line
    await asyncio.sleep(0.6)  # several safety polls and watch events
    errors_live = [f for f in seen.frames if isinstance(f.entry, ErrorEntry)]
    assert errors_live == [] and tail.end_offset == len(line(0) + line(1))
    tail.finish()
    tail.finish()
    await asyncio.sleep(0.3)
    tails_flushed = [f for f in seen.frames if is_error(f, "truncated_tail")]
    print(
        f"\ntorn tail: {len(errors_live)} errors live, {len(tails_flushed)} truncated_tail after finish"
    )
    assert len(tails_flushed) == 1 and len(seen.frames) == 1
    frame = tails_flushed[0]
    assert isinstance(frame.entry, ErrorEntry)
    assert (frame.offset, frame.next_offset) == (len(line(0) + line(1)), size_of(dialog))
    assert (frame.entry.line, frame.entry.bytes) == (3, len(torn))
    page = tail.read_page(frame.offset)
    assert page.entries == [frame.entry]


async def test_tail_completes_a_line_written_in_pieces(
    dialog: Path, tails: list[DialogTail]
) -> None:
    """Figure: a line written in 3 pieces becomes 1 valid entry and 0 errors."""
    tail, seen = await start(tails, dialog)
    whole = line(0, "x" * 5000)
    for piece in (whole[:10], whole[10:4000], whole[4000:]):
        append(dialog, piece)
        await asyncio.sleep(0.05)
    await seen.until(lambda: len(seen.frames) == 1)
    assert isinstance(seen.frames[0].entry, Thinking)


@pytest.mark.parametrize("size", [64 << 20, pytest.param(1 << 30, marks=pytest.mark.slow)])
async def test_tail_skips_an_oversized_line_in_bounded_memory(
    dialog: Path, tails: list[DialogTail], size: int
) -> None:
    """docs/security.md test 24: a 64 MiB line (the plan's 1 GiB in ``make test-all``) written in
    chunks, then valid lines: 1 ``oversized_line`` entry, the following lines delivered, RSS growth
    < 2 x max line + 8 MiB."""
    chunk = b"x" * (1 << 20)
    append(dialog, line(0))
    tail, seen = await start(tails, dialog)
    del seen.frames[:1]
    process = psutil.Process()
    baseline = peak = process.memory_info().rss
    stop = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, process.memory_info().rss)
            await asyncio.sleep(0.002)

    sampler = spawn(sample(), name="rss-sampler")
    for _ in range(size // len(chunk)):
        append(dialog, chunk)
        await asyncio.sleep(0)  # the tail reads while the line grows
    append(dialog, b"\n" + line(1) + line(2) + line(3))
    await seen.until(lambda: len(seen.frames) == 4)
    stop.set()
    await sampler
    grew = peak - baseline
    print(f"\noversized line: {size >> 20} MiB, RSS grew {grew / 2**20:.1f} MiB while tailing it")
    oversized = [f for f in seen.frames if is_error(f, "oversized_line")]
    assert len(oversized) == 1
    entry = oversized[0].entry
    assert isinstance(entry, ErrorEntry) and (entry.bytes, entry.line) == (size, 2)
    assert [f.entry.seq for f in seen.frames[1:]] == [1, 2, 3]
    assert grew < 2 * MAX_LINE_BYTES + (8 << 20)
    page = tail.read_page(0)  # the page read skips it without reading it either
    assert [e.type for e in page.entries] == [
        "thinking",
        "error",
        "thinking",
        "thinking",
        "thinking",
    ]
    assert page.entries[1] == entry


async def test_tail_line_of_exactly_the_limit_is_parsed(
    dialog: Path, tails: list[DialogTail]
) -> None:
    """Figure: a line of MAX_LINE_BYTES is an entry; one byte more is an oversized_line."""
    base = line(0, "")
    fits = line(0, "y" * (MAX_LINE_BYTES - len(base) + 1))  # body == MAX_LINE_BYTES
    over = line(1, "y" * (MAX_LINE_BYTES - len(base) + 2))
    assert len(fits) == MAX_LINE_BYTES + 1
    tail, seen = await start(tails, dialog)
    append(dialog, fits + over + b"\r\n" + line(2))
    await seen.until(lambda: len(seen.frames) == 3)
    assert [f.entry.type for f in seen.frames] == ["thinking", "error", "thinking"]
    assert [f.entry.model_dump() for f in seen.frames] == [
        e.model_dump() for e in tail.read_page(0).entries
    ]


RESETS = 100


async def test_tail_truncate_and_rotate_100_times(dialog: Path, tails: list[DialogTail]) -> None:
    """docs/security.md test 26, at the plan's size: truncate-and-rewrite and inode swaps, 100 in
    all: 100 ``file_reset`` entries; the viewer's final view equals the final file; 0 entries
    reported twice as new."""
    prefix = line(0, "session start") + line(1, "the prompt")
    append(dialog, prefix + line(2, "first run"))
    tail, seen = await start(tails, dialog)
    previous = b""
    for k in range(RESETS):
        body = prefix + b"".join(line(2 + j, f"rewrite {k} line {j}") for j in range(k % 4 + 1))
        if k == 11:
            body = previous  # the same bytes under a new inode: nothing is sent again
        sent_before = len(seen.frames)
        if k % 2 == 0:  # truncate in place, then write the new content
            fd = os.open(dialog, os.O_WRONLY | os.O_TRUNC)
            os.write(fd, body)
            os.close(fd)
        else:  # write a new file and swap it in
            staged = dialog.with_name("dialog.jsonl.new")
            staged.write_bytes(body)
            staged.replace(dialog)
        await seen.until(
            lambda k=k, body=body: seen.resets == k + 1 and seen.view_triples() == file_frames(body)
        )
        if k == 11:
            assert len(seen.frames) - sent_before == 1  # the file_reset alone
        previous = body
    final = previous
    prefix_sent = sum(1 for f in seen.frames if f.offset < len(prefix))
    print(
        f"\ntruncate/rotate x{RESETS}: {seen.resets} file_reset, {seen.repeated} reported twice,"
        f" unchanged prefix sent {prefix_sent} times for its 2 lines"
    )
    assert seen.resets == RESETS and seen.repeated == 0 and prefix_sent == 2
    assert seen.view_triples() == file_frames(final)
    assert tail.end_offset == len(final)
    assert [e.model_dump() for e in tail.read_page(0).entries] == [t[2] for t in file_frames(final)]


async def test_tail_read_page_offsets(dialog: Path, tails: list[DialogTail]) -> None:
    """Offsets inside a line start at the next line; past the end give no entries and the end."""
    lines = [line(i) for i in range(5)]
    append(dialog, lines[0] + b"\n  \n" + b"".join(lines[1:]) + b'{"partial')
    tail, _seen = await start(tails, dialog)
    starts = [0]
    for raw in (lines[0], b"\n", b"  \n", *lines[1:]):
        starts.append(starts[-1] + len(raw))
    end = starts[-1]
    assert tail.end_offset == end
    page = tail.read_page(0, limit=2)
    assert [e.seq for e in page.entries] == [0, 1] and page.next_offset == starts[4]
    assert [e.seq for e in tail.read_page(page.next_offset).entries] == [2, 3, 4]
    assert [e.seq for e in tail.read_page(1).entries] == [1, 2, 3, 4]  # mid-line: next line
    assert [e.seq for e in tail.read_page(starts[1]).entries] == [1, 2, 3, 4]  # blank lines
    assert tail.read_page(end).entries == [] and tail.read_page(end).next_offset == end
    assert tail.read_page(end + 3).next_offset == end  # inside the pending line
    assert tail.read_page(10**12).next_offset == end
    frames, after = tail.read_frames(0, until=starts[4])
    assert [f.entry.seq for f in frames] == [0, 1] and after == starts[4]
    with pytest.raises(ValueError, match="offset"):
        tail.read_page(-1)
