"""View models of the TUI, as plain Python (no urwid)."""

from __future__ import annotations

import ast
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

from tui_kit import GRADE, TS, session, tool_result

import srez_client.tui.viewmodels as viewmodels_pkg
from srez_client.tui.keys import (
    BINDINGS,
    CONTEXT_TITLES,
    action_for,
    context_action,
    context_keys,
    help_lines,
    keys_for,
)
from srez_client.tui.source import RunSource
from srez_client.tui.viewer_feed import RunFeed
from srez_client.tui.viewmodels.attach_list import (
    AttachList,
    AttachRow,
    handle_state,
    merge_rows,
    push_recent,
)
from srez_client.tui.viewmodels.changes import ChangesModel, parse_diff, similarity_colour
from srez_client.tui.viewmodels.detach import detach_options
from srez_client.tui.viewmodels.dialog_fold import PROMPT_CHARS, RESULT_CHARS, DialogFold
from srez_client.tui.viewmodels.evaluation import SCRIPTED_NOTE, build_evaluation
from srez_client.tui.viewmodels.layout import Layout
from srez_client.tui.viewmodels.log_buffer import MAX_LINES, LogBuffer, Logs
from srez_client.tui.viewmodels.markdown import render
from srez_client.tui.viewmodels.run_details import alerts_at_t0
from srez_client.tui.viewmodels.tabs import TABS
from srez_daemon.protocol import (
    ErrorEntry,
    ProviderError,
    SessionTimedOut,
    TaskPrompt,
    TokenCount,
    ToolCall,
    Usage,
)
from srez_daemon.protocol.api import DiffFrame, FileChange


def test_no_viewmodel_module_imports_urwid() -> None:
    folder = Path(viewmodels_pkg.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert len(modules) >= 8
    for path in [*modules, folder.parent / "keys.py", folder.parent / "viewer_feed.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.split(".")[0] == "urwid" for n in names), path


# ---------------------------------------------------------------------- dialog fold


def test_fold_pairs_tool_call_and_result_into_one_item() -> None:
    fold = DialogFold()
    fold.add_all(session(n_tools=2))
    kinds = [i.kind for i in fold.items]
    assert kinds == [
        "session_started",
        "task_prompt",
        "thinking",
        "assistant",
        "tool",
        "tool",
        "session_end",
    ]
    tool = fold.items[4]
    assert tool.status == "success" and tool.body == "line 0" and "step 1, 19 left" in tool.meta
    assert tool.title.startswith("Tool call: get_logs") and '"service":"payments"' in tool.title
    assert fold.items[3].meta == "10 in / 5 out tokens"


def test_fold_marks_a_call_running_until_its_result_and_error_after() -> None:
    fold = DialogFold()
    index = fold.add(ToolCall(seq=0, ts=TS, call_id="x", name="restart", args={}))
    assert index == 0 and fold.items[0].status == "running"
    version = fold.items[0].version
    again = fold.add(tool_result(1, "x", "boom", status="error", left=3, ms=2))
    assert again == 0 and fold.items[0].status == "error" and fold.items[0].version > version
    lone = fold.add(tool_result(2, "nope", "r", step=2, left=2))
    assert lone == 1 and "call not seen" in fold.items[1].title


def test_thinking_is_collapsed_until_opened() -> None:
    fold = DialogFold()
    fold.add_all(session())
    thinking = fold.items[2]
    assert thinking.shown_body() == "" and thinking.can_expand
    assert thinking.toggle() and thinking.shown_body().startswith("secret reasoning")
    assert thinking.toggle() and thinking.shown_body() == ""


def test_prompt_and_results_are_cut_with_show_more() -> None:
    fold = DialogFold()
    fold.add(TaskPrompt(seq=0, ts=TS, text="p" * 1000))
    fold.add(ToolCall(seq=1, ts=TS, call_id="a", name="get_logs", args={}))
    fold.add(tool_result(2, "a", "r" * 5000))
    prompt, tool = fold.items
    assert (
        prompt.shown_body().startswith("p" * PROMPT_CHARS + "…")
        and "700 more chars" in prompt.shown_body()
    )
    assert (
        tool.shown_body().split("…")[0] == "r" * RESULT_CHARS
        and "4000 more chars" in tool.shown_body()
    )
    tool.toggle()
    assert tool.shown_body() == "r" * 5000


def test_fold_sanitises_everything_it_keeps() -> None:
    fold = DialogFold()
    fold.add(ToolCall(seq=0, ts=TS, call_id="a", name="x\x1b]52;c;AAAA\x07", args={"k": "\x9b2J"}))
    fold.add(tool_result(1, "a", "ok\r\x1b[2Jgone\u202e"))
    item = fold.items[0]
    for text in (item.title, item.body):
        assert (
            "\x1b" not in text and "\x9b" not in text and "\r" not in text and "\u202e" not in text
        )
    assert "\\x1b" in item.title and "\\u202e" in item.body


def test_provider_errors_cooldowns_and_ends_are_visible() -> None:
    fold = DialogFold()
    fold.add(
        ProviderError(
            seq=0, ts=TS, kind="rate_limit", message="slow down", retry_in_s=30, cooldown=True
        )
    )
    fold.add(Usage(seq=1, ts=TS, tokens=TokenCount(input=100, output=7), cost_usd=0.25))
    fold.add(
        SessionTimedOut(
            seq=2,
            ts=TS,
            turns=4,
            duration_s=61.0,
            tokens_total=107,
            cost_usd=0.25,
            error="time limit",
        )
    )
    fold.add(
        ErrorEntry(seq=-1, ts=TS, kind="invalid_json", message="bad", line=9, offset=0, bytes=3)
    )
    err, end, bad = fold.items
    assert (
        "Provider error (rate_limit)" in err.title
        and "retry in 30 s" in err.title
        and "cooldown" in err.title
    )
    assert (
        end.title == "Session timed out"
        and "4 turns" in end.meta
        and "61.0 s" in end.meta
        and "$0.2500" in end.meta
    )
    assert "Unreadable line 9" in bad.title
    assert (fold.usage.input, fold.usage.output, fold.usage.cost_usd) == (100, 7, 0.25)


def test_footer_moves_from_waiting_to_live_to_complete() -> None:
    fold = DialogFold()
    assert fold.footer(live=True) == ("waiting", "Waiting for agent…")
    entries = session(n_tools=1)
    fold.add_all(entries[:-1])
    assert fold.footer(live=True) == ("live", "Live · entry #5")
    fold.add(entries[-1])
    assert fold.footer(live=True) == ("complete", "Session complete · entry #6")


def test_markdown_keeps_headings_bullets_code_and_bold() -> None:
    lines = render("# Title\n- item **b**\n1. one\n```\ncode *x*\n```\nplain `c`")
    assert lines[0] == [("heading", "Title")]
    assert lines[1] == [("bullet", "• "), ("text", "item "), ("bold", "b")]
    assert lines[2][0] == ("bullet", "1. ")
    assert lines[3] == [("code", "code *x*")]
    assert lines[4] == [("text", "plain "), ("code", "c")]


# ---------------------------------------------------------------------- attach list


def rows() -> list[AttachRow]:
    return [
        AttachRow("r1", "sre-001", "none", "heuristic", "running", "r1", "srez-run:1"),
        AttachRow("r2", "sre-002", "openai/gpt-4o", "llm", "exited", "r2"),
        AttachRow("r3", "sre-003", "none", "scripted", "finished", "/res/r3"),
    ]


def test_attach_list_tabs() -> None:
    model = AttachList(rows(), recent=["r3", "zz", "r1"])
    assert [r.run_id for r in model.visible()] == ["r1", "r2", "r3"]
    model.tab = "running"
    assert [r.run_id for r in model.visible()] == ["r1"]
    assert model.next_tab() == "finished" and [r.run_id for r in model.visible()] == ["r3"]
    assert model.next_tab() == "exited" and [r.run_id for r in model.visible()] == ["r2"]
    model.tab = "recent"
    assert [r.run_id for r in model.visible()] == ["r3", "r1"]
    assert model.counts() == {"running": 1, "finished": 1, "exited": 1, "all": 3, "recent": 2}
    assert model.next_tab() == "running" and model.next_tab(-1) == "recent"


def test_attach_list_filters_as_you_type_on_every_field() -> None:
    model = AttachList(rows())
    for query, expected in (
        ("gpt", ["r2"]),
        ("SCRIPT", ["r3"]),
        ("srez-run", ["r1"]),
        ("r2", ["r2"]),
        ("sre-00 none", ["r1", "r3"]),
    ):
        model.query = ""
        for char in query:
            model.type_char(char)
        assert [r.run_id for r in model.visible()] == expected, query
    model.backspace()
    assert model.query == "sre-00 non"


def test_finished_runs_are_marked_and_serving_runs_win() -> None:
    live = [
        AttachRow("r1", "t", "m", "a", "running", "r1", serving=True),
        AttachRow("r5", "t", "m", "a", handle_state("running", True), "r5", serving=True),
        AttachRow("r9", "t", "m", "a", handle_state("exited", True), "r9"),
    ]
    finished = [
        AttachRow("r1", "t", "m", "a", "finished", "/p/r1"),
        AttachRow("r5", "t", "m", "a", "finished", "/p/r5"),
        AttachRow("r9", "t", "m", "a", "finished", "/p/r9"),
    ]
    merged = {r.run_id: r for r in merge_rows(live, finished)}
    assert merged["r1"].state == "running" and merged["r1"].ref == "r1"
    # A kept run past its episode: finished, read through its daemon (ref: the run id).
    assert merged["r5"].state == "finished" and merged["r5"].ref == "r5"
    assert merged["r9"].state == "finished" and merged["r9"].ref == "/p/r9"
    assert merged["r9"].cells()[4] == "finished"
    assert handle_state("exited", False) == "exited" and handle_state("running", False) == "running"


def test_recent_keeps_ten_most_recent_first() -> None:
    recent: list[str] = []
    for i in range(12):
        recent = push_recent(recent, f"r{i}")
    recent = push_recent(recent, "r5")
    assert (
        recent[0] == "r5" and len(recent) == 10 and recent.count("r5") == 1 and "r0" not in recent
    )


# ---------------------------------------------------------------------- changes


DIFF = """--- a/payments/payments.conf
+++ b/payments/payments.conf
@@ -12,3 +12,3 @@
 [db]
-port = 5433
+port = 5432
--- /dev/null
+++ b/cache/new.conf
@@ -0,0 +1,2 @@
+a = 1
+b = \x1b[2J
"""


def test_diff_parses_into_cards_with_counts() -> None:
    cards = parse_diff(DIFF)
    assert [(c.path, c.status, c.added, c.removed) for c in cards] == [
        ("payments/payments.conf", "M", 1, 1),
        ("cache/new.conf", "A", 2, 0),
    ]
    assert cards[0].lines[0] == ("hunk", "@@ -12,3 +12,3 @@")
    assert cards[1].lines[-1] == ("add", "+b = \\x1b[2J")


def test_truth_and_split_appear_only_after_the_agent_phase() -> None:
    model = ChangesModel()
    model.set_agent_diff(DIFF)
    assert model.sides() == ["agent"] and not model.choose("truth")
    model.set_reference(DIFF.split("--- /dev/null")[0], 0.5)
    assert model.sides() == ["agent", "truth", "split"] and model.choose("split")
    assert model.totals() == (2, 3, 1) and model.totals(truth=True) == (1, 1, 1)
    assert model.similarity_text() == (
        "yellow",
        "Similarity: 50% of changed lines alike; keys: 1 same, 0 other value, 2 other keys",
    )
    model.toggle_raw()
    assert model.raw


def test_split_pairs_the_same_file_of_both_sides_and_flags_the_rest() -> None:
    model = ChangesModel()
    model.set_agent_diff(DIFF)  # payments/payments.conf (M), cache/new.conf (A)
    reference = DIFF.split("--- /dev/null")[0] + (
        "--- a/db/db.conf\n+++ b/db/db.conf\n@@ -1 +1 @@\n-max = 1\n+max = 9\n"
    )
    model.set_reference(reference, 0.5)
    pairs = [(path, a is not None, t is not None) for path, a, t in model.split_pairs()]
    assert pairs == [
        ("payments/payments.conf", True, True),  # both changed it: side by side
        ("cache/new.conf", True, False),  # only the agent
        ("db/db.conf", False, True),  # only the fix
    ]


def test_a_diff_frame_fills_the_changes_without_asking_the_daemon() -> None:
    changed: list[str] = []
    spawned: list[str] = []

    def spawn(coro: Coroutine[Any, Any, Any], name: str) -> None:
        coro.close()
        spawned.append(name)

    feed = RunFeed(cast(RunSource, object()), changed.append, spawn)  # never asked: no source
    files = [FileChange(path="payments/payments.conf", status="M", added=1, removed=1)]
    feed.apply(DiffFrame(files=files, diff=DIFF))
    assert feed.models.changes.totals() == (2, 3, 1)
    assert changed == ["changes"] and spawned == []


def test_similarity_colours() -> None:
    assert [similarity_colour(x) for x in (1.0, 0.8, 0.79, 0.4, 0.39, 0.0)] == [
        "green",
        "green",
        "yellow",
        "yellow",
        "red",
        "red",
    ]


# ---------------------------------------------------------------------- evaluation


def test_evaluation_checks_reward_and_steps() -> None:
    ev = build_evaluation(GRADE, {"duration_s": 2.5, "end_reason": "submit"})
    assert [(c.name, c.state) for c in ev.checks] == [
        ("valid", "pass"),
        ("func", "pass"),
        ("safe", "fail"),
        ("intent", "pass"),
        ("rca", "n/a"),
    ]
    assert ev.checks[2].reasons == ("restarted db without need",)
    assert ev.checks[4].reasons == ("not applicable to this task",)
    assert ev.reward == 0.5 and ev.components == [("fix", 1.0, 0.35)]
    assert (ev.steps, ev.max_steps, ev.duration_s, ev.timed_out) == (7, 20, 2.5, False)
    assert ev.note == ""


def test_evaluation_timeout_error_log_and_scripted_note() -> None:
    ev = build_evaluation(
        None,
        {"end_reason": "time_limit", "error": "agent \x1b[31mdied", "steps": 3},
        agent="scripted",
        log_tail="Traceback\x07",
    )
    assert not ev.graded and ev.timed_out and ev.steps == 3
    assert ev.error == "agent \\x1b[31mdied" and ev.error_log == "Traceback\\x07"
    assert ev.note == SCRIPTED_NOTE
    partial = build_evaluation({"checks": {"valid": "garbage"}, "reward": "x"})
    assert partial.checks[0].state == "n/a" and partial.reward is None


# ---------------------------------------------------------------------- layout, logs, keys, details


def test_layout_toggles_and_splits() -> None:
    lay = Layout(terminal=False)
    lay.toggle("left")
    lay.toggle("center")  # never both hidden
    assert (lay.left, lay.center) == (True, False)
    for _ in range(20):
        lay.widen_left(1)
        lay.grow_bottom(-1)
    assert (lay.left_percent, lay.bottom_rows) == (80, 3)
    assert "terminal" not in lay.tabs() and not lay.choose("terminal")
    lay.terminal = True
    assert lay.choose("terminal") and lay.center and lay.next_tab() == "ai"


def test_log_buffer_joins_split_lines_follows_and_trims() -> None:
    buf = LogBuffer("agent")
    assert buf.append("one\ntw") == 1 and buf.all_lines() == ["one", "tw"]
    assert buf.append("o\r\n\x1b[2Jthree\n") == 2 and buf.lines == ["one", "two", "\\x1b[2Jthree"]
    buf.append("x\n" * (MAX_LINES + 5))
    assert len(buf.lines) == MAX_LINES and buf.dropped == 8
    logs = Logs()
    logs.buffer("daemon")
    logs.buffer("agent")
    logs.follow = False
    assert logs.names() == ["agent", "daemon"] and logs.next_log() == "daemon" and logs.follow


def test_key_table_drives_actions_and_help() -> None:
    assert action_for("viewer", "[") == "toggle_left"
    assert action_for("viewer", "?") == "help"  # falls back to global
    assert action_for("list", "zz") is None
    keys = [(b.context, b.key) for b in BINDINGS]
    assert len(keys) == len(set(keys))
    assert any("detach" in line for line in help_lines())


def test_alerts_at_t0_and_detach_options() -> None:
    prompt = "Brief\n\nActive alerts at 10:00:\n- [critical] A\x1b[2J\n- [warning] B\n\nServices: x"
    assert alerts_at_t0(prompt) == ["- [critical] A\\x1b[2J", "- [warning] B"]
    assert detach_options(live=False, running=False) == ["Detach", "Cancel"]
    assert detach_options(live=True, running=True) == ["Detach", "Detach + Stop", "Cancel"]
    assert detach_options(live=True, running=False) == ["Detach", "Detach + Remove", "Cancel"]


def test_help_lists_the_dashboard_monitor_and_picker_keys_from_the_one_table() -> None:
    lines = help_lines()
    assert {"dashboard:", "monitor:", "model picker:", "managed-run forms:"} <= set(lines)
    monitor = lines[lines.index("monitor:") + 1 : lines.index("model picker:")]
    assert len(monitor) == len(context_keys("monitor"))
    assert any(line.split()[:2] == ["p", "pause"] for line in monitor)
    picker = lines[lines.index("model picker:") + 1 : lines.index("managed-run forms:")]
    assert len(picker) == len(context_keys("picker")) and "space" in picker[2]


def test_help_puts_the_screens_own_keys_first_then_global_then_the_rest() -> None:
    lines = help_lines(("monitor",))
    assert lines[0] == "monitor:"
    titles = [line for line in lines if line.endswith(":") and not line.startswith(" ")]
    assert titles[:3] == ["monitor:", "global:", "Other screens:"]
    assert len([t for t in titles if t == "monitor:"]) == 1  # listed once, not again below
    assert len(titles) == len(CONTEXT_TITLES) + 1
    assert help_lines()[0] == "viewer:" and "Other screens:" not in help_lines()  # no screen


def test_the_terminal_release_key_is_in_the_keymap_and_the_help() -> None:
    assert keys_for("terminal", "release") == ["ctrl a"]
    lines = help_lines(("terminal", "viewer"))
    assert lines[0].startswith("viewer's Terminal tab") and lines[1].split()[:2] == ["ctrl", "a"]


def test_screen_keys_do_not_fall_back_to_the_global_ones() -> None:
    assert context_action("dashboard", "?") is None and action_for("dashboard", "?") == "help"
    assert context_action("monitor", "esc") == "back"
    assert context_action("picker", " ") == "toggle"


def test_tab_rows_drive_the_layout_the_keys_and_the_help() -> None:
    lines = help_lines()
    for tab in TABS:
        assert action_for("viewer", tab.key) == tab.action
        assert any(line.split(None, 1) == [tab.key, tab.help] for line in lines)
    assert Layout(terminal=True).tabs() == [t.name for t in TABS]
    assert Layout(terminal=False).tabs() == [t.name for t in TABS if not t.needs_terminal]
    assert Layout().tab == TABS[0].name


def test_similarity_text_tells_another_value_from_other_keys() -> None:
    head = "--- a/db/db.conf\n+++ b/db/db.conf\n@@ -3,1 +3,1 @@\n"
    model = ChangesModel()
    model.set_agent_diff(f"{head}-pool_max = 8\n+pool_max = 27\n")
    model.set_reference(f"{head}-pool_max = 8\n+pool_max = 20\n", 1 / 3)
    assert model.similarity_text() == (
        "red",
        "Similarity: 33% of changed lines alike; keys: 0 same, 1 other value, 0 other keys",
    )


def test_a_finished_run_is_loading_until_its_dialog_is_read_to_the_end() -> None:
    fold = DialogFold()
    assert fold.footer(live=False, loaded=False) == ("loading", "Loading the dialog…")
    entries = session(n_tools=1)
    fold.add_all(entries[:3])
    assert fold.footer(live=False, loaded=False) == ("loading", "Loading the dialog… · entry #2")
    assert fold.footer(live=False, loaded=True) == ("complete", "Session complete · entry #2")
    fold.add_all(entries[3:])  # its session end says it is complete, read or not
    assert fold.footer(live=False, loaded=False) == ("complete", "Session complete · entry #6")
