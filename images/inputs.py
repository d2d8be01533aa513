"""What the run image is built from: the sources, the pinned dependencies, the content hash
that says whether a tagged image is up to date, and the build context made of wheels.

Shared by :mod:`build` (the image) and :mod:`leaks` (its check); ``images/`` is a folder of
scripts, not a package: each module imports its siblings by name.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
IMAGES: Final = ROOT / "images"
DOCKERFILE: Final = IMAGES / "Dockerfile"
BUILD_SCRIPTS: Final = ("build.py", "inputs.py", "leaks.py")
TASKS_DIR: Final = ROOT / "env" / "srez_env" / "tasks"
GENERATOR_DIR: Final = ROOT / "env" / "srez_env" / "generator"
"""Its ``*.yaml`` data is root-only in the image, like the task files (the Dockerfile)."""
RUN_REPOSITORY: Final = "srez-run"
PYTHON_SLIM: Final = "python:3.11-slim"
HASH_LABEL: Final = "srez.image-hash"
AGENT_UID: Final = 1001
ANSI_SGR: Final = re.compile(r"\x1b\[[0-9;]*m")  # the engine colours a step's stderr
PULL_TIMEOUT_S: Final = 20  # a read timeout: a pull that makes progress is not cut short

SOURCE_DIRS: Final = ("core", "env", "daemon", "client")
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
    """sha256 over the Dockerfile, the build scripts, the sources, the pins and the base image id."""
    digest = hashlib.sha256()

    def add(name: str, data: bytes) -> None:
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)

    add("Dockerfile", DOCKERFILE.read_bytes())
    for script in BUILD_SCRIPTS:  # how the image is built and checked is part of what it is
        add(script, (IMAGES / script).read_bytes())
    for rel in files:
        add(rel.as_posix(), (root / rel).read_bytes())
    add("pins", "\n".join(pins).encode())
    add("base", base_id.encode())
    return digest.hexdigest()


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
