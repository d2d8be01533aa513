"""The run controller's own files: ``state.json`` (rewritten on every change), ``summary.json``
(written last, retried on a full disk) and ``logs/evaluator.log``.

The episode's files (the dialog, the transcript, the world, the patches, the grade) are the
recorder's (:mod:`srez_daemon.record.episode`); these say how the run went around it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Final

from srez_core.atomic import atomic_write_bytes
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import RunSummary
from srez_daemon.protocol.api import RunState
from srez_daemon.record.folder import RunPaths

logger = logging.getLogger(__name__)

SUMMARY_RETRY_S: Final = 5.0
"""How long writing ``summary.json`` is retried when the disk refuses it."""
SUMMARY_RETRY_EVERY_S: Final = 0.2


class RunFiles:
    """Writes the controller's files into one run folder."""

    def __init__(self, paths: RunPaths) -> None:
        self.paths = paths

    def write_state(self, state: RunState) -> None:
        """Rewrites ``state.json``; a failure is logged (a convenience copy: the next change
        rewrites it)."""
        try:
            atomic_write_bytes(self.paths.state_json, state.model_dump_json(indent=2).encode())
        except OSError as e:
            logger.warning("state.json not written: %s", e)

    async def write_summary(self, summary: RunSummary) -> None:
        """Writes ``summary.json``, retrying for :data:`SUMMARY_RETRY_S` while the disk refuses
        it (then the failure is logged and the run ends all the same)."""
        data = summary.model_dump_json(indent=2).encode() + b"\n"
        deadline = time.monotonic() + SUMMARY_RETRY_S
        while True:
            try:
                atomic_write_bytes(self.paths.summary_json, data)
                return
            except OSError as e:
                if time.monotonic() >= deadline:
                    logger.error("summary.json not written after %g s: %s", SUMMARY_RETRY_S, e)
                    return
                logger.warning("summary.json not written yet (retrying): %s", e)
                await asyncio.sleep(SUMMARY_RETRY_EVERY_S)

    def evaluator_log(self, line: str) -> None:
        """Appends a timestamped line to ``logs/evaluator.log`` (a failure is logged)."""
        try:
            with self.paths.log("evaluator").open("a", encoding="utf-8") as f:
                f.write(f"{utc_timestamp(datetime.now(UTC))} {line}\n")
        except OSError as e:
            logger.warning("evaluator log not written: %s", e)
