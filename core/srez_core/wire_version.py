"""The versions the wire states, importable without the wire models (health answers with them
before the models load): the dialog protocol's and the ``srez`` distribution's.

:mod:`srez_daemon.protocol` re-exports both; the daemon's first answers import them from here.
"""

import functools
from typing import Final

PROTOCOL_VERSION: Final = 3
"""2: the ``notes_dropped`` entry (the daemon's marker when the agent's notes reach a cap).
3: the stream's final phase frame states where the dialog ends (``end_offset``) and its diff
frames carry the diff (``diff``); the ``inline`` backend records its dialog with the daemon's
recorder (an invalid call's result reads ``error CODE: message``, a raw reply is a ``_reply``
call)."""
UNKNOWN_VERSION: Final = "0+unknown"
"""The version reported when the ``srez`` distribution is not installed (a bare checkout)."""


@functools.cache
def srez_version() -> str:
    """The installed ``srez`` distribution's version (:data:`UNKNOWN_VERSION` when not
    installed); read once per process (reading the distribution's metadata costs about 2 ms)."""
    from importlib import metadata  # 15 ms: not at the import of what only needs the constants

    try:
        return metadata.version("srez")
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION
