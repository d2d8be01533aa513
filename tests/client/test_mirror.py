"""The mirror against hostile run folders (docs/security.md §4 tests 15, 16, 19, 20, 21, 22, 39).

Each test builds a real folder with real links, FIFOs, sockets and hostile names, mirrors it, and
measures the figure the plan asks for.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from client_helpers import after_a_killed_mirror

from srez_client.errors import MirrorError, ResultsError
from srez_client.mirror.copier import mirror_run
from srez_client.sanitize import escape_bytes, sanitize, unescape_bytes
from srez_client.transfer.fs import execute_plan, read_small_model
from srez_client.transfer.plan import MirrorLimits, SourceEntry, plan_entries
from srez_client.transfer.tree import copy_tree, plan_mirror, read_record
from srez_daemon.protocol import RunManifest

RUN_ID = "20250314T100000Z-0123abcd"


def manifest(run_id: str = RUN_ID, task: str = "sre-001", model: str = "none") -> RunManifest:
    return RunManifest(
        run_id=run_id,
        task_id=task,
        agent="scripted",
        agent_spec="scripted",
        model=model,
        backend="local",
        run_seed=0,
        srez_version="0",
        started_at="2025-03-14T10:00:00Z",
    )


def make_run(root: Path) -> Path:
    """A plausible run folder."""
    (root / "archive").mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "run.json").write_text(manifest().model_dump_json())
    (root / "summary.json").write_text('{"status": "ok"}\n')
    (root / "archive" / "dialog.jsonl").write_text('{"seq": 0}\n')
    (root / "logs" / "daemon.log").write_text("listening\n")
    return root


def tree(root: Path) -> dict[bytes, str]:
    """Every entry under ``root`` (not following links): relative path -> type and sha256.

    Walks through folder descriptors, so paths longer than PATH_MAX are fine.
    """
    out: dict[bytes, str] = {}

    def walk(fd: int, prefix: bytes) -> None:
        for name in sorted(os.listdir(fd)):
            raw = os.fsencode(name)
            rel = prefix + raw
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    walk(child, rel + b"/")
                finally:
                    os.close(child)
            elif stat.S_ISREG(st.st_mode):
                f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
                with os.fdopen(f, "rb") as handle:
                    out[rel] = "file:" + hashlib.sha256(handle.read()).hexdigest()
            else:
                out[rel] = f"mode:{stat.S_IFMT(st.st_mode):o}"

    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk(top, b"")
    finally:
        os.close(top)
    return out


def all_bytes(root: Path) -> bytes:
    return b"".join(
        p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()
    )


def record_of(folder: Path) -> dict[str, object]:
    value = orjson.loads((folder / "mirror.json").read_bytes())
    assert isinstance(value, dict)
    return value


# ------------------------------------------------------------------ the planner (pure)


def entry(path: str, kind: str = "file", size: int = 1, target: bytes | None = None) -> SourceEntry:
    parts = tuple(os.fsencode(p) for p in path.split("/"))
    return SourceEntry(parts, kind, size, 0, 0, target)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("listing", "kept", "skipped"),
    [
        ([entry("a")], ["a"], {}),
        ([entry("l", "symlink", target=b"/etc/shadow")], [], {"l": "link"}),
        ([entry("h", "hardlink")], [], {"h": "hardlink"}),
        (
            [entry("f", "fifo"), entry("s", "socket"), entry("c", "char_device")],
            [],
            {"f": "special", "s": "special", "c": "special"},
        ),
        ([entry("d", "dir"), entry("d/x")], ["d", "d/x"], {}),
        (
            [entry("d", "symlink", target=b"/"), entry("d/tmp", "dir"), entry("d/tmp/pwned")],
            [],
            {"d": "link", "d/tmp": "bad_parent"},  # d/tmp/pwned: under a skipped folder
        ),
        ([entry("mirror.json")], [], {"mirror.json": "reserved"}),
        ([entry("big", size=101 << 20)], [], {"big": "too_large"}),
        ([entry("..")], [], {"..": "bad_name"}),
        ([entry("x" * 256)], [], {"x" * 256: "bad_name"}),
    ],
)
def test_plan_entries_copies_regular_files_and_folders_only(
    listing: list[SourceEntry], kept: list[str], skipped: dict[str, str]
) -> None:
    plan = plan_entries(listing)
    assert [b"/".join(e.parts).decode() for e in plan.entries] == kept
    assert {b"/".join(s.parts).decode(): s.reason for s in plan.skipped} == skipped


def test_plan_entries_applies_the_caps_in_order() -> None:
    limits = MirrorLimits(max_files=3, max_total_bytes=250, max_file_bytes=100)
    listing = [entry(f"f{i}", size=90) for i in range(5)] + [entry("huge", size=101)]
    plan = plan_entries(listing, limits)
    assert [e.parts[0] for e in plan.entries] == [b"f0", b"f1"]
    reasons = {s.parts[0]: s.reason for s in plan.skipped}
    assert reasons == {
        b"f2": "total_cap",
        b"f3": "total_cap",
        b"f4": "total_cap",
        b"huge": "too_large",
    }
    assert plan.truncated and plan.total_bytes == 180
    many = plan_entries([entry(f"g{i}", size=1) for i in range(5)], limits)
    assert len(many.entries) == 3 and {s.reason for s in many.skipped} == {"file_cap"}


def test_plan_entries_skips_what_is_under_a_skipped_folder_once() -> None:
    deep = MirrorLimits(max_depth=1)
    plan = plan_entries([entry("a", "dir"), entry("a/b", "dir"), entry("a/b/c")], deep)
    assert [b"/".join(s.parts) for s in plan.skipped] == [b"a/b"]
    assert plan.truncated


# ------------------------------------------------------------ docs/security.md test 15


def test_symlinks_to_secrets_copy_zero_bytes_and_are_recorded(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    secret = tmp_path / "home" / "me" / ".ssh"
    secret.mkdir(parents=True)
    (secret / "id_rsa").write_bytes(b"CANARY-PRIVATE-KEY-" + os.urandom(16).hex().encode())
    (src / "archive" / "a").symlink_to("/etc/shadow")
    (src / "archive" / "b").symlink_to("../../home/me/.ssh/id_rsa")
    (src / "c").symlink_to("/proc/self/environ")
    final = mirror_run(src, tmp_path / "results", manifest())
    mirrored = all_bytes(final)
    targets = [Path("/etc/shadow"), secret / "id_rsa", Path("/proc/self/environ")]
    leaked = sum(
        1
        for t in targets
        if t.exists() and (data := t.read_bytes()) and len(data) >= 8 and data in mirrored
    )
    skipped = {s["path"]: s for s in record_of(final)["skipped"]}  # type: ignore[union-attr]
    assert leaked == 0
    assert set(skipped) == {"archive/a", "archive/b", "c"}
    assert {s["type"] for s in skipped.values()} == {"symlink"}
    assert skipped["archive/b"]["link_target"] == "../../home/me/.ssh/id_rsa"
    assert not any(p.is_symlink() for p in final.rglob("*"))


# ------------------------------------------------------------ docs/security.md test 16


def test_directory_symlinks_never_redirect_a_write(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    canary = tmp_path / "canary"
    (canary / "tmp").mkdir(parents=True)
    (canary / "tmp" / "keep").write_text("canary")
    (src / "d").symlink_to("/")
    (src / "e").symlink_to(canary)
    before = tree(canary)
    results = tmp_path / "results"
    final = mirror_run(src, results, manifest())
    assert tree(canary) == before
    assert set(tree(results)) == {
        os.fsencode(os.path.relpath(p, results))
        for p in [*final.parents, final, *final.rglob("*")]
        if results in p.parents
    }
    skipped = {s["path"]: s["link_target"] for s in record_of(final)["skipped"]}  # type: ignore[union-attr]
    assert skipped == {"d": "/", "e": str(canary)}
    # the same threat as a listing (a tar stream naming d/tmp/pwned after d -> /)
    listing = [
        SourceEntry((b"d",), "symlink", 0, 0, 0, b"/"),
        SourceEntry((b"d", b"tmp"), "dir"),
        SourceEntry((b"d", b"tmp", b"pwned"), "file", 6),
    ]
    plan = plan_entries(listing)
    assert plan.entries == ()
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        execute_plan(src, fd, "out", plan, MirrorLimits())
    finally:
        os.close(fd)
    assert not Path("/tmp/pwned").exists() and tree(tmp_path / "out") == {}


def test_a_folder_swapped_for_a_link_after_the_listing_is_not_entered(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "dialog.jsonl").write_text("CANARY")
    plan = plan_mirror(src)
    (src / "archive").rename(tmp_path / "moved")
    (src / "archive").symlink_to(canary)
    (src / "run.json").unlink()
    os.mkfifo(src / "run.json")  # a FIFO where a file was listed: must not hang
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    started = time.monotonic()
    try:
        report = execute_plan(src, fd, "out", plan, MirrorLimits())
    finally:
        os.close(fd)
    assert time.monotonic() - started < 5  # a hang guard: an open() of the FIFO blocks forever
    reasons = {b"/".join(s.parts): s.reason for s in report.skipped}
    assert reasons[b"archive"] == "changed" and reasons[b"run.json"] == "changed"
    assert b"CANARY" not in all_bytes(tmp_path / "out")


def test_a_file_swapped_for_another_regular_file_after_the_listing_is_not_copied(
    tmp_path: Path,
) -> None:
    """The identity check (device and inode) on its own: a listed file replaced by another
    regular file (same name, same kind, one link, as a renaming writer leaves it) is a file
    the listing never saw, so it is skipped as changed rather than copied."""
    src = make_run(tmp_path / "src")
    plan = plan_mirror(src)
    forged = tmp_path / "forged.json"
    forged.write_text('{"status": "ok", "reward": 1.0, "FORGED": true}')
    forged.replace(src / "summary.json")  # atomically, as an agent rewriting it would
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        report = execute_plan(src, fd, "out", plan, MirrorLimits())
    finally:
        os.close(fd)
    reasons = {b"/".join(s.parts): s.reason for s in report.skipped}
    assert reasons == {b"summary.json": "changed"}
    assert not (tmp_path / "out" / "summary.json").exists()
    assert b"FORGED" not in all_bytes(tmp_path / "out")
    assert (tmp_path / "out" / "run.json").read_bytes() == (src / "run.json").read_bytes()


# ------------------------------------------------------------ docs/security.md test 19


def test_special_files_and_hardlinks_are_recorded_never_opened(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    os.mkfifo(src / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(src / "sock"))
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:CANARY\n")
    os.link(outside, src / "archive" / "hard")
    expected = {"fifo": "fifo", "sock": "socket", "archive/hard": "hardlink"}
    try:
        os.mknod(src / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        expected["null"] = "char_device"
    except PermissionError:
        pass  # no CAP_MKNOD here: the other three still cover the path
    started = time.monotonic()
    try:
        final = mirror_run(src, tmp_path / "results", manifest())
    finally:
        sock.close()
    elapsed = time.monotonic() - started
    skipped = {s["path"]: s["type"] for s in record_of(final)["skipped"]}  # type: ignore[union-attr]
    assert elapsed < 5  # a hang guard: an open() of the FIFO blocks forever
    assert skipped == expected
    assert b"CANARY" not in all_bytes(final)
    assert all(p.is_dir() or p.is_file() for p in final.rglob("*"))


# ------------------------------------------------------------ docs/security.md test 20


def hostile_names() -> list[bytes]:
    return [
        b"new\nline",
        b"esc\x1b[2J\x1b]52;c;AAAA\x07",
        b"x" * 255,
        b"bad-utf8-\xff\xfe",
        b"-rf",
        b".run",
        b"cr\roverwrite",
        b"bidi\xe2\x80\xaeevil",
        b"back\\slash\\x41",
    ]


def test_hostile_names_survive_escaped_and_round_trip(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    base = os.fsencode(src)
    for name in hostile_names():
        with open(os.path.join(base, name), "wb") as f:  # noqa: PTH118, PTH123
            f.write(name)
    fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(17):  # a path of over 4096 bytes, made one component at a time
        os.mkdir(b"d" * 250, dir_fd=fd)
        child = os.open(b"d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    leaf = os.open(b"leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(leaf, b"deep")
    os.close(leaf)
    os.close(fd)
    final = mirror_run(src, tmp_path / "results", manifest())
    raw = (final / "mirror.json").read_bytes()
    assert not [b for b in raw if b < 0x20 and b not in (0x0A, 0x20)]
    assert b"\x1b" not in raw and "\u202e".encode() not in raw
    files = record_of(final)["files"]
    listed = {unescape_bytes(f["path"]) for f in files}  # type: ignore[union-attr, index]
    on_disk = set(tree(final)) - {b"mirror.json"}
    on_disk = {p for p in on_disk if tree(final)[p].startswith("file:")}
    assert listed == on_disk
    for name in hostile_names():
        assert name in listed
        assert tree(final)[name] == "file:" + hashlib.sha256(name).hexdigest()
    assert any(p.endswith(b"/leaf") and len(p) > 4096 for p in listed)


def test_escape_is_lossless_and_sanitize_disarms_terminals() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        text = escape_bytes(raw)
        assert unescape_bytes(text) == raw
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)
    shown = sanitize("ok\tline\n\x1b[2J\x9b31m\r\u202e\u2066 done")
    assert shown == "ok\tline\n\\x1b[2J\\x9b31m\\x0d\\u202e\\u2066 done"
    with pytest.raises(ValueError, match="invalid escape"):
        unescape_bytes("a\\qb")


# ------------------------------------------------------------ docs/security.md test 21 (scaled)


def test_caps_truncate_and_a_sparse_file_is_never_read(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    with (src / "sparse").open("wb") as f:
        f.truncate(1 << 40)  # 1 TiB apparent, nothing on disk
    for i in range(50):
        (src / f"tiny-{i:02d}").write_bytes(b"x" * 100)
    limits = MirrorLimits(max_files=20, max_total_bytes=1500, max_file_bytes=1000)
    started = time.monotonic()
    final = mirror_run(src, tmp_path / "results", manifest(), limits=limits)
    assert time.monotonic() - started < 5  # not read: 1 TiB of zeros would take minutes
    record = record_of(final)
    size = sum(
        p.stat().st_size for p in final.rglob("*") if p.is_file() and p.name != "mirror.json"
    )
    assert record["artifacts_truncated"] is True
    assert size <= 1500 and record["files_copied"] <= 20
    reasons = {s["path"]: s["reason"] for s in record["skipped"]}  # type: ignore[union-attr]
    assert reasons["sparse"] == "too_large"


# ------------------------------------------------------------ docs/security.md test 22


@pytest.mark.parametrize(
    ("run_id", "task"),
    [("../../x", "sre-001"), (RUN_ID, "../../etc"), (RUN_ID, "/etc"), (RUN_ID, "a\nb")],
)
def test_label_injection_is_refused_and_writes_nothing(
    tmp_path: Path, run_id: str, task: str
) -> None:
    src = make_run(tmp_path / "src")
    results = tmp_path / "inner" / "results"
    before = tree(tmp_path)
    with pytest.raises(ResultsError, match="cannot be a results folder name|malformed"):
        mirror_run(src, results, manifest(run_id=run_id, task=task))
    assert tree(tmp_path) == before


def test_a_model_with_a_slash_stays_one_folder(tmp_path: Path) -> None:
    final = mirror_run(make_run(tmp_path / "src"), tmp_path / "r", manifest(model="a/b"))
    assert final == tmp_path / "r" / "sre-001" / "a__b" / "scripted" / RUN_ID


def test_a_results_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (results / "sre-001").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(MirrorError, match="is not a folder"):
        mirror_run(make_run(tmp_path / "src"), results, manifest())
    assert list((tmp_path / "elsewhere").iterdir()) == []


# ------------------------------------------------------------------ never replace, merge copy_out


def test_an_existing_run_folder_is_kept_not_replaced(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    final = mirror_run(src, tmp_path / "results", manifest())
    before = tree(final)
    (src / "summary.json").write_text('{"status": "forged"}\n')
    assert mirror_run(src, tmp_path / "results", manifest()) == final
    assert tree(final) == before


def test_read_small_model_gives_none_for_a_missing_linked_or_invalid_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert read_small_model(tmp_path, b"run.json", RunManifest, 1 << 20) is None
    (tmp_path / "real.json").write_text(manifest().model_dump_json())
    (tmp_path / "run.json").symlink_to(tmp_path / "real.json")
    assert read_small_model(tmp_path, b"run.json", RunManifest, 1 << 20) is None
    assert read_small_model(tmp_path, b"real.json", RunManifest, 1 << 20) == manifest()
    assert read_small_model(tmp_path, b"real.json", RunManifest, 16) is None  # too large
    (tmp_path / "bad.json").write_text('{"run_id": 1}')
    assert read_small_model(tmp_path, b"bad.json", RunManifest, 1 << 20) is None
    assert "ignored an invalid bad.json" in caplog.text


def test_copy_out_skips_reserved_names_and_the_mirror_keeps_its_record(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    (src / "mirror.json").write_text('{"forged": true}')
    (src / "logs" / "container.log").write_text("forged")
    (src / "ln").symlink_to("/etc/passwd")
    copy_tree(src, tmp_path / "copy", run_id=RUN_ID)
    prior = read_record(tmp_path / "copy")
    assert prior is not None
    assert {s.path: s.reason for s in prior.skipped} == {
        "ln": "link",
        "logs/container.log": "reserved",
        "mirror.json": "reserved",
    }
    final = mirror_run(tmp_path / "copy", tmp_path / "results", manifest())
    paths = {s["path"] for s in record_of(final)["skipped"]}  # type: ignore[union-attr]
    assert paths == {"ln", "logs/container.log", "mirror.json"}
    assert not (final / "logs" / "container.log").exists()


# ------------------------------------------------------------ docs/security.md test 39 (scaled)

MIRROR_CHILD = """
import sys
from pathlib import Path
from srez_client.mirror.copier import mirror_run
from srez_daemon.protocol import RunManifest
m = RunManifest.model_validate_json(sys.argv[3])
print("go", flush=True)
mirror_run(Path(sys.argv[1]), Path(sys.argv[2]), m)
print("done", flush=True)
"""


def test_a_killed_mirror_leaves_nothing_partial_and_a_remirror_is_identical(tmp_path: Path) -> None:
    src = make_run(tmp_path / "src")
    rng = random.Random(39)
    for i in range(120):
        (src / "archive" / f"blob-{i:03d}").write_bytes(rng.randbytes(96 << 10))
    reference = tree(mirror_run(src, tmp_path / "reference", manifest()))
    results = tmp_path / "results"
    final = results / "sre-001" / "none" / "scripted" / RUN_ID
    argv = [
        sys.executable,
        "-c",
        MIRROR_CHILD,
        str(src),
        str(results),
        manifest().model_dump_json(),
    ]
    outcomes = {"absent": 0, "complete": 0}
    leftovers = 0
    for _ in range(10):
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline() == "go\n"
        kill_when_copied(final.parent, rng.randrange(1, 110), child)  # of the 120 blobs
        child.kill()
        child.wait()
        child.stdout.close()
        leftovers += sum(
            1 for p in final.parent.iterdir() if p.name.startswith(f".{RUN_ID}.partial-")
        )
        outcomes[after_a_killed_mirror(final, tree, reference)] += 1
    assert outcomes["absent"] >= 8, outcomes  # the kills landed mid-copy
    assert leftovers >= 8  # and left partial folders behind, which the next mirror removes
    assert mirror_run(src, results, manifest()) == final
    assert tree(final) == reference
    assert sorted(p.name for p in final.parent.iterdir()) == [RUN_ID]


def kill_when_copied(folder: Path, files: int, child: subprocess.Popen[str]) -> None:
    """Return once a partial folder in ``folder`` holds ``files`` blobs (or the child ended)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        for partial in folder.iterdir() if folder.exists() else []:
            if partial.name.startswith(".") and (partial / "archive").is_dir():
                with contextlib.suppress(FileNotFoundError):
                    if sum(1 for _ in (partial / "archive").iterdir()) >= files:
                        return
        time.sleep(0.001)


def test_plan_keeps_the_run_record_whatever_the_file_and_total_caps() -> None:
    limits = MirrorLimits(max_file_bytes=1 << 20, max_total_bytes=2 << 20, max_files=3)
    entries = [
        SourceEntry((b"archive",), "dir"),
        SourceEntry((b"archive", b"dialog.jsonl"), "file", size=300 << 20),
        SourceEntry((b"archive", b"transcript.jsonl"), "file", size=5 << 20),
        SourceEntry((b"big.log",), "file", size=1 << 20),
        SourceEntry((b"forged",), "dir"),
        SourceEntry((b"forged", b"dialog.jsonl"), "file", size=300 << 20),
    ]
    plan = plan_entries(entries, limits)
    kept = {b"/".join(e.parts) for e in plan.entries}
    assert {b"archive/dialog.jsonl", b"archive/transcript.jsonl"} <= kept
    assert {(b"/".join(s.parts), s.reason) for s in plan.skipped} == {
        (b"big.log", "total_cap"),
        (b"forged/dialog.jsonl", "too_large"),
    }
    huge = plan_entries([entries[0], SourceEntry(entries[1].parts, "file", size=5 << 30)], limits)
    assert [s.reason for s in huge.skipped] == ["too_large"]  # only a forged record passes 4 GiB


def test_mirror_copies_a_dialog_over_the_per_file_cap(tmp_path: Path) -> None:
    src = tmp_path / "run"
    (src / "archive").mkdir(parents=True)
    dialog = b'{"seq":0}\n' * 30_000
    (src / "archive" / "dialog.jsonl").write_bytes(dialog)
    (src / "other.log").write_bytes(b"y" * 300_000)
    limits = MirrorLimits(max_file_bytes=100_000)
    copy_tree(src, tmp_path / "out", limits=limits)
    assert (tmp_path / "out" / "archive" / "dialog.jsonl").read_bytes() == dialog
    assert not (tmp_path / "out" / "other.log").exists()
