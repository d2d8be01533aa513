"""What the detach dialog offers, by the run's state: a running run can be stopped, a stopped
one removed (its state; results are kept), a finished run from results/ only detached."""

from __future__ import annotations

from typing import Final

DETACH: Final = "Detach"
STOP: Final = "Detach + Stop"
REMOVE: Final = "Detach + Remove"
CANCEL: Final = "Cancel"


def detach_options(*, live: bool, running: bool) -> list[str]:
    """The buttons of the detach dialog, Cancel last."""
    if not live:
        return [DETACH, CANCEL]
    return [DETACH, STOP if running else REMOVE, CANCEL]
