"""``make bench``'s ``view`` section measures what it says: real requests over a folder it made."""

from __future__ import annotations

import pytest
from bench.view import ENTRIES, view_figures


def test_the_view_figures_come_from_a_listing_of_every_run() -> None:
    figures = view_figures(runs=300, live=False)
    assert figures["runs"] == 300
    assert 0 < figures["list"]["median_ms"] <= figures["list"]["p90_ms"]
    assert figures["list"]["vs_target"] == round(figures["list"]["p90_ms"] / 300, 3)
    assert figures["index"]["first_s"] >= 0 and figures["filtered"]["p90_ms"] > 0


@pytest.mark.browser
def test_the_live_entry_figure_times_entries_into_a_real_browsers_dom() -> None:
    live = view_figures(runs=50)["live_entry"]
    assert live["entries"] >= ENTRIES - 5
    assert 0 <= live["median_ms"] <= live["p99_ms"]
