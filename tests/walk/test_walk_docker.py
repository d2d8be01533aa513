"""The README walk: the Docker lines, against the engine and the run image of this tree (what
``make image`` builds: :func:`image_kit.image_of_this_tree` builds it when stale; the docker
marker: skipped only where no engine answers, a failure with ``REQUIRE_DOCKER=1``)."""

from __future__ import annotations

import subprocess

import pytest
from walk_kit import Walker
from walk_steps import DOCKER

import docker
from image_kit import image_of_this_tree


@pytest.mark.docker
def test_walk_docker(walker: Walker) -> None:
    client = docker.from_env()
    try:
        image_of_this_tree(client)
    finally:
        client.close()
    watch = walker.terminal("srez mirror --watch")
    try:
        for line, steps in DOCKER:
            walker.walk(line, steps)
        # the watcher saw the kept run's container stop (srez run had mirrored it already)
        watch.wait_for(walker.filled("{docker_kept}"))
        watch.keys("C-c")
        assert watch.exit_status() == 0
    finally:
        watch.close()
        ours = f"label=srez.results={walker.clone / 'results'}"
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", ours], capture_output=True, text=True
        ).stdout.split()
        if left:
            subprocess.run(["docker", "rm", "-f", *left], capture_output=True)
    assert not left, f"the walk left containers behind: {left}"
