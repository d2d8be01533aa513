#!/usr/bin/env python3
"""Builds the run image ``srez-run:<version>`` (``make image``) and checks it for task leaks.

1. A content hash over ``images/Dockerfile``, the build scripts, the project's sources (``env/``,
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
5. The leak check (:mod:`leaks`; docs/security.md A1, §4.2 test 10): as uid 1001 (the agent user), a
walk of the
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
import contextlib
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

# images/ is a folder of scripts, not a package: its modules import each other by name, whether
# this one runs as ``python images/build.py`` or is loaded from its path (the tests)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from inputs import (  # noqa: E402
    AGENT_UID,
    ANSI_SGR,
    HASH_LABEL,
    IMAGES,
    PULL_TIMEOUT_S,
    PYTHON_SLIM,
    RUN_REPOSITORY,
    BuildError,
    content_hash,
    dependency_pins,
    log,
    make_context,
    project_metadata,
    source_files,
)
from leaks import LeakReport, leak_check, run_to_end  # noqa: E402

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
    return run_to_end(container, timeout_s)


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
    """None when the tagged image was up to date (nothing built, nothing checked)."""

    @classmethod
    def of(
        cls, tag: str, image: Any, base: str, started: float, report: LeakReport | None
    ) -> ImageResult:
        seconds = time.monotonic() - started
        size_mb = image.attrs.get("Size", 0) / 1e6
        return cls(tag, report is not None, base, seconds, size_mb, report)


def tree_hashes(
    client: Any, files: list[Path] | None = None, pins: list[str] | None = None
) -> dict[str, str]:
    """base reference -> the ``srez.image-hash`` an image built from this tree on that base
    carries, for each base present and current (``SREZ_BASE`` only, when it is set). No network.
    """
    if files is None or pins is None:
        files, pins = source_files(), dependency_pins(project_metadata()[1])
    forced = os.environ.get("SREZ_BASE", "").strip()
    hashes: dict[str, str] = {}
    for ref in [forced] if forced else [PYTHON_SLIM, _build_base_module().TAG]:
        base_id = _current_base_id(client, ref)
        if base_id is not None:
            hashes[ref] = content_hash(files, pins, base_id)
    return hashes


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
        for ref, digest in tree_hashes(client, files, pins).items():
            if have == digest:
                # no network on this path; and a tagged image has passed its checks (a failing
                # one never gets the tag)
                return ImageResult.of(tag, existing, ref, started, report=None)
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
    return ImageResult.of(tag, image, base, started, report=report)


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
