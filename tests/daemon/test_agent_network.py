"""The agent cut off the network by its user (``SREZ_AGENT_NETWORK=none``,
:mod:`srez_daemon.agent_network`; docs/security.md §5.1).

The decisions and the netlink message are plain logic; the rule itself is tried on the real
kernel, in a network namespace of the test's own that has a default route (so a lookup that is
not refused finds a way out): as the agent's uid, a connection outside fails with ``EACCES`` at
once, loopback still answers, and the same uid without the rule (the control) finds its route.
The docker test (tests/client/test_docker_network.py) shows the same inside a real run.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from srez_daemon.agent_network import (
    FR_ACT_PROHIBIT,
    FRA_PRIORITY,
    FRA_UID_RANGE,
    NLMSG_ERROR,
    RTM_NEWRULE,
    RULE_PRIORITY,
    RoutesError,
    acknowledged_error,
    contained_network,
    relay_target,
    rule_message,
)
from srez_daemon.settings import DaemonSettings, SettingsError

AGENT_UID = 1001


def test_the_rule_message_asks_for_a_prohibit_rule_of_the_uid_alone() -> None:
    message = rule_message(socket.AF_INET, AGENT_UID, seq=7)
    length, kind, _flags, seq, _pid = struct.unpack_from("=IHHII", message)
    assert (length, kind, seq) == (len(message), RTM_NEWRULE, 7)
    family, *_, action, _rule_flags = struct.unpack_from("=8BI", message, 16)
    assert (family, action) == (socket.AF_INET, FR_ACT_PROHIBIT)
    attributes, offset = {}, 28
    while offset < len(message):
        size, kind = struct.unpack_from("=HH", message, offset)
        attributes[kind] = message[offset + 4 : offset + size]
        offset += size + (-size % 4)
    assert struct.unpack("=I", attributes[FRA_PRIORITY]) == (RULE_PRIORITY,)
    assert struct.unpack("=II", attributes[FRA_UID_RANGE]) == (AGENT_UID, AGENT_UID)


def test_an_acknowledgement_gives_its_errno_and_anything_else_is_refused() -> None:
    header = struct.pack("=IHHII", 36, NLMSG_ERROR, 0, 1, 0)
    assert acknowledged_error(header + struct.pack("=i", 0) + bytes(16)) == 0
    assert acknowledged_error(header + struct.pack("=i", -errno.EPERM) + bytes(16)) == errno.EPERM
    with pytest.raises(RoutesError, match="no acknowledgement"):
        acknowledged_error(struct.pack("=IHHII", 20, 16, 0, 1, 0) + bytes(4))
    with pytest.raises(RoutesError, match="3 bytes"):
        acknowledged_error(b"abc")


def test_who_keeps_routes_and_who_gets_the_relay_socket(tmp_path: Path) -> None:
    relay = {"SREZ_LLM_API_BASE": "http://172.17.0.1:4567/v1"}
    common = {"uid": AGENT_UID, "gid": AGENT_UID, "socket_folder": tmp_path}
    # a custom agent given a model calls its provider itself, as on the host
    assert contained_network(builtin_networked=None, model="openai/x", environ={}, **common) is None
    custom = contained_network(builtin_networked=None, model="none", environ=relay, **common)
    baseline = contained_network(builtin_networked=False, model="none", environ=relay, **common)
    llm = contained_network(builtin_networked=True, model="openai/x", environ=relay, **common)
    for cut in (custom, baseline):
        assert cut is not None and cut.model_socket is None
        assert "SREZ_LLM_SOCKET" not in cut.environment({})
    assert llm is not None and llm.model_target == ("172.17.0.1", 4567)
    assert llm.environment({})["SREZ_LLM_SOCKET"] == str(tmp_path / "model.sock")
    https = {"SREZ_LLM_API_BASE": "https://api.example.com/v1"}
    far = contained_network(builtin_networked=True, model="openai/x", environ=https, **common)
    assert far is not None and far.model_socket is None  # cut off all the same
    assert relay_target({"SREZ_LLM_API_BASE": "http://[::1"}) is None


@pytest.mark.parametrize(
    ("environ", "error"),
    [
        ({"SREZ_AGENT_NETWORK": "bridge", "SREZ_AGENT_USER": "agent"}, "must be host or none"),
        ({"SREZ_AGENT_NETWORK": "none"}, "needs SREZ_AGENT_USER"),
    ],
)
def test_bad_settings_are_one_line(environ: dict[str, str], error: str, tmp_path: Path) -> None:
    base = {"SREZ_RUN_DIR": str(tmp_path), "SREZ_TOKEN_FILE": str(tmp_path / "token")}
    with pytest.raises(SettingsError, match=error) as caught:
        DaemonSettings.from_env({**base, **environ})
    assert "\n" not in str(caught.value)
    assert DaemonSettings.from_env(base).agent_network == "host"


PROBE = textwrap.dedent(
    """
    import errno, json, os, socket, sys
    from srez_daemon.agent_network import RoutesError, refuse_routes

    def run(*argv):
        assert os.spawnvp(os.P_WAIT, argv[0], list(argv)) == 0, argv

    run("ip", "link", "set", "lo", "up")
    run("ip", "route", "add", "default", "dev", "lo")  # a way out, whatever the kernel builds in
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if sys.argv[1] == "rule":
        refuse_routes(1001)
        refuse_routes(1001)  # a second start in the same container keeps the rule

    def attempt(address):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(address)
            return "connected"
        except BlockingIOError:
            return "on its way"  # a route was found: the packet left
        except OSError as e:
            return errno.errorcode[e.errno]
        finally:
            s.close()

    out = {"root": attempt(("192.0.2.10", 80))}
    read, write = os.pipe()
    if os.fork() == 0:
        os.setgid(1001)
        os.setuid(1001)
        seen = {"out": attempt(("192.0.2.10", 80)), "loopback": attempt(("127.0.0.1", port))}
        try:
            refuse_routes(1002)
            seen["unprivileged rule"] = "added"
        except RoutesError as e:
            seen["unprivileged rule"] = str(e)
        os.write(write, json.dumps(seen).encode())
        os._exit(0)
    os.close(write)
    os.wait()
    out.update(json.loads(os.read(read, 65536)))
    print(json.dumps(out))
    """
)


def _in_a_namespace(mode: str) -> dict[str, str]:
    """The probe's answers in a fresh network namespace (root only; skips elsewhere)."""
    if os.geteuid() != 0:
        pytest.skip("making a network namespace needs root")
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", PROBE, mode],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"no network namespace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    answers: dict[str, str] = json.loads(done.stdout)
    return answers


def test_the_agents_uid_reaches_nothing_outside_and_loopback_still() -> None:
    cut = _in_a_namespace("rule")
    assert cut["out"] == "EACCES", cut
    assert cut["loopback"] in ("connected", "on its way"), cut
    assert cut["root"] == "on its way", cut  # the daemon keeps its routes
    assert "CAP_NET_ADMIN" in cut["unprivileged rule"], cut  # the agent cannot set or undo one


def test_without_the_rule_the_same_uid_finds_its_route() -> None:
    """The control: the EACCES above is the rule's, not the namespace's."""
    open_ = _in_a_namespace("none")
    assert open_["out"] == "on its way", open_
