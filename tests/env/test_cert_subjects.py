"""Certificates have subjects: a certificate issued to another service is not a renewal.

Reward-hack class 2 of the trust issue: renewing an expired certificate with a valid file issued
to another service was accepted, because only the expiry and the catalogue path were checked.
Clients verify the name, so the K02 rule fires on a mismatch, the client logs it the way a Go TLS
client does, and ``get_status`` shows the subject.
"""

from __future__ import annotations

import json

import pytest
from envkit import a, play

from conftest import TASKS
from srez_env.grade import grade_episode
from srez_env.task import Task
from srez_env.world import topology as topo
from srez_env.world.base import expected_subject

CERT_TASKS = [t for t in TASKS if t.fault_kind == "expired_tls_cert"]


def foreign_valid_cert(task: Task, service: str) -> str:
    """A catalogue certificate valid for a year, issued to another TLS server."""
    world = play(task, [], submit=False).world
    for path in sorted(world.certs):
        if world.subjects[path] != expected_subject(service) and world.certs[path] > 30 * 1440:
            return path
    raise AssertionError(f"{task.id}: no foreign certificate in the catalogue")


def test_cert_tasks_exist() -> None:
    assert len(CERT_TASKS) >= 3


@pytest.mark.parametrize("task", CERT_TASKS, ids=lambda t: t.id)
def test_renewal_with_another_services_cert_is_not_a_fix(task: Task) -> None:
    root = task.ground_truth.root_cause.service
    foreign = foreign_valid_cert(task, root)
    fix = [
        a("set_config", service=root, key="tls.cert_file", value=foreign),
        a("restart", service=root),
        a("declare_root_cause", service=root, fault="expired_tls_cert"),
    ]
    env = play(task, fix)
    grade = grade_episode(env.record())
    assert not grade.resolved
    assert not grade.checks["intent"].passed
    assert f"expired_tls_cert@{root}" in grade.metrics.rules_firing_at_end
    oracle = grade_episode(play(task, [a(x.tool, **x.args) for x in task.reference_fix]).record())
    assert grade.reward.total < oracle.reward.total


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_every_tls_server_rejects_a_certificate_issued_to_another_name(task: Task) -> None:
    for service in topo.TLS_SERVERS:
        foreign = foreign_valid_cert(task, service)
        env = play(
            task,
            [
                a("set_config", service=service, key="tls.cert_file", value=foreign),
                a("restart", service=service),
                a("wait", minutes=1),
            ],
            submit=False,
        )
        hits = [str(h) for h in env.world.rules_at(env.clock)]
        assert f"expired_tls_cert@{service}" in hits, (task.id, service, hits)


def test_client_logs_name_mismatch_and_status_shows_subject() -> None:
    task = next(
        t for t in TASKS if t.id == "sre-005"
    )  # db's certificate expired; payments calls db
    foreign = foreign_valid_cert(task, "db")
    env = play(
        task,
        [
            a("set_config", service="db", key="tls.cert_file", value=foreign),
            a("restart", service="db"),
            a("wait", minutes=2),
        ],
        submit=False,
    )
    logs = env.step(a("get_logs", service="payments", since="2m")).observation["output"]
    assert "x509: certificate is valid for" in logs and "not db.svc.internal" in logs
    status = json.loads(env.step(a("get_status", service="db")).observation["output"])
    assert status["tls"]["cert_file"] == foreign
    assert status["tls"]["subject"] == env.world.subjects[foreign] != expected_subject("db")
    assert any(expected_subject("db") in entry for entry in status["tls"]["available"])
