"""The run image of this tree, for every test that runs a container.

:func:`image_of_this_tree` builds ``srez-run:<version>`` exactly as ``make image`` does, unless the
image's ``srez.image-hash`` label already matches the tree (the fast path: hashing, no build, no
network): a docker test must never pass on an image made from other sources. A lock makes the
suite's workers build it once. An image named by ``SREZ_DOCKER_IMAGE`` is never built here, but
:func:`chosen_image_problem` holds it to the same label.
"""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path
from typing import Any

from images.build import ensure_image, tree_hashes
from images.inputs import HASH_LABEL, BuildError

__all__ = ["BuildError", "chosen_image_problem", "image_of_this_tree"]


def image_of_this_tree(client: Any) -> str:
    """The tag of the run image built from this tree (built now if it is stale or missing).

    Raises:
        BuildError: The image could not be built or failed its checks.
    """
    with (Path(tempfile.gettempdir()) / "srez-test-image.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return ensure_image(client).tag


def chosen_image_problem(
    client: Any, image: Any, *, named_by: str = "SREZ_DOCKER_IMAGE"
) -> str | None:
    """Why ``image`` (a local image, named by ``named_by``) is not one built from this tree, or
    None when its ``srez.image-hash`` label matches the tree on a base present here."""
    have = (image.labels or {}).get(HASH_LABEL)
    hashes = tree_hashes(client)
    if have is not None and have in hashes.values():
        return None
    label = f"{HASH_LABEL}={have}" if have else f"no {HASH_LABEL} label"
    wanted = ", ".join(f"{digest} (on {base})" for base, digest in hashes.items()) or (
        "none: no base image of the run image is present"
    )
    tags = ", ".join(image.tags) or image.short_id
    return (
        f"{named_by} names {tags}, which was not built from this tree ({label}; this tree's: "
        f"{wanted}): rebuild it from this tree, or unset {named_by} to test srez-run:<version>, "
        "which the tests build when stale"
    )
