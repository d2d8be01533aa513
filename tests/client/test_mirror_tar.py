"""The tar copy-out's member filter (pure table tests) and the writer over synthetic streams.

docs/security.md §4 tests 15 (symlinks to secrets), 16 (a folder symlink redirecting later members),
19 (special files and hardlinks), 20 (hostile names), 21 (caps from header sizes, scaled) and 22
(traversal in names): every hostile member of a tar stream is refused from its header alone and
listed; nothing is written outside the new folder; a huge member is never read into a file.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from srez_client.errors import MirrorError
from srez_client.transfer.plan import MirrorLimits, Skipped
from srez_client.transfer.tar import (
    MAX_PATH_BYTES,
    Accept,
    Dropped,
    Root,
    Stop,
    TarMember,
    TarPlanner,
    member_of,
    split_name,
)
from srez_client.transfer.tar_fs import (
    ChunkReader,
    StreamCapError,
    extract_run_tar,
    finish_copy_out,
)

SMALL = MirrorLimits(max_files=3, max_total_bytes=100, max_file_bytes=40, max_depth=3)


def root_dir() -> TarMember:
    return TarMember(b"srez", "dir")


DEFAULT = MirrorLimits()


def decide_all(members: list[TarMember], limits: MirrorLimits = DEFAULT) -> list[object]:
    planner = TarPlanner(b"srez", limits)
    return [planner.decide(m) for m in [root_dir(), *members]][1:]


def reason(decision: object) -> str:
    if isinstance(decision, Accept):
        return f"accept:{decision.type}"
    if isinstance(decision, Skipped | Dropped):
        return decision.reason
    return type(decision).__name__.lower()


# ---------------------------------------------------------------------- one member at a time

SINGLE_CASES = [
    # (member, expected decision) after the root folder
    (TarMember(b"srez/run.json", "file", 10), "accept:file"),
    (TarMember(b"srez/archive", "dir"), "accept:dir"),
    (TarMember(b"srez/archive/", "dir"), "accept:dir"),
    (TarMember(b"srez/a", "symlink", 0, b"/etc/shadow"), "link"),
    (TarMember(b"srez/b", "symlink", 0, b"../../../../home/u/.ssh/id_rsa"), "link"),
    (TarMember(b"srez/c", "symlink", 0, b"/proc/self/environ"), "link"),
    (TarMember(b"srez/h", "hardlink", 0, b"srez/run.json"), "hardlink"),
    (TarMember(b"srez/f", "fifo"), "special"),
    (TarMember(b"srez/c1", "char_device"), "special"),
    (TarMember(b"srez/b1", "block_device"), "special"),
    (TarMember(b"srez/u", "unknown"), "special"),
    (TarMember(b"/etc/passwd", "file", 5), "bad_name"),
    (TarMember(b"/srez/x", "file", 5), "bad_name"),
    (TarMember(b"srez/../x", "file", 5), "bad_name"),
    (TarMember(b"srez/../../x", "dir"), "bad_name"),
    (TarMember(b"srez/./x", "file", 5), "bad_name"),
    (TarMember(b"srez//x", "file", 5), "bad_name"),
    (TarMember(b"srez/a\0b", "file", 5), "bad_name"),
    (TarMember(b"srez/" + b"n" * 256, "file", 5), "bad_name"),
    (TarMember(b"srez/" + b"n" * 255, "file", 5), "accept:file"),
    (TarMember(b"srez/" + b"d/" * (MAX_PATH_BYTES // 2), "dir"), "bad_name"),
    (TarMember(b"other/x", "file", 5), "bad_name"),
    (TarMember(b"srezz/x", "file", 5), "bad_name"),
    (TarMember(b"", "file", 5), "bad_name"),
    (TarMember(b"srez/mirror.json", "file", 5), "reserved"),
    (TarMember(b"srez/missing/x", "file", 5), "bad_parent"),
    (TarMember(b"srez/\x1b[2Jname\n", "file", 5), "accept:file"),  # escaped in mirror.json
    (TarMember(b"srez/\xff\xfe", "file", 5), "accept:file"),
    (TarMember(b"srez/big", "file", (1 << 40)), "too_large"),
    (TarMember(b"srez/..", "dir"), "bad_name"),
    (TarMember(b"srez/-rf", "file", 1), "accept:file"),
    (TarMember(b"srez/.run", "file", 1), "accept:file"),
]


@pytest.mark.parametrize(("member", "expected"), SINGLE_CASES, ids=lambda v: repr(v)[:60])
def test_tar_planner_decides_each_member_from_its_header(member: TarMember, expected: str) -> None:
    (decision,) = decide_all([member])
    assert reason(decision) == expected
    if isinstance(decision, Skipped) and member.type in ("symlink", "hardlink"):
        assert decision.link_target == member.link_target


# ---------------------------------------------------------------------- sequences

SEQUENCE_CASES = {
    "folder symlink then a member through it": (
        [
            TarMember(b"srez/d", "symlink", 0, b"/"),
            TarMember(b"srez/d/tmp", "dir"),
            TarMember(b"srez/d/tmp/pwned", "file", 3),
        ],
        ["link", "bad_parent", "bad_parent"],
    ),
    "a refused folder refuses its contents": (
        [
            TarMember(b"srez/a", "dir"),
            TarMember(b"srez/a/b", "dir"),
            TarMember(b"srez/a/b/c", "dir"),
            TarMember(b"srez/a/b/c/d", "dir"),
            TarMember(b"srez/a/b/c/d/x", "file", 1),
        ],
        ["accept:dir", "accept:dir", "accept:dir", "too_deep", "bad_parent"],
    ),
    "a name given twice is written once": (
        [TarMember(b"srez/x", "file", 1), TarMember(b"srez/x", "file", 2)],
        ["accept:file", "bad_name"],
    ),
    "a folder and a file of one name": (
        [TarMember(b"srez/x", "dir"), TarMember(b"srez/x", "file", 2)],
        ["accept:dir", "bad_name"],
    ),
    "file cap": (
        [TarMember(f"srez/{i}".encode(), "file", 1) for i in range(5)],
        ["accept:file"] * 3 + ["file_cap"] * 2,
    ),
    "total cap from header sizes": (
        [
            TarMember(b"srez/a", "file", 40),
            TarMember(b"srez/b", "file", 40),
            TarMember(b"srez/c", "file", 40),
            TarMember(b"srez/d", "file", 20),
        ],
        ["accept:file", "accept:file", "total_cap", "accept:file"],
    ),
    "reserved container log": (
        [TarMember(b"srez/logs", "dir"), TarMember(b"srez/logs/container.log", "file", 1)],
        ["accept:dir", "reserved"],
    ),
}


@pytest.mark.parametrize("case", sorted(SEQUENCE_CASES))
def test_tar_planner_sequences(case: str) -> None:
    members, expected = SEQUENCE_CASES[case]
    assert [reason(d) for d in decide_all(members, SMALL)] == expected


def test_tar_planner_marks_truncation_only_for_caps() -> None:
    planner = TarPlanner(b"srez", SMALL)
    planner.decide(root_dir())
    planner.decide(TarMember(b"srez/s", "symlink", 0, b"/etc"))
    planner.decide(TarMember(b"srez/f", "fifo"))
    assert not planner.truncated
    planner.decide(TarMember(b"srez/big", "file", 41))
    assert planner.truncated


def test_tar_planner_refuses_everything_under_a_root_that_is_a_link() -> None:
    planner = TarPlanner(b"srez")
    decisions = [
        planner.decide(TarMember(b"srez", "symlink", 0, b"/etc")),
        planner.decide(TarMember(b"srez/passwd", "file", 10)),
    ]
    assert [reason(d) for d in decisions] == ["link", "bad_parent"]


def test_tar_planner_lists_refusals_up_to_a_budget_then_counts_them() -> None:
    planner = TarPlanner(b"srez", MirrorLimits(max_files=10))
    decisions = [planner.decide(root_dir())]
    decisions += [planner.decide(TarMember(b"srez/l%d" % i, "symlink")) for i in range(1100)]
    decisions.append(planner.decide(TarMember(b"srez/result.json", "file", 10)))
    assert isinstance(decisions[0], Root)
    assert sum(isinstance(d, Skipped) for d in decisions) == 2 * 10 + 1000
    assert planner.dropped == 1100 - 1020
    assert all(isinstance(d, Dropped) for d in decisions[1021:1101])
    assert isinstance(decisions[-1], Accept)  # the files after them are still reached
    assert planner.truncated


def test_tar_planner_stops_after_its_member_budget() -> None:
    planner = TarPlanner(b"srez", MirrorLimits(max_files=1))
    decisions = [planner.decide(TarMember(b"srez/%d" % i, "fifo")) for i in range(10_011)]
    assert isinstance(decisions[-1], Stop) and not isinstance(decisions[-2], Stop)
    assert planner.truncated


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        (b"srez", (b"srez",)),
        (b"srez/", (b"srez",)),
        (b"srez/a/b", (b"srez", b"a", b"b")),
        (b"srez/a//b", None),
        (b"/srez", None),
        (b"srez/..", None),
        (b"", None),
    ],
)
def test_split_name(name: bytes, parts: tuple[bytes, ...] | None) -> None:
    assert split_name(name) == parts


def test_member_of_reads_the_tarinfo_types() -> None:
    cases = {
        tarfile.REGTYPE: "file",
        tarfile.DIRTYPE: "dir",
        tarfile.SYMTYPE: "symlink",
        tarfile.LNKTYPE: "hardlink",
        tarfile.FIFOTYPE: "fifo",
        tarfile.CHRTYPE: "char_device",
        tarfile.BLKTYPE: "block_device",
    }
    for kind, expected in cases.items():
        info = tarfile.TarInfo("srez/x")
        info.type = kind
        info.linkname = "/etc/shadow"
        member = member_of(info)
        assert member.type == expected
        assert member.link_target == (b"/etc/shadow" if expected.endswith("link") else None)
    bad = tarfile.TarInfo("srez/\udcff")
    assert member_of(bad).name == b"srez/\xff"


# ---------------------------------------------------------------------- the writer


Entry = tuple[str, bytes | str | None, bytes]


def tar_stream(entries: list[Entry]) -> bytes:
    """A tar of (name, content, type): content for files, a link target for links."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content, kind in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            if info.type in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                assert isinstance(content, str)
                info.linkname = content
                tar.addfile(info)
            elif info.type == tarfile.REGTYPE:
                assert isinstance(content, bytes)
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
            else:
                tar.addfile(info)
    return buffer.getvalue()


REG, DIR, SYM, LNK = tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE
FIFO, CHR = tarfile.FIFOTYPE, tarfile.CHRTYPE


def chunks(data: bytes, size: int = 1000) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_extract_writes_files_and_folders_only_and_nothing_outside(tmp_path: Path) -> None:
    canary = tmp_path / "outside"
    canary.mkdir()
    data = tar_stream(
        [
            ("srez", None, DIR),
            ("srez/run.json", b"{}", REG),
            ("srez/archive", None, DIR),
            ("srez/archive/dialog.jsonl", b'{"seq":0}\n', REG),
            ("srez/a", "/etc/shadow", SYM),
            ("srez/d", str(canary), SYM),
            ("srez/d/pwned", b"x", REG),
            ("srez/h", "srez/run.json", LNK),
            ("srez/f", None, FIFO),
            ("srez/c", None, CHR),
            ("srez/../escape", b"x", REG),
            (str(canary / "abs"), b"x", REG),
        ]
    )
    dest = tmp_path / "copy"
    report = extract_run_tar(chunks(data), dest, b"srez")
    assert listing(dest) == {"run.json", "archive", "archive/dialog.jsonl"}
    assert (dest / "run.json").read_bytes() == b"{}"
    assert list(canary.iterdir()) == []
    assert not (tmp_path / "escape").exists()
    reasons = {b"/".join(s.parts).decode(): s.reason for s in report.skipped}
    assert reasons["a"] == "link" and reasons["d"] == "link" and reasons["d/pwned"] == "bad_parent"
    assert reasons["h"] == "hardlink" and reasons["f"] == "special" and reasons["c"] == "special"
    assert reasons["srez/../escape"] == "bad_name"
    assert not report.truncated
    assert [f.path for f in report.files] == ["run.json", "archive/dialog.jsonl"]


def test_extract_refuses_an_existing_destination(tmp_path: Path) -> None:
    (tmp_path / "copy").mkdir()
    with pytest.raises(FileExistsError):
        extract_run_tar([tar_stream([("srez", None, DIR)])], tmp_path / "copy", b"srez")


def test_extract_of_something_that_is_not_a_tar_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(MirrorError, match="not a tar stream"):
        extract_run_tar([b"hello, world" * 100], tmp_path / "copy", b"srez")


def test_extract_caps_from_headers_and_marks_truncation(tmp_path: Path) -> None:
    entries: list[Entry] = [("srez", None, DIR)]
    entries += [(f"srez/f{i}", b"x" * 10, REG) for i in range(6)]
    entries.append(("srez/huge", b"y" * 50, REG))
    report = extract_run_tar(chunks(tar_stream(entries)), tmp_path / "c", b"srez", SMALL)
    assert len(report.files) == 3 and report.truncated
    assert sum(p.stat().st_size for p in (tmp_path / "c").iterdir()) <= SMALL.max_total_bytes
    assert {s.reason for s in report.skipped} == {"file_cap", "too_large"}


def test_extract_stops_at_the_stream_cap_and_keeps_what_was_complete(tmp_path: Path) -> None:
    data = tar_stream(
        [("srez", None, DIR), ("srez/a", b"a" * 100, REG), ("srez/z", b"z" * 50_000, REG)]
    )
    report = extract_run_tar(chunks(data), tmp_path / "c", b"srez", max_stream_bytes=20_000)
    assert report.truncated
    assert listing(tmp_path / "c") == {"a"}


def test_extract_keeps_complete_members_of_a_torn_stream(tmp_path: Path) -> None:
    data = tar_stream(
        [("srez", None, DIR), ("srez/a", b"a" * 100, REG), ("srez/b", b"b" * 5000, REG)]
    )
    report = extract_run_tar([data[:3000]], tmp_path / "c", b"srez")
    assert report.truncated
    assert (tmp_path / "c" / "a").read_bytes() == b"a" * 100
    assert not (tmp_path / "c" / "b").exists()


def test_extract_reopens_a_folder_the_stream_comes_back_to(tmp_path: Path) -> None:
    data = tar_stream(
        [
            ("srez", None, DIR),
            ("srez/a", None, DIR),
            ("srez/b", None, DIR),
            ("srez/a/late", b"1", REG),
        ]
    )
    extract_run_tar(chunks(data), tmp_path / "c", b"srez")
    assert (tmp_path / "c" / "a" / "late").read_bytes() == b"1"


def test_finish_copy_out_adds_the_log_tail_and_mirror_json(tmp_path: Path) -> None:
    data = tar_stream(
        [("srez", None, DIR), ("srez/logs", None, DIR), ("srez/run.json", b"{}", REG)]
    )
    log = [b"line %d\n" % i for i in range(100)]
    limits = MirrorLimits(max_file_bytes=64)
    report = extract_run_tar(chunks(data), tmp_path / "c", b"srez", limits)
    finish_copy_out(tmp_path / "c", report, log, run_id="r", limits=limits)
    tail = (tmp_path / "c" / "logs" / "container.log").read_bytes()
    assert len(tail) == 64 and tail.endswith(b"line 99\n")
    record = orjson.loads((tmp_path / "c" / "mirror.json").read_bytes())
    assert record["run_id"] == "r" and record["files_copied"] == 1
    assert oct((tmp_path / "c" / "run.json").stat().st_mode & 0o777) == "0o644"


def test_chunk_reader_hands_out_pieces_and_enforces_its_cap() -> None:
    reader = ChunkReader([b"abc", b"", b"defg"], max_bytes=5)
    assert reader.read(2) == b"ab"
    assert reader.read(10) == b"c"
    assert reader.read(2) == b"de"
    with pytest.raises(StreamCapError):
        reader.read(2)
