"""The task files and their schema (docs/environment.md §3.6, §3.11, §4, §5.2 test 1)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from conftest import typical
from srez_env.baselines import learners
from srez_env.errors import EnvError, TaskError
from srez_env.generator import footprints, matrix, sets
from srez_env.generator.pager import CLOSINGS, TITLES, Page, page
from srez_env.task import (
    FAULT_KINDS,
    SERVICES,
    Action,
    FaultKind,
    Incident,
    ServiceName,
    Task,
    derive_seed,
    task_digest,
)
from srez_env.tasks import (
    INDEX_FORMAT,
    INDEX_NAME,
    index_text,
    load_task,
    load_tasks,
    packaged_summaries,
    parse_task,
    read_index,
    task_mapping,
)

REPO = Path(__file__).resolve().parents[2]
GEN_TASKS = REPO / "env" / "tools" / "gen_tasks.py"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {t.id: t for t in load_tasks()}


@pytest.fixture(scope="module")
def rows(tasks: dict[str, Task]) -> dict[str, Task]:
    """The design table of §4: each row of the matrix in its canonical world. The canonical set
    holds these tasks, but in its hard fault slots, which draw their incidents from the space
    (§6.20) as every set's do."""
    drawn = {r.id: r for r in matrix.load().rows if r.tier == "H" and r.kind != "K00"}
    return {
        task_id: sets.realise(drawn[task_id], sets.CANONICAL_SEED) if task_id in drawn else task
        for task_id, task in tasks.items()
    }


def packaged_dict(task_id: str) -> dict[str, Any]:
    text = (resources.files("srez_env.tasks") / f"{task_id}.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


# --------------------------------------------------------------------------- the 40 files


def test_all_tasks_load_and_ids_are_sre_001_to_040(tasks: dict[str, Task]) -> None:
    assert list(tasks) == [f"sre-{n:03d}" for n in range(1, 41)]
    assert [t.id for t in load_tasks()] == sorted(tasks)


def test_seeds_match_derive_seed(tasks: dict[str, Task]) -> None:
    assert derive_seed("sre-007") == 3533472769
    assert tasks["sre-007"].seed == 3533472769
    for task in tasks.values():
        assert task.seed == derive_seed(task.id), task.id


def test_difficulty_tiers_are_12_14_14(tasks: dict[str, Task]) -> None:
    tiers = Counter(t.difficulty for t in tasks.values())
    assert tiers == {"easy": 12, "medium": 14, "hard": 14}


def test_every_fault_kind_appears_two_or_three_times(
    rows: dict[str, Task], tasks: dict[str, Task]
) -> None:
    kinds = Counter(t.fault_kind for t in rows.values())
    assert set(kinds) == set(FAULT_KINDS)
    assert kinds["none"] == 2
    for kind in FAULT_KINDS[:-1]:
        assert 2 <= kinds[kind] <= 3, kind
    # the easy and medium slots keep their rows, so every kind stays in the canonical set
    assert {t.fault_kind for t in tasks.values()} == set(FAULT_KINDS)


def test_root_service_totals(rows: dict[str, Task]) -> None:
    roots = Counter(t.ground_truth.root_cause.service for t in rows.values())
    assert roots == {"gateway": 6, "auth": 7, "payments": 13, "db": 7, "cache": 5, "none": 2}


def test_the_canonical_hard_tier_is_drawn_from_the_space(
    rows: dict[str, Task], tasks: dict[str, Task]
) -> None:
    """Like any set's, the canonical set's hard fault slots hold incidents of the space (§6.20),
    each showing a T0 footprint that other answers share, so its id, title and place in the set
    name no answer: most are not their slot's row."""
    hard = [t for t in tasks.values() if t.difficulty == "hard" and t.fault_kind != "none"]
    assert len(hard) == 13
    table = footprints.table()
    code = {name: kind for kind, name in matrix.load().kind_name.items()}
    for task in hard:
        shown = footprints.footprint(task)
        root = task.ground_truth.root_cause.service
        answer = footprints.answer_key(root, code[task.fault_kind])
        assert answer in table.answers[shown] and len(table.answers[shown]) >= 2, task.id
        assert task.noise.fault_lines == "generic", task.id
    moved = [t.id for t in hard if learners.answer_of(t) != learners.answer_of(rows[t.id])]
    assert len(moved) >= 10, moved


def test_difficulty_profiles(tasks: dict[str, Task], rows: dict[str, Task]) -> None:
    # one step budget for every tier: a budget that grew with the tier would tell the agent it
    profile = {"easy": (40, "all", 3), "medium": (40, "edge", 5), "hard": (40, "edge", 8)}
    for task in tasks.values():
        steps, scope, benign = profile[task.difficulty]
        noise = task.noise
        assert (task.max_steps, noise.alert_scope, noise.benign_lines_per_min) == (
            steps,
            scope,
            benign,
        ), task.id
        if noise.log_dedup:
            assert task.difficulty == "hard", task.id
    for task in rows.values():  # the design's rows; a drawn incident takes its own oracle's
        if task.fault_kind != "none":
            assert 6 <= task.expert_steps <= 8, task.id
        else:
            assert task.expert_steps == 5, task.id


def test_gen_tasks_check_passes() -> None:
    result = subprocess.run(
        [sys.executable, str(GEN_TASKS), "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "40 task files and their index up to date"


def test_gen_tasks_check_reports_a_changed_file(tmp_path: Path) -> None:
    folder = resources.files("srez_env.tasks")
    for name in [f"sre-{n:03d}.yaml" for n in range(1, 41)] + [INDEX_NAME]:
        (tmp_path / name).write_text((folder / name).read_text(encoding="utf-8"), encoding="utf-8")
    edited = tmp_path / "sre-012.yaml"
    edited.write_text(edited.read_text(encoding="utf-8") + "# hand edit\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(GEN_TASKS), "--check", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "sre-012.yaml: differs from the matrix; run python env/tools/gen_tasks.py"
    ]


def test_the_index_holds_each_packaged_file_as_its_yaml_reads() -> None:
    folder = resources.files("srez_env.tasks")
    index = read_index(folder)
    names = sorted(e.name for e in folder.iterdir() if e.name.endswith(".yaml"))
    assert sorted(index) == names
    for name in names:
        text = (folder / name).read_text(encoding="utf-8")
        assert index[name]["data"] == yaml.safe_load(text), name
        assert task_mapping(folder, name, index) is index[name]["data"]  # served from the index


def _one_task_folder(tmp_path: Path, index: str | None) -> tuple[Path, str]:
    name = "sre-007.yaml"
    text = (resources.files("srez_env.tasks") / name).read_text(encoding="utf-8")
    (tmp_path / name).write_text(text, encoding="utf-8")
    if index is not None:
        (tmp_path / INDEX_NAME).write_text(index, encoding="utf-8")
    return tmp_path, name


def test_a_file_whose_bytes_match_its_digest_is_read_from_the_index(tmp_path: Path) -> None:
    folder, name = _one_task_folder(tmp_path, None)
    planted = json.loads(index_text({name: (folder / name).read_text(encoding="utf-8")}))
    planted["tasks"][name]["data"]["title"] = "read from the index"
    (folder / INDEX_NAME).write_text(json.dumps(planted), encoding="utf-8")
    assert task_mapping(folder, name, read_index(folder))["title"] == "read from the index"


def test_an_edited_file_is_read_from_its_yaml_not_from_a_stale_index(tmp_path: Path) -> None:
    folder, name = _one_task_folder(tmp_path, None)
    (folder / INDEX_NAME).write_text(
        index_text({name: (folder / name).read_text(encoding="utf-8")}), encoding="utf-8"
    )
    edited = (
        (folder / name).read_text(encoding="utf-8").replace("title: ", "title: Edited by hand, ", 1)
    )
    (folder / name).write_text(edited, encoding="utf-8")
    data = task_mapping(folder, name, read_index(folder))
    assert data["title"].startswith("Edited by hand, ")


@pytest.mark.parametrize(
    "index",
    [None, "not json", '{"format": "another/9", "tasks": {}}', f'{{"format": "{INDEX_FORMAT}"}}'],
)
def test_a_missing_or_foreign_index_falls_back_to_the_yaml(
    tmp_path: Path, index: str | None
) -> None:
    folder, name = _one_task_folder(tmp_path, index)
    expected = yaml.safe_load((folder / name).read_text(encoding="utf-8"))
    assert task_mapping(folder, name, read_index(folder)) == expected


def test_summaries_match_the_validated_tasks(tasks: dict[str, Task]) -> None:
    summaries = packaged_summaries()
    assert [s.id for s in summaries] == sorted(tasks)
    for summary in summaries:
        task = tasks[summary.id]
        assert (summary.title, summary.difficulty, summary.brief) == (
            task.title,
            task.difficulty,
            task.incident.brief,
        )


def test_briefs_read_like_pages_and_hide_the_cause(tasks: dict[str, Task]) -> None:
    # Words that would give the fault away; the symptom vocabulary (503, 401, slow) is allowed.
    giveaways = {
        "wrong_upstream_port": ("port", "refused"),
        "expired_tls_cert": ("cert", "tls", "expired"),
        "conn_pool_exhaustion": ("pool",),
        "db_max_connections_low": ("max_connections", "too many"),
        "memory_leak": ("memory", "leak", "oom"),
        "bad_deploy": ("deploy", "release", "version"),
        "disk_full": ("disk", "space"),
        "dns_misconfig": ("dns", "nameserver", "resolver"),
        "cache_eviction_stampede": ("cache", "evict", "hit ratio"),
        "rate_limit_misconfig": ("rate limit", "ratelimit", "429"),
        "feature_flag_regression": ("flag",),
        "dependency_timeout": ("timeout", "deadline"),
        "replicas_zero": ("replica", "scale"),
        "cpu_throttling": ("throttl", "cpu limit"),
    }
    named = {
        "auth": ("auth",),
        "payments": ("payments",),
        "cache": ("cache",),
        "db": ("db", "database"),
    }
    for task in tasks.values():
        brief = task.incident.brief
        # the page is written from the task's own edge history, never from its row: recomputing
        # it gives the file's words, and every word comes from the pager's pools
        assert page(task) == Page(task.title, brief), task.id
        assert any(task.title in titles for titles in TITLES.values()), task.id
        assert brief.endswith(CLOSINGS), task.id
        if task.fault_kind != "none":
            assert re.search(r"since ~\d\d:\d\dZ", brief), task.id
        text = f"{task.title} {brief}".lower()
        for kind, words in giveaways.items():  # no tier is spared: no kind is ever named
            assert kind not in text and kind.replace("_", " ") not in text, task.id
            for word in words:  # at the start of a word: "port" in "report" gives nothing away
                assert not re.search(rf"\b{re.escape(word)}", text), (task.id, word)
        for words in named.values():  # only the edge, where the SLO is measured, is named
            for word in words:
                assert not re.search(rf"\b{word}\b", text), (task.id, word)


def test_fault_event_follows_the_difficulty_profile(rows: dict[str, Task]) -> None:
    for task in rows.values():
        event = task.noise.fault_event
        if task.fault_kind in ("none", "expired_tls_cert"):
            assert event == "hidden", task.id  # no fault event exists (§6.9)
        elif task.id == "sre-036":
            assert event == "camouflaged"
        elif task.difficulty == "easy" or task.fault_kind in ("memory_leak", "bad_deploy"):
            assert event == "visible", task.id
        else:
            assert event == "hidden", task.id


def test_decoy_deploys_have_their_version_at_the_same_minute(tasks: dict[str, Task]) -> None:
    for task in tasks.values():
        listed = {(v.service, v.version, v.minutes_before) for v in task.injection.versions}
        for ev in task.noise.decoy_events:
            if ev.kind == "deploy":
                assert (ev.service, ev.value, ev.minutes_before) in listed, task.id
        for spec in task.injection.versions:
            assert isinstance(spec.props.get("changelog"), str), (task.id, spec.version)


def test_config_witnesses_are_whole_lines_and_dedup_has_oracle_args(
    tasks: dict[str, Task],
) -> None:
    for task in tasks.values():
        for item in task.ground_truth.required_evidence:
            if item.tool == "get_config":
                assert item.witness is not None
                assert re.fullmatch(r"[a-z_]+ = \S+", item.witness), (task.id, item.id)
            if task.noise.log_dedup and item.tool == "get_logs":
                assert item.oracle_args.get("since") == "2h", (task.id, item.id)
                assert str(item.oracle_args["grep"]) in (item.witness or ""), (task.id, item.id)


def test_k02_tasks_expire_the_old_cert_at_the_onset(tasks: dict[str, Task]) -> None:
    for task in tasks.values():
        if task.fault_kind != "expired_tls_cert":
            continue
        service = task.ground_truth.root_cause.service
        (edit,) = task.injection.config
        assert edit.minutes_before == 5760
        (cert,) = task.injection.certs
        assert cert.path == edit.value and cert.path.startswith(f"/etc/certs/{service}")
        onset = task.incident.start.timestamp() - 60 * task.incident.onset_min_before
        assert cert.not_after.timestamp() == onset


# --------------------------------------------------------------------------- the §4 tasks


def test_sre_007_matches_section_4() -> None:
    t = typical("sre-007")  # §4 describes the task in the typical world
    assert (t.title, t.difficulty, t.max_steps) == (
        "Checkout failures after a payments config push",
        "easy",
        40,
    )
    assert t.incident.start == datetime(2025, 3, 14, 10, 0, tzinfo=UTC)
    assert t.incident.onset_min_before == 12
    assert "~09:48Z" in t.incident.brief
    assert [(c.service, c.key, c.value) for c in t.injection.config] == [
        ("payments", "db.pool_max", "2")
    ]
    ev = t.ground_truth.required_evidence
    assert [(e.id, e.tool, e.match, e.witness) for e in ev] == [
        ("E1", "get_logs", {"service": "payments"}, "timeout acquiring db connection"),
        ("E2", "get_metrics", {"service": "payments", "metric": "db_pool_in_use"}, None),
        ("E3", "get_config", {"service": "payments"}, "pool_max = 2"),
    ]
    assert t.ground_truth.allowed_changes == ["payments:db.pool_max"]
    assert t.ground_truth.allowed_restarts == ["payments"]
    assert [a.model_dump() for a in t.reference_fix] == [
        {
            "tool": "set_config",
            "args": {"service": "payments", "key": "db.pool_max", "value": "20"},
        }
    ]
    assert (t.calibration.heuristic_expected, t.calibration.loudest_expected) == (True, "gateway")
    assert t.expert_steps == 6


def test_sre_025_matches_section_4(rows: dict[str, Task]) -> None:
    t = rows["sre-025"]
    assert (t.seed, t.difficulty, t.noise.alert_scope, t.noise.fault_event) == (
        1883978227,
        "hard",
        "edge",
        "hidden",
    )
    # the hard tier writes no signature line (§6.8), so no evidence is a log read
    assert t.noise.fault_lines == "generic"
    ev = t.ground_truth.required_evidence
    assert [e.id for e in ev] == ["E1", "E2", "E3"]
    assert (ev[0].tool, ev[0].match, ev[0].witness) == (
        "get_metrics",
        {"service": "db", "metric": "qps"},
        None,
    )
    assert ev[1].match == {"service": "cache", "metric": "hit_ratio"}
    # the injected size is drawn per world (a shortfall of the working set), the witness quotes it
    (injected,) = t.injection.config
    assert injected.key == "memory.maxmemory_mb" and int(injected.value) < 350 * 0.7
    assert (ev[2].tool, ev[2].witness) == ("get_config", f"maxmemory_mb = {injected.value}")
    assert t.ground_truth.propagation == ["cache", "payments", "db", "auth", "gateway"]
    assert [(e.minutes_before, e.kind) for e in t.noise.decoy_events] == [
        (40, "config_change"),
        (18, "deploy"),
    ]
    assert t.ground_truth.allowed_restarts == []
    world_size = t.world.config.get("cache", {}).get("memory.maxmemory_mb", "512")
    assert t.reference_fix[0].args == {
        "service": "cache",
        "key": "memory.maxmemory_mb",
        "value": world_size,  # the world's own base size, not the typical world's
    }
    assert (t.calibration.heuristic_expected, t.calibration.loudest_expected) == (False, "db")


def test_sre_005_matches_section_4(tasks: dict[str, Task]) -> None:
    t = tasks["sre-005"]
    assert t.seed == 3212971246
    (edit,) = t.injection.config
    assert (edit.service, edit.key, edit.minutes_before) == ("db", "tls.cert_file", 5760)
    # the certificate files are named by the world's pattern (db-2024.pem, db_2024.pem, ...)
    expired = edit.value.rsplit("/", 1)[1]
    assert expired.startswith("db") and expired.endswith("2024.pem")
    (cert,) = t.injection.certs
    assert cert.not_after == datetime(2025, 3, 14, 9, 42, tzinfo=UTC)
    assert [e.kind for e in t.injection.events] == ["cert_renewed"]
    assert [(e.minutes_before, e.service, e.kind) for e in t.noise.decoy_events] == [
        (35, "payments", "restart")
    ]
    witnesses = [e.witness for e in t.ground_truth.required_evidence]
    assert witnesses == [
        "certificate has expired",
        expired,
        f"cert_file = /etc/certs/{expired}",
    ]
    assert [a.tool for a in t.reference_fix] == ["set_config", "restart"]
    assert t.ground_truth.allowed_restarts == ["db"]
    assert t.expert_steps == 7


def test_sre_014_matches_section_4() -> None:
    t = typical("sre-014")
    assert t.seed == 3507908770
    ev = {e.id: e for e in t.ground_truth.required_evidence}
    assert "get_logs" not in {e.tool for e in ev.values()}  # OOMKilled is not written (§6.8)
    assert (ev["E3"].tool, ev["E3"].match, ev["E3"].witness) == (
        "get_events",
        {},
        "deploy payments 2.4.0 -> 2.4.1",
    )
    leaky = t.injection.versions[0]
    assert (leaky.version, leaky.minutes_before, leaky.props["leak_mb_per_min"]) == (
        "2.4.1",
        45,
        150.0,
    )
    (effect,) = t.noise.decoy_effects
    assert (effect.service, effect.effect, effect.value, effect.from_min, effect.to_min) == (
        "cache",
        "extra_rps",
        960.0,
        -29,
        600,
    )
    assert [a.model_dump() for a in t.reference_fix] == [
        {"tool": "rollback", "args": {"service": "payments", "version": "2.4.0"}}
    ]
    assert (t.calibration.heuristic_expected, t.calibration.loudest_expected) == (False, "cache")


# --------------------------------------------------------------------------- validators

Mutation = Callable[[dict[str, Any]], None]


def _bad_seed(d: dict[str, Any]) -> None:
    d["seed"] += 1


def _fault_mismatch(d: dict[str, Any]) -> None:
    d["ground_truth"]["root_cause"]["fault"] = "disk_full"


def _read_only_fix(d: dict[str, Any]) -> None:
    d["reference_fix"][0] = {"tool": "get_config", "args": {"service": "db"}}


def _fix_key_not_allowed(d: dict[str, Any]) -> None:
    d["reference_fix"][0]["args"]["key"] = "logging.level"


def _restart_not_allowed(d: dict[str, Any]) -> None:
    d["ground_truth"]["allowed_restarts"] = []


def _control_with_fix(d: dict[str, Any]) -> None:
    d["fault_kind"] = "none"
    d["ground_truth"]["root_cause"] = {"service": "none", "fault": "none"}
    d["ground_truth"]["propagation"] = []


def _duplicate_evidence_id(d: dict[str, Any]) -> None:
    d["ground_truth"]["required_evidence"][1]["id"] = "E1"


def _oracle_args_overlap_match(d: dict[str, Any]) -> None:
    d["ground_truth"]["required_evidence"][0]["oracle_args"] = {"service": "auth"}


def _oracle_args_not_a_tool_arg(d: dict[str, Any]) -> None:
    d["ground_truth"]["required_evidence"][2]["oracle_args"] = {"grep": "cert"}


def _unknown_decoy_version(d: dict[str, Any]) -> None:
    text = "deploy auth 3.0.2 -> 3.9.9 (changelog: x)"
    event = {"minutes_before": 20, "service": "auth", "kind": "deploy", "text": text}
    d["noise"]["decoy_events"].append({**event, "value": "3.9.9"})


def _non_inert_decoy_change(d: dict[str, Any]) -> None:
    text = "config change db: server.max_connections (by dba-oncall)"
    event = {"minutes_before": 20, "service": "db", "kind": "config_change", "text": text}
    d["noise"]["decoy_events"].append({**event, "key": "server.max_connections", "value": "90"})


def _dedup_with_short_onset(d: dict[str, Any]) -> None:
    d["noise"]["log_dedup"] = True
    d["incident"]["onset_min_before"] = 10


def _unknown_field(d: dict[str, Any]) -> None:
    d["noise"]["shuffle_logs"] = True


def _bad_allowed_change(d: dict[str, Any]) -> None:
    d["ground_truth"]["allowed_changes"] = ["db-tls.cert_file"]


def _bad_alert_also(d: dict[str, Any]) -> None:
    d["noise"]["alert_also"] = ["CertExpiringSoon gateway"]


def _naive_start(d: dict[str, Any]) -> None:
    d["incident"]["start"] = "2025-03-14T10:00:00"


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (_bad_seed, "seed:", "derive_seed('sre-005') = 3212971246"),
        (_fault_mismatch, "ground_truth.root_cause.fault:", "differs from fault_kind"),
        (_read_only_fix, "reference_fix[0].tool:", "not a mutating tool"),
        (_fix_key_not_allowed, "reference_fix[0]:", "not in ground_truth.allowed_changes"),
        (_restart_not_allowed, "reference_fix[1]:", "not in ground_truth.allowed_restarts"),
        (_control_with_fix, "reference_fix:", "must be empty for a control task"),
        (_duplicate_evidence_id, "ground_truth.required_evidence:", "'E1' is used twice"),
        (
            _oracle_args_overlap_match,
            "ground_truth.required_evidence[0].oracle_args:",
            "must be disjoint",
        ),
        (
            _oracle_args_not_a_tool_arg,
            "ground_truth.required_evidence[2].oracle_args: grep",
            "not an argument of get_config",
        ),
        (_unknown_decoy_version, "noise.decoy_events[1].value:", "'3.9.9' is not in the auth"),
        (_non_inert_decoy_change, "noise.decoy_events[1].key:", "not an inert key of db"),
        (_dedup_with_short_onset, "noise.log_dedup:", "got 10"),
        (_unknown_field, "noise.shuffle_logs:", "Extra inputs are not permitted"),
        (_bad_allowed_change, "ground_truth.allowed_changes:", "must look like 'service:key'"),
        (_bad_alert_also, "noise.alert_also:", "must look like 'AlertName:service'"),
        (_naive_start, "incident.start:", "timezone"),
    ],
    ids=lambda v: v.__name__.strip("_") if callable(v) else None,
)
def test_validator_rejects_a_bad_task(mutate: Mutation, field: str, reason: str) -> None:
    good = packaged_dict("sre-005")
    parse_task(yaml.safe_dump(good), "sre-005.yaml")  # the base is valid
    data = copy.deepcopy(good)
    mutate(data)
    with pytest.raises(TaskError) as info:
        parse_task(yaml.safe_dump(data), "sre-005.yaml")
    message = str(info.value)
    assert message.startswith(f"sre-005.yaml: {field}"), message
    assert reason in message
    assert "\n" not in message


def test_action_args_keep_ints_and_strings_apart() -> None:
    scale = Action.model_validate({"tool": "scale", "args": {"service": "auth", "replicas": 3}})
    port = Action.model_validate(
        {"tool": "set_config", "args": {"service": "db", "key": "db.port", "value": "5432"}}
    )
    assert scale.args["replicas"] == 3
    assert isinstance(scale.args["replicas"], int)
    assert port.args["value"] == "5432"
    assert isinstance(port.args["value"], str)
    with pytest.raises(ValueError, match="args"):
        Action.model_validate({"tool": "scale", "args": {"service": "auth", "replicas": True}})


def test_scale_fix_with_a_string_count_is_rejected() -> None:
    data = packaged_dict("sre-035")
    data["reference_fix"][0]["args"]["replicas"] = "3"
    with pytest.raises(TaskError, match=r"reference_fix\[0\]\.args\.replicas: must be an integer"):
        parse_task(yaml.safe_dump(data), "sre-035.yaml")


def test_incident_start_is_normalised_to_utc() -> None:
    incident = Incident.model_validate(
        {"start": "2025-03-14T11:00:00+01:00", "onset_min_before": 5, "brief": "x"}
    )
    assert incident.start == datetime(2025, 3, 14, 10, 0, tzinfo=UTC)
    assert incident.start.utcoffset() is not None
    assert incident.start.tzinfo == UTC


def test_models_are_frozen_and_constants_match_the_literals(tasks: dict[str, Task]) -> None:
    with pytest.raises(ValueError, match="frozen"):
        tasks["sre-001"].title = "x"  # type: ignore[misc]
    assert get_args(ServiceName) == SERVICES
    assert get_args(FaultKind) == FAULT_KINDS


# --------------------------------------------------------------------------- loading


def test_broken_file_names_file_and_field(tmp_path: Path) -> None:
    data = packaged_dict("sre-007")
    data["ground_truth"]["allowed_changes"] = ["payments-db.pool_max"]
    path = tmp_path / "sre-007.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(TaskError) as info:
        load_task(path)
    assert str(info.value).startswith(
        "sre-007.yaml: ground_truth.allowed_changes: 'payments-db.pool_max' must look like "
        "'service:key'"
    )
    assert isinstance(info.value, EnvError)
    assert isinstance(info.value, ValueError)


def test_unparsable_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("id: sre-001\ntitle: [unclosed\n", encoding="utf-8")
    with pytest.raises(TaskError, match=r"^broken\.yaml: not valid YAML at line \d+"):
        load_task(path)


def test_non_mapping_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(TaskError, match=r"^list\.yaml: expected a mapping"):
        load_task(path)
    with pytest.raises(TaskError, match=r"^absent\.yaml: cannot read"):
        load_task(tmp_path / "absent.yaml")


def test_file_name_must_match_the_id(tmp_path: Path) -> None:
    path = tmp_path / "sre-006.yaml"
    path.write_text(yaml.safe_dump(packaged_dict("sre-005")), encoding="utf-8")
    with pytest.raises(TaskError, match=r"^sre-006\.yaml: id: 'sre-005' does not match"):
        load_task(path)
    good = tmp_path / "sre-005.yaml"
    good.write_text(yaml.safe_dump(packaged_dict("sre-005")), encoding="utf-8")
    assert load_task(good) == load_tasks(["sre-005"])[0]


def test_unknown_task_id() -> None:
    with pytest.raises(TaskError) as info:
        load_tasks(["sre-001", "sre-999"])
    assert str(info.value) == "unknown task id 'sre-999' (known: sre-001 … sre-040)"


def test_load_tasks_by_id_keeps_the_requested_order() -> None:
    picked = load_tasks(["sre-025", "sre-007"])
    assert [t.id for t in picked] == ["sre-025", "sre-007"]
    assert picked[1] is load_tasks()[6]  # read once, then served from the cache


def test_task_digest_is_stable_and_content_based(tasks: dict[str, Task]) -> None:
    t = tasks["sre-007"]
    again = parse_task(yaml.safe_dump(packaged_dict("sre-007")), "again.yaml")
    assert task_digest(t) == task_digest(again)
    assert re.fullmatch(r"[0-9a-f]{64}", task_digest(t))
    assert len({task_digest(x) for x in tasks.values()}) == 40
