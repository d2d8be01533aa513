"""Fixtures of the docker-backend tests: one engine handle per session (its containers carry a
session label and are removed at the end) and a fresh ``DockerBackend`` per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker_kit import Engine, open_engine

from srez_client.backends.docker.backend import DockerBackend


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    found = open_engine(uuid.uuid4().hex)
    try:
        yield found
    finally:
        found.remove_all()
        found.client.close()


@pytest.fixture
def backend(engine: Engine, tmp_path: Path) -> Iterator[DockerBackend]:
    made = engine.backend(tmp_path / "state")
    try:
        yield made
    finally:
        made.close()
