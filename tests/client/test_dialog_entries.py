"""The dialog-entry visitor covers the protocol's whole union, and so does every reader built on it:
a new entry type fails here before a viewer, a prompt or an export meets it."""

from __future__ import annotations

import inspect
from typing import Any, cast, get_args

import pytest

from srez_client.daemon_client.follow import render_entry
from srez_client.dialog_entries import EntryVisitor, SessionEnd, args_json, session_outcome
from srez_client.results.atif import to_atif
from srez_client.tui.viewmodels.dialog_fold import DialogFold
from srez_client.tui.viewmodels.explain_prompt import dialog_digest
from srez_daemon.protocol import dialog

TS = "2026-01-01T00:00:00Z"
END = {"turns": 2, "duration_s": 1.5, "error": "boom"}
RESULT = {"status": "success", "result": "ok", "duration_ms": 1, "step": 1, "steps_left": 9}
ONE_OF_EACH: list[dialog.DialogEntry] = [
    dialog.SessionStarted(seq=0, ts=TS, agent="llm", model="m", task_id="sre-001", run_id="r"),
    dialog.TaskPrompt(seq=1, ts=TS, text="fix it"),
    dialog.Thinking(seq=2, ts=TS, text="hmm"),
    dialog.Assistant(seq=3, ts=TS, text="plan", tokens=dialog.TokenCount(input=1, output=2)),
    dialog.ToolCall(seq=4, ts=TS, call_id="c", name="get_logs", args={"b": 1, "a": "x"}),
    dialog.ToolResult(seq=5, ts=TS, call_id="c", **RESULT),
    dialog.ProviderError(seq=6, ts=TS, kind="timeout", message="slow", retry_in_s=2),
    dialog.Usage(seq=7, ts=TS, tokens=dialog.TokenCount(input=1, output=2), cost_usd=0.01),
    dialog.NotesDropped(seq=8, ts=TS, reason="count", limit=5, notes_kept=5, bytes_kept=99),
    dialog.SessionCompleted(seq=9, ts=TS, **END),
    dialog.SessionFailed(seq=10, ts=TS, **END),
    dialog.SessionTimedOut(seq=11, ts=TS, **END),
    dialog.ErrorEntry(seq=-1, ts=TS, kind="schema", message="bad", line=13, offset=0, bytes=1),
]
"""One realistic entry of every type of the union."""


def _union_members() -> set[type[Any]]:
    union, _discriminator = get_args(dialog.DialogEntry)
    return set(get_args(union))


def _recorder() -> EntryVisitor[str]:
    """A visitor that answers with the name of the method the visit chose."""
    names = EntryVisitor.__abstractmethods__
    methods = {name: (lambda _self, _entry, name=name: name) for name in names}
    return cast("EntryVisitor[str]", type("Recorder", (EntryVisitor,), methods)())


def test_visitor_dispatches_every_type_of_the_protocol_union() -> None:
    members = _union_members()
    assert len(members) == len(dialog.ENTRY_TYPES)
    chosen = {model: _recorder().visit(model.model_construct()) for model in members}
    session_ends = set(get_args(SessionEnd))
    assert {chosen[m] for m in session_ends} == {"session_ended"}
    others = [chosen[m] for m in members - session_ends]
    assert len(others) == len(set(others))  # one method per other type
    methods = {name for name, _ in inspect.getmembers(EntryVisitor, inspect.isfunction)}
    assert set(chosen.values()) == methods - {"visit"}  # and every method is reached


def test_the_sample_holds_one_entry_of_every_type() -> None:
    assert {type(e) for e in ONE_OF_EACH} == _union_members()


def test_a_reader_missing_a_kind_of_entry_cannot_be_made() -> None:
    class Partial(EntryVisitor[str]):
        def task_prompt(self, entry: dialog.TaskPrompt) -> str:
            return ""

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]


@pytest.mark.parametrize("entry", ONE_OF_EACH, ids=lambda e: e.type)
def test_every_reader_handles_every_entry_type(entry: dialog.DialogEntry) -> None:
    assert render_entry(entry).startswith(f"[{'line 13' if entry.seq < 0 else entry.seq}]")
    fold = DialogFold()
    index = fold.add(entry)
    assert (index is None) == isinstance(entry, dialog.Usage)
    digest = dialog_digest([entry])
    assert digest == "" if isinstance(entry, dialog.Usage) else digest.startswith(f"[{entry.seq}]")
    to_atif([entry], run={})


def test_shared_facts_are_worded_once() -> None:
    assert args_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    ends = [e for e in ONE_OF_EACH if isinstance(e, SessionEnd)]
    assert [session_outcome(e) for e in ends] == ["completed", "failed", "timed out"]
