"""``make bench``'s ``view`` section measures what it says: real requests over a folder it made,
and live entries from a real run daemon into a real browser's DOM."""

from __future__ import annotations

import pytest
from bench import view
from bench.view import view_figures
from bench.view_heavy import Heavy
from bench.view_live import ENTRIES, LIVE_TARGET_MS

SMALL = Heavy(notes=1, note_bytes=50_000, log_bytes=1 << 20, patch_files=500, dialog_entries=2_000)
"""A heavy run small enough for the everyday suite (the bench's own is far larger)."""


def test_the_view_figures_come_from_a_listing_of_every_run() -> None:
    figures = view_figures(runs=300, live=False, heavy=SMALL)
    assert figures["runs"] == 300
    assert 0 < figures["list"]["median_ms"] <= figures["list"]["p90_ms"]
    assert figures["list"]["vs_target"] == round(figures["list"]["p90_ms"] / 300, 3)
    assert figures["index"]["first_s"] >= 0 and figures["filtered"]["p90_ms"] > 0
    heavy = figures["heavy_run"]
    assert heavy["others_requests"] >= 1 and 0 < heavy["others_median_ms"] <= heavy["others_p90_ms"]
    assert heavy["server_peak_mb"] > 20  # a real process's peak, read from /proc
    assert heavy["run"]["patch_files"] == 500


def test_without_chromium_the_live_figures_say_why_they_were_not_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(view.shutil, "which", lambda name: None)
    figures = view_figures(runs=20, heavy=SMALL)
    for name in ("live_entry", "live_entry_from_source"):
        assert figures[name]["measured"] is False
        assert "chromium and chromedriver not installed" in figures[name]["why"]


@pytest.mark.browser
def test_the_live_entry_figure_times_entries_from_a_daemon_into_a_real_browsers_dom() -> None:
    figures = view_figures(runs=50, heavy=SMALL)
    for name in ("live_entry", "live_entry_from_source"):
        live = figures[name]
        assert live["measured"] is True and live["target_p99_ms"] == LIVE_TARGET_MS
        assert live["entries"] >= ENTRIES - 5 and live["lost"] == ENTRIES - live["entries"]
        assert 0 <= live["median_ms"] <= live["p99_ms"] <= live["max_ms"]
    assert figures["live_entry"]["path"].startswith("daemon dialog.jsonl")
