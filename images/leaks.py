"""The leak check (docs/security.md A1, §4.2 test 10): task secrets searched for in the image as the
agent user sees it.

Markers are computed from the task files on the host; a walk of the image's whole filesystem, run
as uid 1001, tries to read every file and every member of every archive, and any readable hit,
or a task file the agent user can read, fails the build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from inputs import AGENT_UID, GENERATOR_DIR, ROOT, TASKS_DIR, BuildError, source_files

# --- task secrets -----------------------------------------------------------------------------

GENERIC_MARKERS: Final = ("\nground_truth:\n", "\nreference_fix:\n", "\ninjection:\n")
MIN_MARKER: Final = 12  # shorter strings match by chance


def _top_level_blocks(text: str) -> dict[str, str]:
    """The task file's top-level YAML entries as text (``key:`` at column 0 to the next one)."""
    blocks: dict[str, str] = {}
    key = ""
    for line in text.splitlines(keepends=True):
        match = re.match(r"([a-z_]+):", line)
        if match:
            key = match.group(1)
            blocks[key] = ""
        if key:
            blocks[key] += line
    return blocks


def _yaml_scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1].replace("''", "'") if raw[0] == "'" else raw[1:-1]
    return raw


def _fix_actions(block: str) -> list[dict[str, Any]]:
    """The reference fix's actions (``- tool: X`` / ``args:`` / ``key: value``), as parsed data;
    enough for the generator's regular layout, without a YAML library."""
    actions: list[dict[str, Any]] = []
    for line in block.splitlines()[1:]:
        if m := re.match(r"- tool: (.+)$", line):
            actions.append({"tool": _yaml_scalar(m.group(1)), "args": {}})
        elif (m := re.match(r"    ([A-Za-z_]+): (.+)$", line)) and actions:
            actions[-1]["args"][m.group(1)] = _yaml_scalar(m.group(2))
    return actions


def task_markers(text: str) -> set[str]:
    """Strings that only a copy of this task's secrets would contain: its ground truth,
    injection and reference fix blocks verbatim, each evidence's explanation with its key (YAML
    and JSON), the fix's arguments as JSON and as a Python literal, and the file's sha256."""
    blocks = _top_level_blocks(text)
    out = {hashlib.sha256(text.encode()).hexdigest()}
    for key in ("ground_truth", "injection", "reference_fix"):
        block = blocks.get(key, "")
        if block.count("\n") > 1:  # `reference_fix: []` alone says nothing
            out.add(block.rstrip("\n"))
    for line in blocks.get("ground_truth", "").splitlines():
        # An explanation alone is short English ("the flag is on" is in the stdlib's shutil.py):
        # it marks a copy only with its key, as YAML and as JSON.
        if m := re.match(r"\s+(why: .+)$", line):
            out.add(m.group(1))
            out.add(json.dumps({"why": _yaml_scalar(m.group(1)[5:])})[1:-1])
    for action in _fix_actions(blocks.get("reference_fix", "")):
        args = action["args"]
        if len(args) < 2:  # {"service": "cache"} alone names a restart, not this task's fix
            continue
        out |= {json.dumps(args), json.dumps(args, separators=(",", ":")), repr(args)}
    return out


def root_only(path: Path) -> bool:
    """Whether ``path`` (absolute, in the sources) is secret data the image keeps root-only: the
    task files and the generator's data (the Dockerfile sets their modes)."""
    return path.suffix == ".yaml" and path.parent in (TASKS_DIR, GENERATOR_DIR)


def secret_markers(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The markers to search the image for, and the task file names.

    Candidates found in any public file of the packages (everything but the task files and the
    generator's data, both root-only in the image) are dropped: the simulator's own source
    legitimately says ``connection refused``.
    """
    names = sorted(p.name for p in TASKS_DIR.glob("*.yaml"))
    if not names:
        msg = f"no task files in {TASKS_DIR}"
        raise BuildError(msg)
    candidates = set(GENERIC_MARKERS)
    for name in names:
        candidates |= task_markers((TASKS_DIR / name).read_text(encoding="utf-8"))
    public: list[str] = []
    for rel in source_files(root):
        path = root / rel
        # only what the image ships: env/tools/gen_tasks.py (never installed) is the very
        # source of the secrets, and must not veto a marker
        if rel.parts[1:2] not in (("srez_env",), ("srez_daemon",), ("srez_client",)):
            continue
        if root_only(path):
            continue
        with contextlib.suppress(UnicodeDecodeError):
            public.append(path.read_text(encoding="utf-8"))
    markers = sorted(
        m for m in candidates if len(m) >= MIN_MARKER and not any(m in text for text in public)
    )
    return markers, names


# The walk, run inside the image as the agent user. It reads the markers from stdin (so they are
# in no argv or environment of the check container) and prints one JSON report.
WALKER: Final = r"""
import bz2, gzip, importlib.util, io, json, lzma, os, stat, sys, time, zipfile
import re
req = json.load(sys.stdin)
markers = [m.encode() for m in req["markers"]]
overlap = max(map(len, markers)) - 1

def prefilter(words, width=64):
    # One regex for all markers, shaped as a trie of their first `width` bytes: a single pass
    # per chunk instead of one substring search per marker (3-4x faster on an image's files).
    trie = {}
    for w in words:
        node = trie
        for c in w[:width]:
            node = node.setdefault(c, {})
        node[None] = {}
    def build(node):
        out = b""
        while None not in node and len(node) == 1:
            (c, node), = node.items()
            out += re.escape(bytes([c]))
        if None in node:  # a marker's prefix ends here: enough to look closer
            return out
        return out + b"(?:" + b"|".join(re.escape(bytes([c])) + build(n) for c, n in sorted(node.items())) + b")"
    return re.compile(build(trie))

candidates = prefilter(markers)
CHUNK, MEMBER_CAP, SKIP = 1 << 20, 256 << 20, ("/proc", "/sys", "/dev")
started = time.monotonic()
rep = {"files": 0, "bytes": 0, "archives": 0, "unreadable": 0, "unlistable": [], "hits": {}}

def scan_stream(read, where):
    found, tail, total = set(), b"", 0
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        buf = tail + chunk
        if candidates.search(buf):
            found.update(i for i, m in enumerate(markers) if m in buf)
        tail = buf[-overlap:] if overlap else b""
        if total > MEMBER_CAP:
            break
    if found:
        rep["hits"].setdefault(where, set()).update(found)
    return total

def scan_archive(path, head):
    try:
        if head.startswith(b"PK\x03\x04"):
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        with zf.open(info) as member:
                            scan_stream(member.read, path + "!" + info.filename)
        elif head.startswith(b"\x1f\x8b"):
            with gzip.open(path) as f:
                scan_stream(f.read, path + "!gunzip")
        elif head.startswith(b"\xfd7zXZ\x00"):
            with lzma.open(path) as f:
                scan_stream(f.read, path + "!unxz")
        elif head.startswith(b"BZh"):
            with bz2.open(path) as f:
                scan_stream(f.read, path + "!bunzip2")
        else:
            return
        rep["archives"] += 1
    except Exception:
        pass  # not really an archive, or a damaged one: its raw bytes were scanned

def scan_file(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except PermissionError:
        rep["unreadable"] += 1
        return
    except OSError:
        return
    with os.fdopen(fd, "rb") as f:
        head = f.read(8)
        f.seek(0)
        rep["bytes"] += scan_stream(f.read, path)
    rep["files"] += 1
    scan_archive(path, head)

def walk(top):
    try:
        entries = list(os.scandir(top))
    except PermissionError:
        rep["unlistable"].append(top)
        return
    except OSError:
        return
    for e in entries:
        if e.path in SKIP:
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            walk(e.path)
        elif stat.S_ISREG(st.st_mode):
            scan_file(e.path)

walk("/")
# The task folder is not listable by this user: probe each task file by name as well, so the check
# cannot pass merely because it never saw them.
spec = importlib.util.find_spec(req["package"])
probe = {"folder": None, "missing": [], "readable": [], "unreadable": 0}
if spec is not None and spec.submodule_search_locations:
    folder = os.path.join(list(spec.submodule_search_locations)[0], "tasks")
    probe["folder"] = folder
    for name in req["task_files"]:
        path = os.path.join(folder, name)
        try:
            os.stat(path)
        except PermissionError:
            probe["unreadable"] += 1
            continue
        except OSError:
            probe["missing"].append(name)
            continue
        try:
            with open(path, "rb") as f:
                f.read(1)
            probe["readable"].append(path)
            scan_file(path)
        except PermissionError:
            probe["unreadable"] += 1
rep["probe"] = probe
rep["hits"] = {k: sorted(v) for k, v in sorted(rep["hits"].items())}
rep["uid"] = os.getuid()
rep["seconds"] = round(time.monotonic() - started, 2)
print(json.dumps(rep))
"""


@dataclass
class LeakReport:
    """What the walk saw; ``problems`` is empty when the image is clean."""

    image: str
    files: int = 0
    bytes: int = 0
    archives: int = 0
    unreadable: int = 0
    markers: int = 0
    seconds: float = 0.0
    hits: dict[str, list[int]] = field(default_factory=dict)
    task_files_locked: int = 0
    task_files_expected: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        if self.ok:
            return (
                f"leak check passed: uid {AGENT_UID} read {self.files} files "
                f"({self.bytes / 1e6:.0f} MB, {self.archives} archives opened) against "
                f"{self.markers} task-secret markers: 0 hits; "
                f"{self.task_files_locked}/{self.task_files_expected} task files unreadable "
                f"({self.seconds:.1f} s)"
            )
        return "leak check FAILED: " + "; ".join(self.problems)


def _send_stdin(sock: Any, payload: bytes) -> None:
    """Writes ``payload`` to an attached stdin and closes it (stdin_once then ends the input)."""
    raw: socket.socket = getattr(sock, "_sock", sock)
    try:
        raw.sendall(payload)
        raw.shutdown(socket.SHUT_WR)
    finally:
        sock.close()  # the wrapper, then the socket itself (the wrapper only drops a reference)
        raw.close()


def run_to_end(
    container: Any, timeout_s: float, stdin: bytes | None = None
) -> tuple[int, str, str]:
    """Starts a created ``container`` (writing ``stdin`` to its attached input first, if given),
    waits for it and removes it: (exit code, stdout, stderr)."""
    try:
        # attached before the start, as `docker run -i` does, so no input is lost
        sock = None if stdin is None else container.attach_socket(params={"stdin": 1, "stream": 1})
        container.start()
        if sock is not None and stdin is not None:
            _send_stdin(sock, stdin)
        status = container.wait(timeout=timeout_s)
        out = container.logs(stdout=True, stderr=False).decode(errors="replace")
        err = container.logs(stdout=False, stderr=True).decode(errors="replace")
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)
    return int(status.get("StatusCode", -1)), out, err


def leak_check(
    client: Any,
    image: str,
    *,
    labels: dict[str, str] | None = None,
    root: Path = ROOT,
    timeout_s: float = 300.0,
) -> LeakReport:
    """Runs the walk in ``image`` as uid 1001 and judges its report."""
    markers, task_files = secret_markers(root)
    report = LeakReport(image=image, markers=len(markers), task_files_expected=len(task_files))
    # the low-level call: with stdin_open and no detach it sets StdinOnce, so closing our end of
    # the attached stdin gives the walk its end of input
    created = client.api.create_container(
        image,
        entrypoint=["/opt/srez/bin/python"],
        command=["-I", "-c", WALKER],
        user=str(AGENT_UID),
        stdin_open=True,
        network_disabled=True,
        labels={"srez.leak-check": "1", **(labels or {})},
    )
    payload = json.dumps({"markers": markers, "task_files": task_files, "package": "srez_env"})
    code, out, err = run_to_end(client.containers.get(created["Id"]), timeout_s, payload.encode())
    if code != 0 or not out.strip():
        last = (err.strip().splitlines() or ["no output"])[-1]
        report.problems.append(f"the walk did not finish (exit {code}): {last}")
        return report
    data = json.loads(out.strip().splitlines()[-1])
    report.files, report.bytes = data["files"], data["bytes"]
    report.archives, report.unreadable = data["archives"], data["unreadable"]
    report.seconds = data["seconds"]
    report.hits = data["hits"]
    probe = data["probe"]
    report.task_files_locked = probe["unreadable"]
    if data.get("uid") != AGENT_UID:
        report.problems.append(f"the walk ran as uid {data.get('uid')}, not {AGENT_UID}")
    if report.hits:
        paths = ", ".join(sorted({p.split("!", 1)[0] for p in report.hits}))
        report.problems.append(
            f"{len(report.hits)} file(s) readable by uid {AGENT_UID} hold task secrets: {paths}"
        )
    if probe["readable"]:
        report.problems.append(
            f"{len(probe['readable'])} task file(s) readable by uid {AGENT_UID}: "
            + ", ".join(probe["readable"][:5])
        )
    if probe["folder"] is None or probe["missing"]:
        missing = len(probe["missing"]) if probe["folder"] else len(task_files)
        report.problems.append(
            f"{missing} of {len(task_files)} task files are not where the daemon loads them "
            f"({probe['folder'] or 'srez_env not importable'}): the check would be vacuous"
        )
    return report
