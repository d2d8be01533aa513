"""The backends by name: each one's module is imported only when it is asked for.

Apart from :mod:`srez_client.backends.base` because the backends import the interface: the
interface importing them back would make every backend part of one import circle.
"""

from __future__ import annotations

from srez_client.backends.base import BACKEND_NAMES, Backend, BackendSettings
from srez_client.errors import UsageError


def get_backend(name: str, settings: BackendSettings) -> Backend:
    """The backend called ``name``, imported only when asked for.

    Raises:
        UsageError: If there is no such backend.
    """
    if name == "inline":
        from srez_client.backends.inline.backend import InlineBackend

        return InlineBackend(settings.state_dir)
    if name == "local":
        from srez_client.backends.local.backend import LocalBackend

        return LocalBackend(settings.state_dir, any_owner=settings.any_owner)
    if name == "docker":
        from srez_client.backends.docker.backend import DockerBackend

        return DockerBackend(
            settings.state_dir,
            image=settings.docker_image,
            any_owner=settings.any_owner,
            extra_labels=dict(settings.docker_labels),
        )
    msg = f"backend {name!r} is not available (available: {', '.join(BACKEND_NAMES)})"
    raise UsageError(msg)
