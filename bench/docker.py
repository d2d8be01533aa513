"""The docker backend's figures for ``make bench``, next to the ``local`` backend's.

* ``launch_to_healthy_s``: ``launch()`` until the daemon reports the run past ``starting``,
  median of 3, for docker and for local (target for docker: under 2 s).
* ``copy_out_s``: copying a finished run out (docker: ``get_archive`` through the tar filter;
  local: the folder copy).
* ``exec``: round trip of ``POST /api/exec`` running ``true`` through the endpoint, p50 over 100,
  docker (through the published port) beside local.

Needs a Docker engine and the ``srez-run`` image (``make image``); without them it says why.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from srez_client.backends.base import Backend, LaunchSpec
from srez_client.daemon_client.api import DaemonClient


async def _figures_for(backend: Backend, root: Path) -> dict[str, Any]:
    launches, copies, rtts = [], [], []
    for i in range(3):
        spec = LaunchSpec(
            task_id="sre-007", agent_spec="scripted", keep=True, results_root=root / "results"
        )
        started = time.perf_counter()
        handle = await backend.launch(spec)
        launches.append(time.perf_counter() - started)
        try:
            handle = await backend.wait(handle, timeout_s=60)
            async with DaemonClient(
                await backend.endpoint(handle), await backend.token(handle), admin=True
            ) as client:
                if i == 0:
                    for _ in range(100):
                        t = time.perf_counter()
                        await client.exec(["true"], timeout_s=5)
                        rtts.append(1000 * (time.perf_counter() - t))
            started = time.perf_counter()
            await backend.copy_out(handle, root / f"copy-{i}")
            copies.append(time.perf_counter() - started)
        finally:
            await backend.remove(handle)
    return {
        "launch_to_healthy_s": round(statistics.median(launches), 3),
        "copy_out_s": round(statistics.median(copies), 3),
        "exec_p50_ms": round(statistics.median(rtts), 3),
    }


async def docker_figures() -> dict[str, Any]:
    """Docker beside local; a reason instead when no engine or image is here."""
    try:
        import docker  # type: ignore[import-untyped]
        from srez_client.backends.docker.backend import DockerBackend, default_image
        from srez_client.backends.local.backend import LocalBackend

        engine = docker.from_env(timeout=3)
        engine.ping()
        backend = DockerBackend(Path(tempfile.mkdtemp(prefix="srez-bench-docker-")))
        image = default_image()
        if not engine.images.list(name=image.split(":")[0]):
            return {"skipped": f"image {image} is not built (run make image)"}
    except Exception as e:  # no engine: report why rather than fail the whole bench
        return {"skipped": f"no Docker engine ({type(e).__name__})"}
    with tempfile.TemporaryDirectory() as tmp:
        docker_side = await _figures_for(backend, Path(tmp) / "docker")
        local_side = await _figures_for(
            LocalBackend(Path(tmp) / "local-state"), Path(tmp) / "local"
        )
    return {"docker": docker_side, "local": local_side, "target_launch_to_healthy_s": 2.0}


if __name__ == "__main__":
    import json

    print(json.dumps(asyncio.run(docker_figures()), indent=2))
