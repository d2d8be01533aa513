"""Which backends ``srez view`` (and ``srez tui``) list live runs on: ``$SREZ_TUI_BACKENDS`` when
set, else ``local`` and every backend this state launched runs on, chosen again when it launches
on another."""

from __future__ import annotations

from pathlib import Path

import pytest

from srez_client.backends.registry import live_backend_names
from srez_client.backends.state import Ledger, OwnedRun
from srez_client.tui.app import default_backends
from srez_client.web.live import BackendChoice, BackendLiveRuns


def _launched(state: Path, run_id: str, backend: str) -> None:
    entry = OwnedRun(run_id=run_id, backend=backend, nonce="n", owner=0, created_at="t")
    Ledger(state).add(entry)


@pytest.mark.parametrize(
    ("env", "launched", "names"),
    [
        ({}, set(), ["local"]),
        ({}, {"local"}, ["local"]),
        ({}, {"ray", "docker"}, ["local", "docker", "ray"]),  # registry order
        ({}, {"inline", "docker"}, ["local", "docker"]),  # inline runs are results already
        ({}, {"nowhere"}, ["local"]),
        ({"SREZ_TUI_BACKENDS": "docker"}, {"ray"}, ["docker"]),  # named: only those
        ({"SREZ_TUI_BACKENDS": " ray, inline,ray,x "}, set(), ["ray", "inline"]),
        ({"SREZ_TUI_BACKENDS": " "}, {"docker"}, ["local", "docker"]),
    ],
)
def test_live_backend_names_by_environment_and_ledger(
    env: dict[str, str], launched: set[str], names: list[str]
) -> None:
    assert live_backend_names(env, launched) == names


def test_the_ledger_names_the_backends_this_state_launched_on(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    assert ledger.backends() == set() and ledger.changed() == (0, 0)
    _launched(tmp_path, "20260101T000000Z-00000001", "docker")
    _launched(tmp_path, "20260101T000000Z-00000002", "local")
    (ledger.folder / "20260101T000000Z-00000003.json").write_text("not json")
    assert ledger.backends() == {"docker", "local"}
    before = ledger.changed()
    ledger.forget("20260101T000000Z-00000001")
    assert ledger.backends() == {"local"} and ledger.changed() != before


def test_the_view_lists_a_backend_once_this_state_launches_on_it(tmp_path: Path) -> None:
    env = {"SREZ_STATE": str(tmp_path / "state")}
    live = BackendLiveRuns.from_env(env, backend=None, results=tmp_path)
    assert [b.name for b in live.backends] == ["local"]
    _launched(tmp_path / "state", "20260101T000000Z-00000001", "ray")
    _launched(tmp_path / "state", "20260101T000000Z-00000002", "inline")
    first = live.backends
    assert [b.name for b in first] == ["local", "ray"]
    assert live.backends[0] is first[0]  # made once, not on every listing
    assert [b.name for b in default_backends(env)] == ["local", "ray"]  # as srez tui chooses


def test_backend_pins_the_view_to_one_backend(tmp_path: Path) -> None:
    env = {"SREZ_STATE": str(tmp_path / "state"), "SREZ_TUI_BACKENDS": "local,ray"}
    _launched(tmp_path / "state", "20260101T000000Z-00000001", "docker")
    live = BackendLiveRuns.from_env(env, backend="docker", results=tmp_path)
    assert [b.name for b in live.backends] == ["docker"]
    assert BackendChoice(env).names() == ["local", "ray"]
