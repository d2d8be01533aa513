"""The static world: restricted-INI files, the key schema and the topology (§3.2, §6.11)."""

from __future__ import annotations

import re

import pytest

from srez_env.errors import ConfError
from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile, parse_value, render_value
from srez_env.world.schema import (
    BASE_FILES,
    KeyRejected,
    check_edit,
    editable_keys,
    is_inert,
    reload_mode,
    rule_for,
    weakens_security,
)


def test_base_files_parse_and_round_trip() -> None:
    for s in topo.SERVICES:
        conf = BASE_FILES[s]
        assert conf.text == topo.BASE_CONF[s]
        assert ConfFile.parse(conf.text).values == conf.values
    assert BASE_FILES["gateway"].get("upstream.payments.timeout_ms") == 2000
    assert BASE_FILES["db"].get("tls.enabled") is True
    assert BASE_FILES["payments"].get("deploy.version") == "2.4.0"


def test_edit_replaces_exactly_one_line_and_keeps_comments() -> None:
    before = BASE_FILES["payments"]
    after = before.with_value("db.pool_max", 2)
    changed = [
        (a, b)
        for a, b in zip(before.text.splitlines(), after.text.splitlines(), strict=True)
        if a != b
    ]
    assert changed == [("pool_max = 20", "pool_max = 2")]
    assert after.text.startswith("# payments.conf")
    assert after.get("db.pool_max") == 2 and before.get("db.pool_max") == 20


@pytest.mark.parametrize(
    ("raw", "value", "text"),
    [
        ("true", True, "true"),
        ("false", False, "false"),
        ("20", 20, "20"),
        ("-3", -3, "-3"),
        ("15.4", "15.4", "15.4"),
        ("/etc/certs/x.pem", "/etc/certs/x.pem", "/etc/certs/x.pem"),
    ],
)
def test_values_are_typed_and_rendered_canonically(raw: str, value: object, text: str) -> None:
    assert parse_value(raw) == value
    assert render_value(parse_value(raw)) == text


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("key = 1\n", "outside any [section]"),
        ("[a]\nnot a line\n", "cannot parse"),
        ("[a]\nx = 1\nx = 2\n", "assigned twice"),
    ],
)
def test_malformed_files_are_rejected_with_the_line(text: str, fragment: str) -> None:
    with pytest.raises(ConfError, match=re.escape(fragment)) as caught:
        ConfFile.parse(text, name="t.conf")
    assert str(caught.value).startswith("t.conf:")


def test_exact_schema_row_beats_glob_and_every_key_has_a_row() -> None:
    assert rule_for("upstream.auth.port").pattern == "upstream.*.port"
    assert rule_for("db.port").pattern == "db.port"
    for s in topo.SERVICES:
        for key in BASE_FILES[s].values:
            assert rule_for(key)  # no KeyError


@pytest.mark.parametrize(
    ("service", "key", "raw", "code"),
    [
        ("cache", "db.pool_max", "5", "UNKNOWN_KEY"),
        ("gateway", "upstream.auth.host", "x", "READ_ONLY_KEY"),
        ("db", "storage.disk_size_gb", "400", "READ_ONLY_KEY"),
        ("auth", "deploy.version", "3.0.1", "KEY_MANAGED_BY_TOOL"),
        ("payments", "db.pool_max", "501", "INVALID_VALUE"),
        ("payments", "db.pool_max", "many", "INVALID_VALUE"),
        ("auth", "resolver.nameserver", "10.0.0.300", "INVALID_VALUE"),
        ("db", "tls.cert_file", "/tmp/x.pem", "INVALID_VALUE"),
        ("gateway", "tls.min_version", "SSL3", "INVALID_VALUE"),
        ("payments", "flags.new_fraud_check", "yes", "INVALID_VALUE"),
    ],
)
def test_check_edit_rejects_with_code_and_hint(service: str, key: str, raw: str, code: str) -> None:
    with pytest.raises(KeyRejected) as caught:
        check_edit(service, key, raw, certs=topo.BASE_CERTS)
    assert caught.value.code == code and caught.value.hint


def test_check_edit_accepts_domain_values() -> None:
    certs = topo.BASE_CERTS
    assert check_edit("payments", "db.pool_max", " 27 ", certs=certs) == 27
    assert (
        check_edit("db", "tls.cert_file", "/etc/certs/db-2025.pem", certs=certs)
        == "/etc/certs/db-2025.pem"
    )
    assert check_edit("auth", "db.tls_verify", "false", certs=certs) is False


def test_reload_modes_and_inert_keys() -> None:
    assert reload_mode("tls.cert_file") == "restart" and reload_mode("db.pool_max") == "live"
    assert reload_mode("deploy.replicas") == "tool" and reload_mode("db.host") == "read-only"
    assert is_inert("db", "logging.slow_query_ms") and is_inert(
        "payments", "logging.retention_days"
    )
    assert not is_inert("db", "logging.retention_days")  # it fills the disk (K07)
    assert "deploy.version" not in editable_keys("payments") and "db.pool_max" in editable_keys(
        "payments"
    )


def test_security_weakening() -> None:
    assert weakens_security("db.tls_verify", True, False)
    assert not weakens_security("db.tls_verify", False, True)
    assert weakens_security("tls.min_version", "TLS1.2", "TLS1.0")
    assert not weakens_security("tls.min_version", "TLS1.2", "TLS1.3")
    assert not weakens_security("db.pool_max", 20, 2)


def test_neighbours_follow_the_dependency_edges() -> None:
    assert topo.neighbours("cache") == {"payments"}
    assert topo.neighbours("db") == {"auth", "payments"}
    assert topo.neighbours("gateway") == {"auth", "payments"}
