"""The dashboard's and the monitor's view models and the form checks, on snapshots of real
managed-run folders (made with the managed API in tmp)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash_kit import checkpoint, graded_folder, make_run, record

from srez_client.managed.ledger import BudgetLedger, today
from srez_client.managed.models import RunnerState
from srez_client.tui.dashboard.dashboard_model import DashboardModel
from srez_client.tui.dashboard.form_model import create_request, parse_tasks, parse_usd
from srez_client.tui.dashboard.managed_source import ManagedApiSource
from srez_client.tui.dashboard.monitor_model import HELP as MONITOR_HELP
from srez_client.tui.dashboard.monitor_model import Evidence, MonitorData, MonitorModel
from srez_client.tui.dashboard.source import RunStatus
from srez_client.tui.keys import SAME_MEANING, context_action, context_keys, keys_for

LLM = "llm-openai__gpt-4o"


@pytest.fixture
def source(tmp_path: Path) -> ManagedApiSource:
    return ManagedApiSource(tmp_path / "results", tmp_path / "state")


def test_dashboard_lists_runs_and_targets_with_counts_and_scores(source: ManagedApiSource) -> None:
    results = source.results_root
    make_run(results, "b-run")
    make_run(results, "a-run", models=())
    checkpoint(results, "b-run", "scripted", record("sre-001", reward=1.0, passed=True))
    checkpoint(
        results, "b-run", LLM, record("sre-001", reward=0.5), record("sre-002", "provider_error")
    )
    model = DashboardModel()
    model.set_runs(source.list_runs())
    items = model.items()
    assert [(i.run, i.target) for i in items] == [
        ("a-run", None),
        ("a-run", "scripted"),
        ("b-run", None),
        ("b-run", "scripted"),
        ("b-run", LLM),
    ]
    assert "inline · 3 tasks · no budget" in items[2].text
    assert "partial" in items[3].text and "1/3" in items[3].text
    assert "score 1.000  passed 1" in items[3].text
    assert "score 0.500  passed 0" in items[4].text
    assert "pending" in items[1].text and "score   -" in items[1].text


def test_dashboard_shows_pause_runner_and_running_target(source: ManagedApiSource) -> None:
    make_run(source.results_root, budget=5.0)
    status = source.status("demo")
    from srez_client.managed import api

    api.pause(source.results_root, "demo", message="lunch \x1b[31m break")
    paused = source.status("demo")
    live = RunnerState(pid=4242, started_at="x", target="scripted", task="sre-002")
    running = RunStatus(
        paused.run, paused.folder, paused.status.model_copy(update={"runner": live}), {}
    )
    model = DashboardModel()
    model.set_runs([running])
    head, first, second = (i.text for i in model.items())
    assert "$5.00/day" in head and "runner pid 4242" in head
    assert "PAUSED (lunch \\x1b[31m break)" in head
    assert " running " in first and " running " not in second
    assert status.pause is None


def test_dashboard_cursor_keeps_its_line_across_refreshes(source: ManagedApiSource) -> None:
    make_run(source.results_root, "b")
    model = DashboardModel()
    model.set_runs(source.list_runs())
    model.press("down")
    model.press("down")
    assert model.focused_key() == ("b", LLM)
    make_run(source.results_root, "a")  # sorts before: the line moves down by three
    model.set_runs(source.list_runs())
    assert model.focused_key() == ("b", LLM)
    model.press("up")
    assert model.focused_key() == ("b", "scripted")


def test_dashboard_actions_need_the_right_line(source: ManagedApiSource) -> None:
    model = DashboardModel()
    assert model.press("r") is None and model.error  # empty list
    assert model.press("X") is None and "n creates one" in model.message
    assert model.press("n") is not None
    assert model.press("z") is None and not model.error
    make_run(source.results_root)
    model.set_runs(source.list_runs())
    assert model.press("r") is None and "target line" in model.message
    action = model.press("X")
    assert action is not None and (action.name, action.run, action.target) == (
        "delete_run",
        "demo",
        None,
    )
    model.press("down")
    action = model.press("r")
    assert action is not None and (action.name, action.target) == ("run_target", "scripted")
    assert set(context_keys("dashboard").values()) >= {
        "create",
        "delete_run",
        "export_queue",
        "summarize",
    }


def test_a_key_means_one_thing_on_the_dashboard_and_the_monitor() -> None:
    """``p`` pauses, ``s`` and ``S`` stop now, ``c`` clears the pause on both screens; the
    summaries (the dashboard's only) are on ``b``, a key the monitor leaves unbound."""
    first, second = (context_keys(ctx) for ctx in SAME_MEANING)
    clashes = {
        key: (first[key], second[key])
        for key in first.keys() & second.keys()
        if key != "enter" and first[key] != second[key]
    }
    assert clashes == {}
    assert keys_for("dashboard", "stop") == keys_for("monitor", "stop") == ["s", "S"]
    for key, action in (("p", "pause"), ("c", "clear_pause"), ("q", "back")):
        assert context_action("dashboard", key) == context_action("monitor", key) == action
    assert keys_for("dashboard", "summarize") == ["b"]
    assert context_action("monitor", "b") is None
    assert "s/S stop now" in MONITOR_HELP


def test_monitor_figures_evidence_errors_and_budget(source: ManagedApiSource) -> None:
    results = source.results_root
    make_run(results, budget=2.0)
    one = graded_folder(results, "sre-001", ["e1", "e2"], ["e1", "e2"])
    two = graded_folder(results, "sre-002", ["e1"], ["e1", "e2", "e3", "e4"])
    earlier = record("sre-003", "provider_error", error_kind="provider", error="429")
    retry = record("sre-003", "running").model_copy(update={"attempt": 2, "previous": [earlier]})
    checkpoint(
        results,
        "demo",
        LLM,
        record("sre-001", reward=0.9, passed=True, results_dir=str(one)),
        record("sre-002", reward=0.3, results_dir=str(two), error_kind="agent", error="crash"),
        retry,
    )
    BudgetLedger(source.state_dir / "budget").reserve(today(), "k", 0.5, 2.0)
    status = source.status("demo")
    evidence = {"sre-001": Evidence(2, 2), "sre-002": Evidence(1, 4)}
    model = MonitorModel("demo", LLM)
    model.update(MonitorData(status, evidence=evidence, console=("a\x1b]52;c;x\x07b",)))
    text = "\n".join(model.header())
    assert "progress  2/3 completed · score 0.600 · passed 1" in text
    assert "evidence  62% (full on 1/2 graded tasks)" in text
    assert "errors    provider 1 · agent 1 · harness 0" in text
    assert "$1.50 left today" in text and "reserved $0.50" in text
    lines = [t for _, t in model.task_lines()]
    assert lines[0].startswith("sre-001    completed") and "ev 2/2" in lines[0]
    assert "try 2" in lines[2]
    assert lines[1].endswith("agent: crash")
    assert model.console() == ["a\\x1b]52;c;x\\x07b"]


def test_monitor_state_follows_what_the_runner_says_it_runs(source: ManagedApiSource) -> None:
    """A task in flight, a runner between tasks, and one writing the summaries at the end (its
    target's tasks all recorded): only the first names a task, the last is no longer running."""
    make_run(source.results_root, tasks=("sre-001",))
    checkpoint(source.results_root, "demo", "scripted", record("sre-001", reward=1.0))
    snapshot = source.status("demo")
    model = MonitorModel("demo", "scripted")

    def state(target: str | None, task: str | None) -> str:
        runner = RunnerState(pid=7, started_at="x", target=target, task=task)
        live = snapshot.status.model_copy(update={"runner": runner})
        model.update(MonitorData(RunStatus(snapshot.run, snapshot.folder, live, {})))
        return model.header()[1]

    assert state("scripted", "sre-001") == "state     running (task sre-001, pid 7)"
    assert state("scripted", None) == "state     running (between tasks, pid 7)"
    assert state(None, None) == "state     done · runner pid 7 writing the summaries"


def test_monitor_task_line_never_prints_a_missing_error_kind(source: ManagedApiSource) -> None:
    """A record written before interrupted attempts had a kind shows its error alone."""
    results = source.results_root
    make_run(results)
    checkpoint(
        results,
        "demo",
        LLM,
        record("sre-001", "interrupted", reward=1.0, error="stopped"),
        record("sre-002", "interrupted", error_kind="stopped", error="stopped (not graded)"),
    )
    model = MonitorModel("demo", LLM)
    model.update(MonitorData(source.status("demo")))
    old, new = (t for _, t in model.task_lines())
    assert "None" not in old and old.endswith(" stopped")
    assert new.endswith("stopped: stopped (not graded)")


def test_monitor_keys_and_open_task(source: ManagedApiSource) -> None:
    results = source.results_root
    make_run(results)
    checkpoint(
        results,
        "demo",
        "scripted",
        record("sre-001", results_dir="/r/1"),
        record("sre-002", "running"),
    )
    model = MonitorModel("demo", "scripted")
    assert model.press("enter") is None and "no task" in model.message
    model.update(MonitorData(source.status("demo")))
    action = model.press("enter")
    assert action is not None and (action.name, action.ref) == ("open_task", "/r/1")
    model.press("down")
    assert model.press("enter") is None and "sre-002 has no run yet" in model.message
    assert [model.press(k).name for k in "pScq"] == ["pause", "stop", "clear_pause", "back"]  # type: ignore[union-attr]
    assert model.press("x") is None


def test_monitor_without_snapshot_says_why() -> None:
    model = MonitorModel("gone", "t")
    model.update(MonitorData(None, problem="cannot read managed run 'gone'"))
    assert model.header()[1] == "cannot read managed run 'gone'"
    assert model.task_lines() == [] and model.budget_line() == "no daily budget"


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"name": ""}, "needs a name"),
        ({"name": "bad name"}, "is not valid"),
        ({"baselines": [], "models": []}, "no target"),
        ({"budget": "lots"}, "daily budget 'lots' is not an amount"),
        ({"budget": "-1"}, "is not an amount"),
        ({"budget": "5"}, "needs a cost cap"),
        ({"cost_cap": "0"}, "more than 0"),
        ({"tasks": "sre-001, ../x"}, "task id '../x'"),
        ({"backend": "k8s"}, "unknown backend"),
        ({"models": ["nope"]}, "not a model slug"),
    ],
)
def test_create_form_fields_are_checked(fields: dict[str, object], says: str) -> None:
    base: dict[str, object] = {
        "name": "demo",
        "baselines": ["scripted"],
        "models": ["openai/gpt-4o"],
        "tasks": "all",
        "backend": "inline",
        "budget": "",
        "cost_cap": "",
    }
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        create_request(**{**base, **fields})  # type: ignore[arg-type]


def test_create_form_builds_a_request() -> None:
    request = create_request(
        name="demo",
        baselines=["random", "scripted"],
        models=["openai/gpt-4o", "openai/gpt-4o"],
        tasks="sre-002,sre-001 sre-002",
        backend="local",
        budget="$5",
        cost_cap="0.25",
    )
    assert [t.name for t in request.targets] == ["random", "scripted", LLM]
    assert request.tasks == ("sre-002", "sre-001")
    assert (request.daily_budget_usd, request.cost_cap_usd) == (5.0, 0.25)
    assert parse_tasks(" ALL ") == () and parse_usd("") is None
