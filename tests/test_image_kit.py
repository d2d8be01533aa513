"""The run image a docker test may use: one named by ``SREZ_DOCKER_IMAGE`` is held to this tree's
``srez.image-hash`` label as the built one is (no engine: the tree's hashes are stubbed)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from images.inputs import HASH_LABEL

import image_kit


@dataclass
class FakeImage:
    labels: dict[str, str]
    tags: list[str] = field(default_factory=lambda: ["mine:1"])
    short_id: str = "sha256:0123"


@pytest.fixture(autouse=True)
def _tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_kit, "tree_hashes", lambda _client: {"python:3.11-slim": "abc"})


def test_chosen_image_of_this_tree_is_accepted() -> None:
    assert image_kit.chosen_image_problem(None, FakeImage({HASH_LABEL: "abc"})) is None


def test_chosen_image_of_other_sources_is_refused_naming_both_hashes() -> None:
    problem = image_kit.chosen_image_problem(None, FakeImage({HASH_LABEL: "old"}))
    assert problem is not None
    assert problem.startswith("SREZ_DOCKER_IMAGE names mine:1, which was not built from this tree")
    assert f"{HASH_LABEL}=old" in problem and "abc (on python:3.11-slim)" in problem


def test_chosen_image_without_the_label_is_refused() -> None:
    problem = image_kit.chosen_image_problem(None, FakeImage({}))
    assert problem is not None and f"no {HASH_LABEL} label" in problem
