"""Fixtures for the environment tests. Whole-benchmark sweeps are computed once per session."""

from __future__ import annotations

import functools

import pytest
from envkit import run_agent

from srez_env.env import SREEnv
from srez_env.generator import matrix
from srez_env.generator.expand import build
from srez_env.task import Task
from srez_env.tasks import load_tasks

TASKS = load_tasks()
TASK_IDS = [t.id for t in TASKS]
BY_ID = {t.id: t for t in TASKS}


@pytest.fixture(scope="session")
def oracle_runs() -> dict[str, SREEnv]:
    """The scripted expert on every task."""
    return {t.id: run_agent(t, "scripted") for t in TASKS}


@pytest.fixture(scope="session")
def heuristic_runs() -> dict[str, SREEnv]:
    """The heuristic expert on every task."""
    return {t.id: run_agent(t, "heuristic") for t in TASKS}


def task(task_id: str) -> Task:
    return BY_ID[task_id]


@functools.cache
def typical(task_id: str) -> Task:
    """The matrix row of ``task_id`` built in the typical world of §3.2 (the design's numbers)."""
    row = next(r for r in matrix.load().rows if r.id == task_id)
    return build(row)
