"""The dialog protocol's version, importable without the wire models (health answers with it
before the models load)."""

from typing import Final

PROTOCOL_VERSION: Final = 2
"""2: the ``notes_dropped`` entry (the daemon's marker when the agent's notes reach a cap)."""
