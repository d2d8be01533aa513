"""The model picker's view model and typed commands, as plain Python (no urwid)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from srez_client.models_catalog import parse_catalog
from srez_client.tui.dashboard import commands
from srez_client.tui.dashboard.commands import CommandError, parse_command
from srez_client.tui.dashboard.picker_model import PickerModel
from srez_client.tui.keys import context_keys

CATALOG = """
| slug | provider | default | note |
|---|---|---|---|
| openai/gpt-4o | OpenAI | yes | tool calling |
| openai/gpt-4o-mini | OpenAI | yes | cheap |
| openai/o3-mini | OpenAI | | reasoning |
| anthropic/claude-a | Anthropic | | tool calling |
| anthropic/claude-b | Anthropic | yes | cheap |
| gemini/flash | Google | | cheap |
| mistral/large | Mistral | | evil \x1b[2J note |
"""
SLUGS = [
    "openai/gpt-4o",
    "openai/gpt-4o-mini",
    "openai/o3-mini",
    "anthropic/claude-a",
    "anthropic/claude-b",
    "gemini/flash",
    "mistral/large",
]
DEFAULTS = {"openai/gpt-4o", "openai/gpt-4o-mini", "anthropic/claude-b"}


def picker(page_size: int = 3, selected: list[str] | None = None) -> PickerModel:
    model = PickerModel.from_catalog(parse_catalog(CATALOG), selected)
    model.set_page_size(page_size)
    return model


def focused(model: PickerModel) -> str:
    return model.view()[model.cursor].slug


PURE = ("picker_model", "commands", "dashboard_model", "monitor_model", "form_model", "source")


def test_view_model_modules_import_no_urwid() -> None:
    modules = ", ".join(f"srez_client.tui.dashboard.{name}" for name in PURE)
    code = f"import sys, {modules}; print('urwid' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    for name in PURE:  # and none imports it, even inside a function
        text = (Path(commands.__file__).parent / f"{name}.py").read_text()
        assert not re.search(r"^\s*(import|from)\s+urwid\b", text, re.MULTILINE), name


def test_picker_starts_on_the_catalogue_defaults() -> None:
    model = picker()
    assert model.selected == DEFAULTS
    assert model.chosen() == ["openai/gpt-4o", "openai/gpt-4o-mini", "anthropic/claude-b"]
    assert model.lines()[0] == (True, "[x] 1. openai/gpt-4o  tool calling")
    assert model.lines()[2] == (False, "[ ] 3. openai/o3-mini  reasoning")


def test_picker_notes_from_the_catalogue_are_sanitised() -> None:
    model = picker(page_size=10)
    last = model.lines()[-1][1]
    assert "\x1b" not in last
    assert "\\x1b[2J" in last


def test_picker_up_down_move_and_stop_at_the_ends() -> None:
    model = picker()
    model.press("up")
    assert model.cursor == 0
    model.type(["down"] * 10)
    assert focused(model) == "mistral/large"
    model.press("up")
    assert focused(model) == "gemini/flash"


def test_picker_space_toggles_the_focused_row() -> None:
    model = picker()
    model.type(["down", "down", " "])
    assert "openai/o3-mini" in model.selected
    model.press(" ")
    assert "openai/o3-mini" not in model.selected
    model.press("up")
    model.press(" ")
    assert "openai/gpt-4o-mini" not in model.selected


def test_picker_left_right_change_pages_and_clamp() -> None:
    model = picker(page_size=3)
    assert model.page_count() == 3
    model.press("right")
    assert (model.page, focused(model)) == (1, "anthropic/claude-a")
    assert [n for n, _ in model.page_rows()] == [4, 5, 6]
    model.press("right")
    assert (model.page, focused(model)) == (2, "mistral/large")
    model.press("right")  # no page 4
    assert model.page == 2
    model.type(["left", "left", "left"])
    assert (model.page, model.cursor) == (0, 0)
    assert "page 1/3" in model.status()


def test_picker_filter_is_live_and_enter_keeps_it() -> None:
    model = picker()
    model.type(["/", *"CHEAP"])
    assert model.prompt_line() == "/CHEAP"
    assert [r.slug for r in model.view()] == [
        "openai/gpt-4o-mini",
        "anthropic/claude-b",
        "gemini/flash",
    ]
    model.press("enter")
    assert model.prompt is None
    assert model.filter == "CHEAP"
    assert "3 shown" in model.status()
    model.press("f")
    assert model.filter == ""
    assert len(model.view()) == 7


def test_picker_filter_esc_restores_the_previous_filter() -> None:
    model = picker()
    model.type(["/", *"openai", "enter", "/", "backspace", *"xyz"])
    assert model.view() == []
    model.press("esc")
    assert model.filter == "openai" and len(model.view()) == 3
    assert model.outcome is None  # Esc closed the prompt, not the picker


def test_picker_filter_resets_cursor_to_the_first_row() -> None:
    model = picker()
    model.type(["down", "down", "down", "/", *"claude", "enter"])
    assert model.cursor == 0
    assert focused(model) == "anthropic/claude-a"


def test_picker_a_and_u_act_on_every_filtered_row_across_pages() -> None:
    model = picker(page_size=1)
    model.type(["c", "/", *"openai", "enter", "a"])
    assert model.selected == {"openai/gpt-4o", "openai/gpt-4o-mini", "openai/o3-mini"}
    model.type(["f", "/", *"mini", "enter", "u"])
    assert model.selected == {"openai/gpt-4o"}


def test_picker_c_clears_all_even_hidden_rows_and_d_resets_defaults() -> None:
    model = picker()
    model.type(["/", *"gemini", "enter", "c"])
    assert model.selected == set()
    model.type(["f", "down", "down", " ", "d"])
    assert model.selected == DEFAULTS
    assert "3 default" in model.message


def test_picker_enter_accepts_and_esc_cancels() -> None:
    model = picker()
    model.press("enter")
    assert model.outcome == "accepted"
    other = picker()
    other.press("esc")
    assert other.outcome == "cancelled"


def test_picker_unbound_key_is_not_handled_and_changes_nothing() -> None:
    model = picker()
    model.press("down")
    assert model.press("z") is False
    assert model.press("ctrl q") is False
    assert (model.selected, model.cursor, model.message) == (DEFAULTS, 1, "")
    assert model.press(" ") is True


def test_picker_manual_slugs_are_added_selected_and_marked() -> None:
    model = picker(page_size=10)
    model.type(["m", *"groq/llama-3, openai/gpt-4o", "enter"])
    assert not model.error
    assert "groq/llama-3" in model.selected
    assert model.rows[-1].slug == "groq/llama-3" and model.rows[-1].manual
    assert sum(r.slug == "openai/gpt-4o" for r in model.rows) == 1
    assert model.lines()[-1][1] == "[x] 8. groq/llama-3 (manual)"


@pytest.mark.parametrize("typed", ["not-a-slug", "ok/slug bad\x1bslug", ""])
def test_picker_bad_manual_slug_changes_nothing(typed: str) -> None:
    model = picker()
    before = (list(model.rows), set(model.selected))
    model.type(["m", *typed, "enter"])
    assert model.error
    assert (model.rows, model.selected) == before
    assert "\x1b" not in model.message


def test_picker_manual_prompt_takes_only_printable_keys() -> None:
    model = picker()
    model.type(["m", "a", "ctrl x", "f1", *"/b", "enter"])
    assert "a/b" in model.selected


def test_picker_typed_select_drop_and_toggle() -> None:
    model = picker()
    model.type([":", *"select 1-3", "enter"])
    assert {"openai/gpt-4o", "openai/gpt-4o-mini", "openai/o3-mini"} <= model.selected
    assert model.message == "selected 3 row(s)"
    model.type([":", *"drop 2,4", "enter"])
    assert "openai/gpt-4o-mini" not in model.selected
    assert "anthropic/claude-a" not in model.selected
    model.type([":", *"4-5", "enter"])  # 4 off -> on, 5 on -> off
    assert "anthropic/claude-a" in model.selected
    assert "anthropic/claude-b" not in model.selected


def test_picker_typed_numbers_are_global_within_the_filter_on_any_page() -> None:
    model = picker(page_size=1)
    model.type(["c", "/", *"anthropic", "enter", "right"])
    assert model.page == 1
    model.type([":", *"select 1", "enter"])
    assert model.selected == {"anthropic/claude-a"}


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("", "empty command"),
        ("pick 1", "unknown command 'pick'"),
        ("select", "select needs rows"),
        ("select 1-x", "'1-x' is not a row number"),
        ("drop 3-1", "runs backwards; write 1-3"),
        ("select 0", "row 0 is not shown; rows are 1-7"),
        ("1-9", "row 9 is not shown; rows are 1-7"),
        ("2,,3", "'an empty item'"),
        ("select 1 2", "'1 2' is not a row number"),
    ],
)
def test_picker_bad_typed_command_says_what_and_changes_nothing(typed: str, says: str) -> None:
    model = picker()
    model.type([":", *typed, "enter"])
    assert model.error
    assert says in model.message
    assert model.message.endswith("nothing changed")
    assert model.selected == DEFAULTS


def test_picker_command_prompt_backspace_and_esc() -> None:
    model = picker()
    model.type([":", *"drop 11", "backspace", "enter"])
    assert "openai/gpt-4o" not in model.selected
    model.type([":", *"select 1", "esc"])
    assert "openai/gpt-4o" not in model.selected
    assert model.prompt is None


def test_picker_starts_on_given_slugs_keeping_unknown_ones_as_manual() -> None:
    model = picker(selected=["openai/o3-mini", "custom/model", "junk"])
    assert model.selected == {"openai/o3-mini", "custom/model"}
    assert model.rows[-1].manual


def test_picker_reports_catalogue_problems() -> None:
    catalog = parse_catalog("| slug |\n|---|\n| broken |\n| a/b |\n")
    model = PickerModel.from_catalog(catalog)
    assert model.error and "broken" in model.message


def test_parse_command_merges_and_sorts_rows() -> None:
    assert parse_command(" SELECT 5, 1-3 ,2 ", 9) == commands.Command("select", (1, 2, 3, 5))
    assert parse_command("3 - 4", 9).rows == (3, 4)
    with pytest.raises(CommandError, match="no rows are shown"):
        parse_command("1", 0)


def test_picker_keys_are_all_bound_to_actions() -> None:
    model = picker()
    for action in context_keys("picker").values():
        assert callable(getattr(model, f"_do_{action}"))
