"""docs/security.md §4 test 28: a corpus of escape payloads placed in every untrusted field the TUI
shows (dialog, diff, file names, grade messages, labels) never reaches the terminal raw.

Every screen is rendered twice: to an urwid canvas (its text must hold no control character),
and through urwid's raw display, i.e. the exact bytes the TUI writes to a terminal. Those bytes
may hold only the escape sequences the TUI emits for its own styling, learned from a baseline
rendering of harmless text (digits normalised, so cursor positions do not matter).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import urwid
from tui_kit import GRADE, RUN_ID, TS, FakeShell, MemoryBackend, tool_result, write_run
from urwid.display import raw

from srez_client.tui.source_results import FinishedRunSource
from srez_client.tui.viewer_feed import RunFeed
from srez_client.tui.viewmodels.evaluation import build_evaluation
from srez_client.tui.widgets.changes_view import ChangesView, FilesView
from srez_client.tui.widgets.dialog_view import ItemText, item_markup
from srez_client.tui.widgets.evaluation_view import EvaluationView
from srez_client.tui.widgets.palette import PALETTE
from srez_client.tui.widgets.run_list import RunList
from srez_daemon.protocol import (
    Assistant,
    DialogEntry,
    ProviderError,
    SessionFailed,
    SessionStarted,
    TaskPrompt,
    Thinking,
    ToolCall,
)

BASES = [
    "\x1b[2J", "\x1b[H", "\x1b[10;10H", "\x1b[1A", "\x1b[5C", "\x1b[?1049h", "\x1b[6n", "\x1b[>c",
    "\x1b]52;c;ZWNobyBwd25lZA==\x07", "\x1b]52;p;AAAA\x1b\\", "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x1b]0;pwned title\x07", "\x1b]2;title\x1b\\", "\x1bP+q544e\x1b\\", "\x1b_apc\x1b\\", "\x1b^pm\x1b\\",
    "\x1bXsos\x1b\\", "\x9b2J", "\x9b31m", "\x9d0;osc\x9c", "\x90dcs\x9c", "safe\roverwrite", "bell\x07",
    "abc\x08\x08\x08xyz", "\u202eevil", "\u2066iso\u2069", "\u200flrm", "\u2028ls", "\x00nul", "\x7fdel",
    "\x85nel", "\x1bc", "\x1b7\x1b8", "\x1b[31mred\x1b[0m", "[link=file:///etc/passwd]x[/link]", "[/]",
    "[bold red]x[/]", "\x1b(0lqk\x1b(B", "\x0e\x0f",
]  # fmt: skip
WRAPS = ["{}", "x{}", "{}y", "ok {} ok", "\t{}\n", "{}{}"]


def corpus() -> list[str]:
    """Every base in every wrapping, each numbered so it is unique: >= 200 payloads."""
    out = [
        wrap.format(base, base) + f"#{i}"
        for i, (wrap, base) in enumerate((w, b) for w in WRAPS for b in BASES)
    ]
    return list(dict.fromkeys(out))


PAYLOADS = corpus()
FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x0d\x10-\x1a\x1c-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)
"""Controls that must never reach the terminal (ESC, SI/SO and \\n are checked separately)."""
ESCAPE = re.compile(r"\x1b(\[[0-9;?>]*[ -/]*[@-~]|[()][0-9A-Za-z]|[@-Z\\-_]|.)", re.S)


def dialog(payloads: list[str]) -> list[DialogEntry]:
    out: list[DialogEntry] = [
        SessionStarted(
            seq=0, ts=TS, agent=payloads[0], model=payloads[1], task_id=payloads[2], run_id=RUN_ID
        ),
        TaskPrompt(seq=1, ts=TS, text="\n".join(payloads)),
    ]
    seq = 2
    for i, p in enumerate(payloads):
        out += [
            Assistant(seq=seq, ts=TS, text=f"# {p}\n- **{p}** `{p}`"),
            Thinking(seq=seq + 1, ts=TS, text=p),
            ToolCall(seq=seq + 2, ts=TS, call_id=f"c{i}", name=p, args={p: p}),
            tool_result(seq + 3, f"c{i}", p, status="error"),
            ProviderError(seq=seq + 4, ts=TS, kind="other", message=p),
        ]
        seq += 5
    out.append(SessionFailed(seq=seq, ts=TS, turns=1, duration_s=1, error=payloads[-1]))
    return out


def diff(payloads: list[str]) -> str:
    parts = []
    for i, p in enumerate(payloads):
        name = p.replace("\n", "").replace("/", "")
        parts.append(
            f"--- a/svc{i}/{name}.conf\n+++ b/svc{i}/{name}.conf\n@@ -1 +1 @@\n-old = {p}\n+new = {p}\n"
        )
    return "".join(parts)


def render_text(widget: urwid.Widget, size: tuple[int, ...]) -> urwid.Canvas:
    return widget.render(size, focus=True)


def terminal_bytes(canvas: urwid.Canvas) -> str:
    """What urwid's raw display writes to the terminal for ``canvas``."""
    out = io.StringIO()
    screen = raw.Screen(input=io.StringIO(), output=out)
    screen.register_palette(PALETTE)
    screen._started = True  # draw without taking over a real tty
    screen.draw_screen((canvas.cols(), canvas.rows()), canvas)
    return out.getvalue()


def shapes(text: str) -> set[str]:
    return {re.sub(r"\d+", "N", m.group(0)) for m in ESCAPE.finditer(text)}


def canvases(tmp_path: Path, payloads: list[str]) -> Iterator[tuple[str, urwid.Canvas]]:
    """Every screen part with payloads in it, as canvases."""
    grade = {**GRADE, "checks": {k: {"pass": False, "reasons": payloads} for k in GRADE["checks"]}}
    folder = write_run(
        tmp_path / "results",
        dialog(payloads),
        grade=grade,
        diff=diff(payloads),
        reference=diff(payloads[::-1]),
        summary_extra={"error": payloads[3]},
        logs={"agent": "\n".join(payloads)},
    )
    shell = FakeShell(tmp_path)
    feed = RunFeed(FinishedRunSource(folder), lambda _p: None, shell.spawn)
    from srez_daemon.protocol import iter_dialog

    feed.models.fold.add_all(iter_dialog((folder / "archive" / "dialog.jsonl").read_bytes()))
    for item in feed.models.fold.items:
        for expanded in (False, True):
            item.expanded = expanded and item.can_expand
            yield (
                f"dialog {item.seq} {expanded}",
                render_text(urwid.Filler(ItemText(item_markup(item)), "top"), (100, 60)),
            )
    changes = feed.models.changes
    changes.set_agent_diff(diff(payloads))
    changes.set_reference(diff(payloads[::-1]), 0.3)
    view = ChangesView(changes)
    for side in ("agent", "truth", "split"):
        for raw_mode in (False, True):
            changes.choose(side)  # type: ignore[arg-type]
            changes.raw = raw_mode
            view.refresh()
            yield f"changes {side} {raw_mode}", render_text(view, (140, 3000))
    files = FilesView(changes)
    yield "files", render_text(files, (100, 300))
    ev = EvaluationView()
    ev.show(build_evaluation(grade, {"error": payloads[-1]}, log_tail="\n".join(payloads)))
    yield "evaluation", render_text(ev, (100, 3000))
    from srez_client.tui.widgets.logs_view import LogsView

    feed.models.logs.buffer("agent").append("\n".join(payloads) + "\n")
    logs = LogsView(feed.models.logs)
    logs.refresh()
    yield "logs", render_text(urwid.BoxAdapter(logs, 400), (100,))


async def run_list_canvas(tmp_path: Path, payloads: list[str]) -> urwid.Canvas:
    backend = MemoryBackend(tmp_path / "results")
    for i, p in enumerate(payloads):
        handle = backend.add(f"20260101T000000Z-{i:08x}")
        backend.runs[handle.run_id] = handle.model_copy(
            update={"task_id": p, "model": p, "agent": p, "labels": {"srez.image": p}}
        )
    screen = RunList(FakeShell(tmp_path), [backend])  # type: ignore[arg-type]
    await screen._reload()
    return render_text(screen, (160, len(payloads) + 10))


async def test_corpus_has_at_least_200_payloads_in_every_field_and_none_leaks(
    tmp_path: Path,
) -> None:
    assert len(PAYLOADS) >= 200
    benign = [f"plain text {i} [ok] (fine)" for i in range(5)]
    baseline: set[str] = set()
    for _name, canvas in canvases(tmp_path / "base", benign):
        baseline |= shapes(terminal_bytes(canvas))
    baseline |= shapes(terminal_bytes(await run_list_canvas(tmp_path / "base", benign)))
    assert baseline, "the TUI emits styling sequences; the baseline must have seen them"

    leaks: dict[str, list[str]] = {}
    screens = list(canvases(tmp_path / "attack", PAYLOADS))
    screens.append(("run list", await run_list_canvas(tmp_path / "attack", PAYLOADS)))
    assert len(screens) > 2 * len(PAYLOADS)
    for name, canvas in screens:
        text = "\n".join(line.decode("utf-8") for line in canvas.text)
        assert not FORBIDDEN.search(text) and "\x1b" not in text, name
        emitted = terminal_bytes(canvas)
        if bad := FORBIDDEN.search(emitted):
            leaks.setdefault(name, []).append(repr(bad.group(0)))
        new = shapes(emitted) - baseline
        if new:
            leaks.setdefault(name, []).extend(sorted(new))
    assert leaks == {}
    # the payloads are there, visibly escaped, not dropped
    shown = "\n".join(line.decode() for _n, c in screens for line in c.text)
    for marker in (
        "\\x1b]52;c;",
        "\\x9b2J",
        "\\u202eevil",
        "[link=file:///etc/passwd]",
        "safe\\roverwrite",
    ):
        assert marker in shown, marker
