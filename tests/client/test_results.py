"""The results layout: run ids, names, atomic writes, the dialog writer, partial folders."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from srez_client.errors import ResultsError
from srez_client.layout import (
    DIALOG_PATH,
    RUN_ID_RE,
    RunFolder,
    model_slug,
    new_run_id,
    run_path,
)
from srez_core.atomic import atomic_write_bytes, atomic_write_json
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import ErrorEntry, TaskPrompt, Thinking, iter_dialog
from srez_daemon.record.storage import DialogWriter

T0 = datetime(2025, 3, 14, 10, 3, 0, 125000, tzinfo=UTC)
RUN_ID = "20250314T100300Z-deadbeef"


def fixed_bytes(n: int) -> bytes:
    return bytes.fromhex("deadbeef")[:n]


def ticking_clock(start: datetime = T0) -> list[datetime]:
    return [start + timedelta(seconds=i) for i in range(100)]


def test_new_run_id_format() -> None:
    run_id = new_run_id(T0, fixed_bytes)
    assert run_id == RUN_ID
    assert RUN_ID_RE.match(run_id)


def test_new_run_id_converts_to_utc_and_uses_fresh_randomness() -> None:
    plus_two = T0.astimezone(timezone(timedelta(hours=2)))
    assert new_run_id(plus_two, fixed_bytes) == RUN_ID
    ids = {new_run_id(T0) for _ in range(50)}
    assert len(ids) == 50
    assert all(RUN_ID_RE.match(i) for i in ids)


def test_utc_timestamp() -> None:
    assert utc_timestamp(T0) == "2025-03-14T10:03:00.125Z"
    with pytest.raises(ValueError, match="naive"):
        utc_timestamp(datetime(2025, 3, 14))  # noqa: DTZ001


def test_model_slug() -> None:
    assert model_slug(None) == "none"
    assert model_slug("") == "none"
    assert model_slug("anthropic/claude-x") == "anthropic__claude-x"
    assert model_slug("openrouter/meta/llama") == "openrouter__meta__llama"
    with pytest.raises(ResultsError):
        model_slug("..")
    with pytest.raises(ResultsError):
        model_slug("bad\x1bname")


def test_run_path_layout(tmp_path: Path) -> None:
    path = run_path(tmp_path, "sre-007", "a/b", "scripted", RUN_ID)
    assert path == tmp_path / "sre-007" / "a__b" / "scripted" / RUN_ID
    assert run_path(tmp_path, "sre-007", None, "random", RUN_ID).parent.parent.name == "none"


@pytest.mark.parametrize(
    ("task", "agent", "run_id"),
    [
        ("../etc", "scripted", RUN_ID),
        ("sre-007", "..", RUN_ID),
        ("", "scripted", RUN_ID),
        ("sre-007", "scripted", "../x"),
        ("sre-007", "scripted", "20250314T100300Z-DEADBEEF"),
    ],
)
def test_run_path_rejects_unsafe_names(tmp_path: Path, task: str, agent: str, run_id: str) -> None:
    with pytest.raises(ResultsError):
        run_path(tmp_path, task, None, agent, run_id)


def test_atomic_write_creates_and_replaces_without_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_atomic_write_interrupted_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "summary.json"
    atomic_write_bytes(target, b'{"old": true}\n')

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space"):
        atomic_write_bytes(target, b'{"new": true}\n')
    monkeypatch.undo()
    assert target.read_bytes() == b'{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_atomic_write_interrupted_at_rename_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    atomic_write_bytes(target, b"old")

    def failing_replace(self: Path, other: Path) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", failing_replace)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_atomic_write_json(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    atomic_write_json(target, {"b": 1, "a": [1, 2]})
    assert target.read_text().startswith('{\n  "b": 1')
    assert target.read_text().endswith("}\n")


def test_dialog_writer_assigns_seq_and_ts_and_fsyncs_each_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = iter(ticking_clock())
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    path = tmp_path / "dialog.jsonl"
    with DialogWriter(path, clock=lambda: next(times)) as dialog:
        monkeypatch.setattr(os, "fsync", counting_fsync)
        first = dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text="hello"))
        second = dialog.append(lambda seq, ts: Thinking(seq=seq, ts=ts, text="hmm\nmore"))
        assert dialog.count == 2
    assert len(synced) == 2
    assert (first.seq, first.ts) == (0, "2025-03-14T10:03:00.125Z")
    assert (second.seq, second.ts) == (1, "2025-03-14T10:03:01.125Z")
    assert list(iter_dialog(path.read_bytes())) == [first, second]
    with pytest.raises(ValueError, match="closed"):
        dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text="late"))


def test_dialog_writer_refuses_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "dialog.jsonl"
    path.write_bytes(b"old\n")
    with pytest.raises(FileExistsError):
        DialogWriter(path)
    assert path.read_bytes() == b"old\n"


def test_dialog_writer_output_has_no_error_entries(tmp_path: Path) -> None:
    path = tmp_path / "dialog.jsonl"
    with DialogWriter(path) as dialog:
        for i in range(20):
            text = f"t{i} ✓ \x00 \u2028"
            dialog.append(lambda seq, ts: Thinking(seq=seq, ts=ts, text=text))  # noqa: B023
    entries = list(iter_dialog(path.read_bytes()))
    assert [e.seq for e in entries] == list(range(20))
    assert not [e for e in entries if isinstance(e, ErrorEntry)]


def test_run_folder_is_renamed_only_on_completion(tmp_path: Path) -> None:
    final = run_path(tmp_path, "sre-007", None, "scripted", RUN_ID)
    folder = RunFolder.create(final)
    assert folder.partial_dir == final.parent / f".{RUN_ID}.partial"
    assert folder.partial_dir.is_dir()
    assert not final.exists()
    folder.write_json("run.json", {"task_id": "sre-007"})
    with folder.open_dialog() as dialog:
        dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text="x"))
    folder.write_bytes("final.patch", b"")
    assert not final.exists()
    assert (folder.partial_dir / DIALOG_PATH).is_file()
    assert folder.complete() == final
    assert folder.completed
    assert not folder.partial_dir.exists()
    assert sorted(p.relative_to(final).as_posix() for p in final.rglob("*")) == [
        "archive",
        "archive/dialog.jsonl",
        "final.patch",
        "run.json",
    ]
    assert [p.name for p in final.parent.iterdir()] == [RUN_ID]
    assert folder.complete() == final  # idempotent


def test_run_folder_interrupted_run_never_appears_complete(tmp_path: Path) -> None:
    final = run_path(tmp_path, "sre-007", None, "scripted", RUN_ID)
    folder = RunFolder.create(final)
    folder.write_json("run.json", {"task_id": "sre-007"})
    # the process dies here: complete() is never called
    assert not final.exists()
    assert [p.name for p in final.parent.iterdir()] == [f".{RUN_ID}.partial"]
    with pytest.raises(ResultsError, match="another run"):
        RunFolder.create(final)


def test_run_folder_never_overwrites_a_run(tmp_path: Path) -> None:
    final = run_path(tmp_path, "sre-007", None, "scripted", RUN_ID)
    final.mkdir(parents=True)
    (final / "result.json").write_text("{}")
    with pytest.raises(ResultsError, match="already exists"):
        RunFolder.create(final)
    folder = RunFolder(final)
    folder.partial_dir.mkdir()
    with pytest.raises(ResultsError, match="appeared"):
        folder.complete()
    assert (final / "result.json").read_text() == "{}"
    assert folder.partial_dir.is_dir()
