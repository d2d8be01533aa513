"""The run image of this tree, for every test that runs a container.

:func:`image_of_this_tree` builds ``srez-run:<version>`` exactly as ``make image`` does, unless the
image's ``srez.image-hash`` label already matches the tree (the fast path: hashing, no build, no
network): a docker test must never pass on an image made from other sources. A lock makes the
suite's workers build it once.
"""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path
from typing import Any

from images.build import ensure_image
from images.inputs import BuildError

__all__ = ["BuildError", "image_of_this_tree"]


def image_of_this_tree(client: Any) -> str:
    """The tag of the run image built from this tree (built now if it is stale or missing).

    Raises:
        BuildError: The image could not be built or failed its checks.
    """
    with (Path(tempfile.gettempdir()) / "srez-test-image.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return ensure_image(client).tag
