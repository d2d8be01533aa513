"""Fixtures of the docker-backend tests: one engine handle per session (its containers carry a
session label and are removed at the end) and a fresh ``DockerBackend`` per test; and the real
model server of the real-model tests (``llama``: one per module)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.llama_server import LlamaServer
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


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama.cpp's server with SmolLM2's whole trained window (8k): room for a few observations
    before it is full."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(n_ctx=8192, log=log) as server:
        yield server
