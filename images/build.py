#!/usr/bin/env python3
"""Builds the run image ``srez-run:<version>`` (``make image``) and checks it for task leaks.

1. A content hash over ``images/Dockerfile``, this script, the project's sources (``env/``,
   ``daemon/``, ``client/``, ``pyproject.toml``, ``README.md``; caches excluded), the pinned
   runtime dependencies and the base image's id. When ``srez-run:<version>`` carries that hash as
   its ``srez.image-hash`` label, nothing is built.
2. The base: ``python:3.11-slim`` when it is present or can be pulled; otherwise
   ``srez-base:bookworm``, built from Debian's packages by ``images/base/build_base.py``.
   ``SREZ_BASE=<image>`` forces a choice.
3. The wheels, made on the host into a temporary build context (the srez wheel, and every
   runtime dependency as a cp311 manylinux wheel, pinned to the versions installed here), so the
   build itself needs no network; then the image, built by the engine from that context.
4. The import check: every module of ``srez_env`` and ``srez_daemon`` must import in the image,
   as root (the daemon) and as the agent user; a runtime dependency missing from
   ``[project.dependencies]`` fails the build here rather than the first run.
5. The leak check (SECURITY.md A1, §4.2 test 10): as uid 1001 (the agent user), a walk of the
   image's whole filesystem tries to read every file, and of archives (wheels, zips, compressed
   files) every member, looking for task secrets: markers computed from the task files on the
   host. Any readable hit, or a task file the agent user can read, fails the build (exit 1).
   The image is built as ``srez-run:<version>-candidate``; only once 4 and 5 pass does it take
   the real tag. A failing build leaves the previous image as it was (and is never taken as up
   to date).

Usage: ``python images/build.py [--force] [--check IMAGE]``. Prints ``srez-run:<version>``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
IMAGES: Final = ROOT / "images"
DOCKERFILE: Final = IMAGES / "Dockerfile"
TASKS_DIR: Final = ROOT / "env" / "srez_env" / "tasks"
RUN_REPOSITORY: Final = "srez-run"
PYTHON_SLIM: Final = "python:3.11-slim"
HASH_LABEL: Final = "srez.image-hash"
AGENT_UID: Final = 1001
ANSI_SGR: Final = re.compile(r"\x1b\[[0-9;]*m")  # the engine colours a step's stderr
PULL_TIMEOUT_S: Final = 20  # a read timeout: a pull that makes progress is not cut short

SOURCE_DIRS: Final = ("env", "daemon", "client")
SOURCE_FILES: Final = ("pyproject.toml", "README.md")  # README is the distribution's readme
SKIP_DIRS: Final = frozenset(
    {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", "build", "dist"}
)
SKIP_SUFFIXES: Final = (".pyc", ".pyo", ".egg-info")

# pip download for the image's interpreter (CPython 3.11 on glibc x86-64), not the host's
WHEEL_TARGET: Final = (
    "--only-binary=:all:",
    "--python-version",
    "3.11",
    "--platform",
    "manylinux2014_x86_64",
    "--platform",
    "manylinux_2_17_x86_64",
    "--platform",
    "manylinux_2_28_x86_64",
)


class BuildError(Exception):
    """A failure with a one-line message for the user."""


def log(message: str) -> None:
    print(f"[image] {message}", flush=True)


# --- inputs -----------------------------------------------------------------------------------


HOST_ONLY: Final = frozenset({"urwid", "matplotlib"})
"""Dependencies of the host side only (the TUI, the plots): no module of srez_env or srez_daemon
imports them, so the run image leaves them out (matplotlib alone brings numpy and 60 MB)."""


def project_metadata(root: Path = ROOT) -> tuple[str, list[str]]:
    """The project's version and the runtime requirements the image needs: [project.dependencies]
    less :data:`HOST_ONLY`."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    requirements = [str(r) for r in project.get("dependencies", [])]
    keep = [r for r in requirements if re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0] not in HOST_ONLY]
    return str(project["version"]), keep


def source_files(root: Path = ROOT) -> list[Path]:
    """The files the image is built from, relative to ``root``, sorted (caches excluded)."""
    out = [Path(name) for name in SOURCE_FILES if (root / name).is_file()]
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(root / top):
            dirnames[:] = sorted(
                d for d in dirnames if d not in SKIP_DIRS and not d.endswith(SKIP_SUFFIXES)
            )
            base = Path(dirpath).relative_to(root)
            out += [base / f for f in filenames if not f.endswith(SKIP_SUFFIXES)]
    return sorted(out)


def _dist_name(requirement: str) -> str | None:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else None


def dependency_pins(requirements: Iterable[str]) -> list[str]:
    """``name==version`` for every installed distribution in the closure of ``requirements``.

    The image then gets the versions the tests ran against here. Requirements behind an extra
    are not followed; ones with other markers are pinned if installed (a pin only constrains).
    """
    pins: dict[str, str] = {}
    todo = [n for n in map(_dist_name, requirements) if n]
    while todo:
        name = todo.pop()
        if name in pins:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        pins[name] = dist.version
        for req in dist.requires or []:
            if "extra ==" in req.partition(";")[2].replace("extra==", "extra =="):
                continue
            dep = _dist_name(req)
            if dep and dep not in pins:
                todo.append(dep)
    return [f"{n}=={v}" for n, v in sorted(pins.items())]


def content_hash(
    files: Iterable[Path], pins: Iterable[str], base_id: str, root: Path = ROOT
) -> str:
    """sha256 over the Dockerfile, this script, the sources, the pins and the base image id."""
    digest = hashlib.sha256()

    def add(name: str, data: bytes) -> None:
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)

    add("Dockerfile", DOCKERFILE.read_bytes())
    add("build.py", Path(__file__).read_bytes())
    for rel in files:
        add(rel.as_posix(), (root / rel).read_bytes())
    add("pins", "\n".join(pins).encode())
    add("base", base_id.encode())
    return digest.hexdigest()


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


def secret_markers(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The markers to search the image for, and the task file names.

    Candidates found in any public file of the packages (everything but the task files) are
    dropped: the simulator's own source legitimately says ``connection refused``.
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
        if path.parent == TASKS_DIR and path.suffix == ".yaml":
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
    container = client.containers.get(created["Id"])
    try:
        payload = json.dumps(
            {"markers": markers, "task_files": task_files, "package": "srez_env"}
        ).encode()
        # attached before the start, as `docker run -i` does, so no input is lost
        sock = container.attach_socket(params={"stdin": 1, "stream": 1})
        container.start()
        _send_stdin(sock, payload)
        status = container.wait(timeout=timeout_s)
        out = container.logs(stdout=True, stderr=False).decode(errors="replace")
        err = container.logs(stdout=False, stderr=True).decode(errors="replace")
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)
    if status.get("StatusCode") != 0 or not out.strip():
        last = (err.strip().splitlines() or ["no output"])[-1]
        report.problems.append(f"the walk did not finish (exit {status.get('StatusCode')}): {last}")
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


# Every module of the daemon and the simulator must import in the image: a module the daemon
# loads late (the run's runtime, after /api/health already answers) would otherwise fail only
# when a run starts. Run as root (the daemon) and as the agent user (the agent imports srez_env).
IMPORT_CHECK: Final = r"""
import importlib, json, pkgutil
bad = {}
for pkg in ("srez_env", "srez_daemon"):
    for info in pkgutil.walk_packages(importlib.import_module(pkg).__path__, pkg + "."):
        try:
            importlib.import_module(info.name)
        except Exception as e:
            bad[info.name] = f"{type(e).__name__}: {e}"
print(json.dumps(bad))
"""


def run_python(
    client: Any,
    image: str,
    code: str,
    *,
    user: str = "0",
    labels: dict[str, str] | None = None,
    timeout_s: float = 120.0,
) -> tuple[int, str, str]:
    """Runs ``code`` with the image's venv python; (exit code, stdout, stderr)."""
    container = client.containers.create(
        image,
        entrypoint=["/opt/srez/bin/python", "-I", "-c", code],
        command=[],
        user=user,
        network_disabled=True,
        labels={"srez.image-check": "1", **(labels or {})},
    )
    try:
        container.start()
        status = container.wait(timeout=timeout_s)
        out = container.logs(stdout=True, stderr=False).decode(errors="replace")
        err = container.logs(stdout=False, stderr=True).decode(errors="replace")
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)
    return int(status.get("StatusCode", -1)), out, err


def import_check(client: Any, image: str) -> list[str]:
    """Problems found importing every srez_env and srez_daemon module in ``image``."""
    problems: list[str] = []
    for user in ("0", str(AGENT_UID)):
        code, out, err = run_python(client, image, IMPORT_CHECK, user=user)
        if code != 0 or not out.strip():
            last = (err.strip().splitlines() or ["no output"])[-1]
            problems.append(f"as uid {user}: the import check failed: {last}")
            continue
        bad: dict[str, str] = json.loads(out.strip().splitlines()[-1])
        missing = sorted(
            {m.group(1) for v in bad.values() if (m := re.search(r"No module named '([^'.]+)", v))}
        )
        if missing:
            problems.append(
                f"as uid {user}: {len(bad)} module(s) cannot import {', '.join(missing)}, which "
                "is not installed: add it to [project.dependencies] in pyproject.toml"
            )
        elif bad:
            name, why = next(iter(sorted(bad.items())))
            problems.append(
                f"as uid {user}: {len(bad)} module(s) fail to import, e.g. {name}: {why}"
            )
    return problems


# --- the engine -------------------------------------------------------------------------------


def docker_client(timeout: int = 600) -> Any:
    import docker

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as e:
        msg = f"no Docker engine answers ({e})"
        raise BuildError(msg) from e
    return client


def _local_image(client: Any, ref: str) -> Any | None:
    import docker

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def _build_base_module() -> ModuleType:
    """images/base/build_base.py as a module (the folder is not a package)."""
    if "build_base" in sys.modules:
        return sys.modules["build_base"]
    spec = importlib.util.spec_from_file_location("build_base", IMAGES / "base" / "build_base.py")
    if spec is None or spec.loader is None:
        msg = "images/base/build_base.py cannot be loaded"
        raise BuildError(msg)
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_base"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _current_base_id(client: Any, ref: str) -> str | None:
    """The id of a base the run image was built from, if it is still current: present, and for
    our own base, built from today's recipe."""
    image = _local_image(client, ref)
    if image is None:
        return None
    bb = _build_base_module()
    if ref == bb.TAG and (image.labels or {}).get(bb.RECIPE_LABEL) != bb.recipe_hash():
        return None
    return str(image.id)


def choose_base(client: Any) -> tuple[str, str]:
    """(reference, id) of the base: python:3.11-slim if present or pullable, else our own."""
    import docker

    forced = os.environ.get("SREZ_BASE", "").strip()
    bb = _build_base_module()
    if forced and forced != bb.TAG:
        image = _local_image(client, forced)
        if image is None:
            msg = f"SREZ_BASE={forced} is not a local image"
            raise BuildError(msg)
        log(f"base: {forced} (from SREZ_BASE)")
        return forced, str(image.id)
    if not forced:
        image = _local_image(client, PYTHON_SLIM)
        if image is not None:
            log(f"base: {PYTHON_SLIM} (present locally)")
            return PYTHON_SLIM, str(image.id)
        repo, _, tag = PYTHON_SLIM.partition(":")
        try:
            puller = docker.from_env(timeout=PULL_TIMEOUT_S)
            image = puller.images.pull(repo, tag=tag)
            log(f"base: {PYTHON_SLIM} (pulled)")
            return PYTHON_SLIM, str(image.id)
        except Exception as e:  # noqa: BLE001 - any failure to pull means: build our own
            reason = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
            log(f"{PYTHON_SLIM} cannot be pulled ({reason})")
    log(f"base: {bb.TAG}, built from Debian's packages (images/base/build_base.py)")
    bb.ensure_base()
    image = _local_image(client, bb.TAG)
    if image is None:
        msg = f"{bb.TAG} is missing after its build"
        raise BuildError(msg)
    return bb.TAG, str(image.id)


def _pip(args: list[str], cwd: Path) -> None:
    argv = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stdout[-3000:] + proc.stderr[-3000:], file=sys.stderr)
        msg = f"pip {args[0]} failed (exit {proc.returncode})"
        raise BuildError(msg)


def make_context(ctx: Path, files: list[Path], requirements: list[str], pins: list[str]) -> None:
    """The build context: the Dockerfile, ``deps/`` (the dependencies' wheels), ``srez/`` (the
    project's wheel) and ``pip.whl``; nothing in the build needs the network after this."""
    src, tools = ctx.parent / "src", ctx.parent / "tools"
    for rel in files:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    deps = ctx / "deps"
    deps.mkdir(parents=True)
    shutil.copy2(DOCKERFILE, ctx / "Dockerfile")
    constraints = ctx.parent / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")

    def dependencies() -> None:
        download = ["download", "--quiet", *WHEEL_TARGET, "-d", str(deps)]
        try:
            _pip([*download, "-c", str(constraints), *requirements], ctx)
        except BuildError:
            # a version installed here may have no wheel for the image's platform: the newest
            log("the pinned versions are not all available as cp311 wheels; resolving afresh")
            _pip([*download, *requirements], ctx)

    jobs = {
        "srez wheel": lambda: _pip(
            ["wheel", "--quiet", "--no-deps", "-w", str(ctx / "srez"), str(src)], ctx
        ),
        "dependencies": dependencies,
        "pip": lambda: _pip(["download", "--quiet", *WHEEL_TARGET, "-d", str(tools), "pip"], ctx),
    }
    t0 = time.monotonic()
    # three independent pip runs, mostly waiting on the network or a build backend: in parallel
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs.values()]
        for future in futures:
            future.result()
    (pip_wheel,) = tools.glob("pip-*.whl")
    shutil.copy2(pip_wheel, ctx / "pip.whl")
    count = len(list(deps.glob("*.whl")))
    log(
        f"srez wheel built and {count} dependency wheels downloaded in {time.monotonic() - t0:.1f} s"
    )


def build(
    client: Any, ctx: Path, tag: str, buildargs: dict[str, str], labels: dict[str, str]
) -> Any:
    """Builds the image from ``ctx``, streaming the engine's log."""
    stream: Iterator[dict[str, Any]] = client.api.build(
        path=str(ctx),
        tag=tag,
        buildargs=buildargs,
        labels=labels,
        rm=True,
        forcerm=True,
        pull=False,
        decode=True,
    )
    for chunk in stream:
        if "stream" in chunk:
            text = ANSI_SGR.sub("", str(chunk["stream"])).rstrip("\n")
            if text.strip():
                print(f"  {text}", flush=True)
        if "error" in chunk:
            msg = f"docker build failed: {str(chunk['error']).strip()}"
            raise BuildError(msg)
    image = _local_image(client, tag)
    if image is None:
        msg = f"the build finished but {tag} is missing"
        raise BuildError(msg)
    return image


def _drop_old_stages(client: Any) -> None:
    """Removes all but the newest leftover of the venv stage: the newest is the next build's
    cache, the older ones only hold disk (and copies of the wheels)."""
    stages = client.images.list(filters={"dangling": True, "label": "srez.stage=venv"})
    stages.sort(key=lambda image: str(image.attrs.get("Created", "")), reverse=True)
    for old in stages[1:]:
        with contextlib.suppress(Exception):
            client.images.remove(old.id)


@dataclass
class ImageResult:
    tag: str
    built: bool
    base: str
    seconds: float
    size_mb: float
    report: LeakReport | None


def ensure_image(client: Any | None = None, *, force: bool = False) -> ImageResult:
    """Builds ``srez-run:<version>`` unless it is up to date, then checks it for leaks.

    Raises:
        BuildError: Anything failed, including the leak check (the image is then untagged).
    """
    started = time.monotonic()
    client = client or docker_client()
    version, requirements = project_metadata()
    tag = f"{RUN_REPOSITORY}:{version}"
    files = source_files()
    pins = dependency_pins(requirements)
    existing = _local_image(client, tag)
    if existing is not None and not force:
        have = (existing.labels or {}).get(HASH_LABEL)
        forced = os.environ.get("SREZ_BASE", "").strip()
        for ref in [forced] if forced else [PYTHON_SLIM, _build_base_module().TAG]:
            base_id = _current_base_id(client, ref)
            if base_id is not None and have == content_hash(files, pins, base_id):
                # no network on this path; and a tagged image has passed its checks (a failing
                # one never gets the tag)
                return ImageResult(
                    tag,
                    built=False,
                    base=ref,
                    seconds=time.monotonic() - started,
                    size_mb=existing.attrs.get("Size", 0) / 1e6,
                    report=None,
                )
    base, base_id = choose_base(client)
    digest = content_hash(files, pins, base_id)
    # One label: the engine adds a build step per label, each a container commit (~2 s here).
    # The base need not be recorded: the up-to-date check tries each base present.
    labels = {HASH_LABEL: digest}
    # Built under a candidate tag and checked there: the real tag moves only to an image that
    # passed, so a failing build leaves the previous (working) image in place.
    candidate = f"{tag}-candidate"
    with tempfile.TemporaryDirectory(prefix="srez-image-") as tmp:
        ctx = Path(tmp) / "context"
        ctx.mkdir()
        make_context(ctx, files, requirements, pins)
        t0 = time.monotonic()
        log(f"building {tag} FROM {base}")
        image = build(client, ctx, candidate, {"BASE": base}, labels)
        log(f"built {candidate} ({image.short_id}) in {time.monotonic() - t0:.1f} s")
    _drop_old_stages(client)
    try:
        problems = import_check(client, candidate)
        if problems:
            raise BuildError("; ".join(problems))
        log(
            "import check passed: every srez_env and srez_daemon module imports as root and as agent"
        )
        report = leak_check(client, candidate)
        if not report.ok:
            raise BuildError(report.summary())
        log(report.summary())
        repository, _, version_tag = tag.partition(":")
        image.tag(repository, version_tag)
    finally:
        with contextlib.suppress(Exception):
            # untags the candidate; a failed image (with no other tag) goes with it
            client.images.remove(candidate, force=True)
    if existing is not None and existing.id != image.id:
        with contextlib.suppress(Exception):
            client.images.remove(existing.id)  # the previous build, now untagged
    return ImageResult(
        tag,
        built=True,
        base=base,
        seconds=time.monotonic() - started,
        size_mb=image.attrs.get("Size", 0) / 1e6,
        report=report,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--check", metavar="IMAGE", help="only run the leak check on IMAGE")
    args = parser.parse_args(argv)
    try:
        if args.check:
            report = leak_check(docker_client(), args.check)
            print(report.summary(), file=sys.stdout if report.ok else sys.stderr)
            return 0 if report.ok else 1
        result = ensure_image(force=args.force)
    except BuildError as e:
        print(f"build: error: {e}", file=sys.stderr)
        return 1
    what = "built" if result.built else "up to date, not rebuilt"
    log(
        f"{result.tag}: {what}; base {result.base}; {result.size_mb:.0f} MB; {result.seconds:.1f} s"
    )
    print(result.tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
