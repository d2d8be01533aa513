"""The dialog protocol: models, line codec, hostile input, schema."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from processkit import loaded_by
from pydantic import ValidationError

from srez_daemon.protocol import (
    DIALOG_ADAPTER,
    ENTRY_TYPES,
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    Assistant,
    DialogEntry,
    ErrorEntry,
    NotesDropped,
    ProviderError,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    SessionTimedOut,
    TaskPrompt,
    Thinking,
    TokenCount,
    ToolCall,
    ToolResult,
    Usage,
    dialog_json_schema,
    encode_entry,
    iter_dialog,
    parse_line,
)

GOLDEN = Path(__file__).parent / "golden"
TS = "2025-03-14T10:03:00.125Z"

SAMPLES: list[DialogEntry] = [
    SessionStarted(seq=0, ts=TS, agent="scripted", model="none", task_id="sre-007", run_id="r"),
    TaskPrompt(seq=1, ts=TS, text="You are the on-call SRE.\nFix it."),
    Assistant(seq=2, ts=TS, text="**ok**", tokens=TokenCount(input=10, output=3)),
    Thinking(seq=3, ts=TS, text="hmm ünïcode ✓"),
    ToolCall(seq=4, ts=TS, call_id="c1", name="get_logs", args={"service": "db", "limit": 5}),
    ToolResult(
        seq=5,
        ts=TS,
        call_id="c1",
        status="error",
        result='{"code":"BAD_ARGS"}',
        duration_ms=0.25,
        step=1,
        steps_left=19,
    ),
    ProviderError(seq=6, ts=TS, kind="timeout", message="read timed out", retry_in_s=2.0),
    Usage(seq=7, ts=TS, tokens=TokenCount(input=100, output=20), cost_usd=0.01),
    SessionCompleted(seq=8, ts=TS, turns=4, duration_s=1.5),
    SessionFailed(seq=9, ts=TS, turns=1, duration_s=0.1, error="agent raised"),
    SessionTimedOut(seq=10, ts=TS, turns=9, duration_s=600.0, tokens_total=5, cost_usd=0.5),
    ErrorEntry(seq=-1, ts=TS, kind="invalid_json", message="bad", line=3, offset=10, bytes=4),
    NotesDropped(
        seq=11, ts=TS, reason="bytes", limit=1 << 26, notes_kept=64, bytes_kept=67_000_000
    ),
]


def test_samples_cover_every_entry_type() -> None:
    assert {e.type for e in SAMPLES} == ENTRY_TYPES
    assert len(ENTRY_TYPES) == 13


@pytest.mark.parametrize("entry", SAMPLES, ids=lambda e: e.type)
def test_entry_round_trips_through_a_line(entry: DialogEntry) -> None:
    line = encode_entry(entry)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert parse_line(line, line_no=1, offset=0) == entry
    assert DIALOG_ADAPTER.validate_json(line) == entry


def test_encode_entry_puts_envelope_first() -> None:
    keys = list(json.loads(encode_entry(SAMPLES[4])))
    assert keys[:3] == ["seq", "ts", "type"]


def test_session_started_records_protocol_version() -> None:
    assert json.loads(encode_entry(SAMPLES[0]))["protocol_version"] == PROTOCOL_VERSION


def test_golden_v1_dialog_still_parses() -> None:
    entries = list(iter_dialog((GOLDEN / "dialog-v1.jsonl").read_bytes()))
    assert [e.seq for e in entries] == list(range(13))
    assert not [e for e in entries if isinstance(e, ErrorEntry)]
    # v1 had every type but the reader-made error and v2's notes_dropped
    assert {e.type for e in entries} == ENTRY_TYPES - {"error", "notes_dropped"}


@pytest.mark.parametrize("ts", ["2025-03-14T10:03:00", "2025-03-14T10:03:00+00:00", "", "now"])
def test_entry_rejects_timestamps_without_z(ts: str) -> None:
    with pytest.raises(ValidationError):
        TaskPrompt(seq=0, ts=ts, text="x")


def test_parse_line_unknown_type_is_an_error_entry() -> None:
    raw = b'{"seq": 7, "ts": "2025-03-14T10:00:00Z", "type": "telepathy"}\n'
    entry = parse_line(raw, line_no=8, offset=1234)
    assert isinstance(entry, ErrorEntry)
    assert entry.kind == "unknown_type"
    assert (entry.line, entry.offset, entry.bytes) == (8, 1234, len(raw) - 1)
    assert entry.seq == 7
    assert entry.ts == "2025-03-14T10:00:00Z"
    assert "telepathy" in entry.message


def test_parse_line_missing_type_is_an_error_entry() -> None:
    entry = parse_line(b'{"seq": 1}', line_no=1, offset=0)
    assert isinstance(entry, ErrorEntry)
    assert entry.kind == "unknown_type"


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'{"seq": 1, "ts": ', "invalid_json"),
        (b"NaN", "invalid_json"),
        (b'{"seq": 1, "x": Infinity}', "invalid_json"),
        (b"[" * 5000 + b"]" * 5000, "invalid_json"),
        (
            b'{"seq":1,"ts":"2025-03-14T10:00:00Z","type":"thinking","text":"\xff\xfe"}',
            "invalid_utf8",
        ),
        (b"[1, 2, 3]", "schema"),
        (b'"just a string"', "schema"),
        (b'{"seq":1,"ts":"2025-03-14T10:00:00Z","type":"tool_call","name":"x"}', "schema"),
        (b'{"seq":"one","ts":"2025-03-14T10:00:00Z","type":"thinking","text":"t"}', "schema"),
        (b'{"seq":1,"ts":"2025-03-14T10:00:00Z","type":"thinking","text":"t","x":1}', "schema"),
    ],
)
def test_parse_line_bad_input_becomes_error_entry(raw: bytes, kind: str) -> None:
    entry = parse_line(raw, line_no=2, offset=99)
    assert isinstance(entry, ErrorEntry)
    assert entry.kind == kind
    assert entry.line == 2
    assert entry.offset == 99
    assert "\n" not in entry.message
    assert len(entry.message) <= 200


def test_parse_line_schema_error_names_the_field() -> None:
    raw = b'{"seq":1,"ts":"2025-03-14T10:00:00Z","type":"tool_result","call_id":"c","status":"meh","result":"","duration_ms":1,"step":1,"steps_left":1}'
    entry = parse_line(raw, line_no=1, offset=0)
    assert isinstance(entry, ErrorEntry)
    assert "status" in entry.message


def test_parse_line_accepts_crlf() -> None:
    raw = encode_entry(SAMPLES[1]).replace(b"\n", b"\r\n")
    assert parse_line(raw, line_no=1, offset=0) == SAMPLES[1]


def test_parse_line_oversized_line_is_an_error_without_decoding() -> None:
    text = "x" * (5 * 1024 * 1024)
    raw = encode_entry(TaskPrompt(seq=0, ts=TS, text=text))
    entry = parse_line(raw, line_no=1, offset=0)
    assert isinstance(entry, ErrorEntry)
    assert entry.kind == "oversized_line"
    assert entry.bytes == len(raw) - 1 > MAX_LINE_BYTES
    big = parse_line(raw, line_no=1, offset=0, max_bytes=len(raw))
    assert isinstance(big, TaskPrompt)


def test_iter_dialog_torn_last_line() -> None:
    good = encode_entry(SAMPLES[0]) + encode_entry(SAMPLES[1])
    torn = encode_entry(SAMPLES[2])[:25]
    entries = list(iter_dialog(good + torn))
    assert entries[:2] == SAMPLES[:2]
    last = entries[2]
    assert isinstance(last, ErrorEntry)
    assert last.kind == "truncated_tail"
    assert last.offset == len(good)
    assert last.line == 3
    assert list(iter_dialog(good + torn, final=False)) == SAMPLES[:2]


def test_iter_dialog_complete_last_line_without_newline_is_kept() -> None:
    data = encode_entry(SAMPLES[0]) + encode_entry(SAMPLES[1]).rstrip(b"\n")
    assert list(iter_dialog(data)) == SAMPLES[:2]


def test_iter_dialog_keeps_offsets_and_line_numbers_across_bad_lines() -> None:
    first = encode_entry(SAMPLES[0])
    data = first + b"\xff\xff garbage\n\n" + encode_entry(SAMPLES[1])
    entries = list(iter_dialog(data))
    assert len(entries) == 3
    bad = entries[1]
    assert isinstance(bad, ErrorEntry)
    assert (bad.kind, bad.line, bad.offset) == ("invalid_utf8", 2, len(first))
    assert entries[2] == SAMPLES[1]


def test_parse_line_never_raises_on_random_bytes() -> None:
    rng = random.Random(4263)
    lines = [encode_entry(e) for e in SAMPLES]
    for _ in range(2000):
        base = bytearray(rng.choice(lines))
        for _ in range(rng.randint(1, 4)):
            base[rng.randrange(len(base))] = rng.randrange(256)
        cut = bytes(base[: rng.randint(0, len(base))])
        for raw in (cut, bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))):
            entry = parse_line(raw, line_no=1, offset=0)
            assert entry.type in ENTRY_TYPES


def test_dialog_schema_is_discriminated_on_type() -> None:
    schema = dialog_json_schema()
    json.dumps(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    one_of = schema["oneOf"]
    assert isinstance(one_of, list)
    assert len(one_of) == len(ENTRY_TYPES)
    discriminator = schema["discriminator"]
    assert isinstance(discriminator, dict)
    assert discriminator["propertyName"] == "type"
    mapping = discriminator["mapping"]
    assert isinstance(mapping, dict)
    assert set(mapping) == ENTRY_TYPES
    defs = schema["$defs"]
    assert isinstance(defs, dict)
    for ref in mapping.values():
        assert isinstance(ref, str)
        model = defs[ref.rsplit("/", 1)[-1]]
        assert isinstance(model, dict)
        required = model["required"]
        assert isinstance(required, list)
        assert {"seq", "ts", "type"} <= set(required)
        assert model["additionalProperties"] is False
        props = model["properties"]
        assert isinstance(props, dict)
        seq = props["seq"]
        assert isinstance(seq, dict)
        assert seq["description"]  # attribute docstrings reach the schema


def test_protocol_import_pulls_in_no_server_library() -> None:
    watched = ("aiohttp", "srez_client", "docker", "urwid")
    assert loaded_by("srez_daemon.protocol", watched) == []
