"""The ``docker`` backend's config: the run image, extra labels and each container's limits.

``SREZ_DOCKER_IMAGE`` names the run image (default ``srez-run:<version>``) and
``SREZ_DOCKER_LABELS`` (``k=v,k=v``) adds labels to the containers it creates; an item without
``=`` is ignored, and the labels of docs/design.md §8 cannot be overridden.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from srez_client.backends.config import BackendConfig

IMAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
"""What an image reference looks like (``name[:tag][@digest]``, with its registry)."""
MEMORY_RE = re.compile(r"^[0-9]+[bkmg]?$")
"""A memory limit as the engine takes it: a number of bytes, or with ``b``, ``k``, ``m``, ``g``."""


class DockerConfig(BackendConfig):
    """How the ``docker`` backend is made."""

    ENV: ClassVar[Mapping[str, str]] = {
        "image": "SREZ_DOCKER_IMAGE",
        "extra_labels": "SREZ_DOCKER_LABELS",
    }

    kind: Literal["docker"] = "docker"
    """Always ``docker``."""
    image: str | None = None
    """The run image (``$SREZ_DOCKER_IMAGE``; None: ``srez-run:<version>``)."""
    extra_labels: dict[str, str] = {}
    """More labels for the containers it creates (``$SREZ_DOCKER_LABELS``, ``k=v,k=v``)."""
    mem_limit: str = "2g"
    """Memory limit of a container."""
    pids_limit: int = Field(default=512, gt=0)
    """Process limit of a container."""
    ready_timeout_s: float = Field(default=60.0, gt=0)
    """How long a launch waits for ``/api/health`` to pass ``starting``."""
    stop_grace_s: float = Field(default=10.0, ge=0)
    """How long ``stop`` waits after SIGTERM before SIGKILL."""

    @field_validator("extra_labels", mode="before")
    @classmethod
    def _labels_from_text(cls, value: object) -> object:
        """``k=v,k=v`` (as ``$SREZ_DOCKER_LABELS`` gives them) as a mapping."""
        if not isinstance(value, str):
            return value
        pairs = (item.partition("=") for item in value.split(","))
        return {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}

    @field_validator("image")
    @classmethod
    def _image_reference(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE_RE.fullmatch(value):
            msg = f"{value!r} is not an image reference (name[:tag][@digest], e.g. srez-run:1.0)"
            raise ValueError(msg)
        return value

    @field_validator("mem_limit")
    @classmethod
    def _memory(cls, value: str) -> str:
        if not MEMORY_RE.fullmatch(value):
            msg = f"{value!r} is not a memory size (bytes, or a number with b, k, m or g: 2g)"
            raise ValueError(msg)
        return value
