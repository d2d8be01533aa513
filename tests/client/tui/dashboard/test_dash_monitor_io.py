"""The monitor's file reading: log tails that follow appends, truncation and replacement, and the
evidence figures read from ``result.json``."""

from __future__ import annotations

from pathlib import Path

import orjson

from srez_client.tui.dashboard import monitor_io
from srez_client.tui.dashboard.monitor_io import FileTail, read_evidence


def test_tail_follows_appends_and_holds_a_partial_line(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    tail = FileTail(log, keep=3)
    assert tail.poll() is False and tail.tail() == ()
    log.write_bytes(b"one\ntwo\nthr")
    assert tail.poll() is True
    assert tail.tail() == ("one", "two", "thr")
    with log.open("ab") as f:
        f.write(b"ee\r\nfour\nfive\n")
    tail.poll()
    assert tail.tail() == ("three", "four", "five")
    assert tail.poll() is False


def test_tail_starts_over_on_truncation_and_replacement(tmp_path: Path) -> None:
    log = tmp_path / "runner.log"
    log.write_bytes(b"a\nb\nc\n")
    tail = FileTail(log)
    tail.poll()
    log.write_bytes(b"x\n")  # truncated in place: smaller than the offset
    tail.poll()
    assert tail.tail()[-2:] == ("--- log replaced or truncated ---", "x")
    replacement = tmp_path / "new"
    replacement.write_bytes(b"y1\ny2\n")
    replacement.replace(log)  # a new inode
    tail.poll()
    assert tail.tail()[-3:] == ("--- log replaced or truncated ---", "y1", "y2")


def test_tail_reads_only_the_end_of_a_big_log_and_skips_floods(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(b"old line\n" * 20000 + b"last\n")
    tail = FileTail(log, keep=10_000)
    tail.poll()
    lines = tail.tail()
    assert lines[-1] == "last"
    assert len(lines) <= monitor_io.FIRST_READ // 9 + 1
    with log.open("ab") as f:
        f.write(b"z" * (monitor_io.MAX_READ + 100) + b"\nafter\n")
    tail.poll()
    assert any(line.endswith("bytes skipped ---") for line in tail.tail())
    assert tail.tail()[-1] == "after"


def test_tail_does_not_follow_a_link(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("do not show\n")
    (tmp_path / "console.log").symlink_to(secret)
    tail = FileTail(tmp_path / "console.log")
    assert tail.poll() is False and tail.tail() == ()


def test_evidence_from_result_json(tmp_path: Path) -> None:
    grade = {
        "metrics": {"evidence_witnessed": ["e1", "e3", "zz"]},
        "ground_truth": {"required_evidence": ["e1", "e2", "e3"]},
    }
    (tmp_path / "result.json").write_bytes(orjson.dumps(grade))
    found = read_evidence(tmp_path)
    assert found is not None and (found.witnessed, found.required) == (2, 3)
    assert abs(found.share - 2 / 3) < 1e-9


def test_evidence_is_none_when_unreadable(tmp_path: Path) -> None:
    assert read_evidence(tmp_path) is None
    (tmp_path / "result.json").write_bytes(b"{torn")
    assert read_evidence(tmp_path) is None
    (tmp_path / "result.json").write_bytes(b'{"metrics": {}, "ground_truth": {}}')
    assert read_evidence(tmp_path) is None
    (tmp_path / "result.json").write_bytes(
        b'{"metrics": {"evidence_witnessed": 3}, "ground_truth": {"required_evidence": []}}'
    )
    assert read_evidence(tmp_path) is None
