"""The ``inline`` backend's config: nothing beyond the shared settings (the run is this process)."""

from __future__ import annotations

from typing import Literal

from srez_client.backends.config import BackendConfig


class InlineConfig(BackendConfig):
    """How the ``inline`` backend is made."""

    kind: Literal["inline"] = "inline"
    """Always ``inline``."""
