"""The handlers of the run's public read routes: run, diff, files, reference, similarity, grade,
logs (their wire side is in :mod:`srez_daemon.protocol.routes`).

The diff and the changed files are the episode's, computed from the config texts in memory against
those at the incident's start (:mod:`srez_daemon.record.world`), like the stream's diff frames and
``final.patch``. The reference patch and the similarity are refused
while the agent phase runs: the reference is written only after the agent's processes are gone.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Final

from aiohttp import web

from srez_daemon.http import ApiError, Handler, json_response
from srez_daemon.protocol.api import (
    AGENT_OVER,
    FileChange,
    FilesResponse,
    RunInfo,
    TaskSummary,
)
from srez_daemon.protocol.routes import (
    DIFF,
    DIFF_MEDIA,
    FILES,
    FOLLOW_VALUES,
    GRADE,
    JSON_MEDIA,
    LOG_NAMES,
    LOGS,
    REFERENCE,
    RUN,
    SIMILARITY,
)
from srez_daemon.record.world import similarity
from srez_daemon.run import RunController

FOLLOW_POLL_S: Final = 0.2


class PublicRoutes:
    """Handlers bound to one run controller."""

    def __init__(self, run: RunController) -> None:
        self.run = run

    def handlers(self) -> dict[str, Handler]:
        """Route name -> handler for the routes served here."""
        return {
            RUN.name: self.run_info,
            DIFF.name: self.diff,
            FILES.name: self.files,
            REFERENCE.name: self.reference,
            SIMILARITY.name: self.similarity,
            GRADE.name: self.grade,
            LOGS.name: self.logs,
        }

    # ------------------------------------------------------------------ handlers
    async def run_info(self, _request: web.Request) -> web.Response:
        r, st, task = self.run, self.run.state, self.run.task
        return json_response(
            RunInfo(
                run_id=st.run_id,
                task=TaskSummary(
                    id=task.id,
                    title=task.title,
                    difficulty=task.difficulty,
                    brief=task.incident.brief,
                ),
                model=r.manifest.model,
                agent=r.manifest.agent,
                backend=r.manifest.backend,
                phase=st.phase,
                steps_used=st.steps_used,
                step_budget=st.step_budget,
                started_at=st.started_at,
                finished_at=st.finished_at,
                end_reason=st.end_reason,
                tokens=st.tokens,
                cost_usd=st.cost_usd,
            )
        )

    async def diff(self, _request: web.Request) -> web.Response:
        return web.Response(text=self.live_diff(), content_type=DIFF_MEDIA)

    async def files(self, _request: web.Request) -> web.Response:
        return json_response(FilesResponse(files=self.changed_files()))

    async def reference(self, _request: web.Request) -> web.Response:
        self._require_agent_over("the reference patch")
        path = self.run.paths.reference_patch
        if not path.exists():
            raise ApiError(code="not_found", message="the reference patch is not written yet")
        return web.Response(text=path.read_text(encoding="utf-8"), content_type=DIFF_MEDIA)

    async def similarity(self, _request: web.Request) -> web.Response:
        self._require_agent_over("the similarity")
        path = self.run.paths.reference_patch
        if not path.exists():
            raise ApiError(code="not_found", message="the reference patch is not written yet")
        return json_response(similarity(self.live_diff(), path.read_text(encoding="utf-8")))

    async def grade(self, _request: web.Request) -> web.Response:
        path = self.run.paths.result_json
        if not path.exists():
            raise ApiError(
                code="no_grade", message=f"the run is not graded yet (phase {self.run.phase})"
            )
        return web.Response(body=path.read_bytes(), content_type=JSON_MEDIA)

    async def logs(self, request: web.Request) -> web.StreamResponse:
        name = request.query.get("name", "daemon")
        if name not in LOG_NAMES:
            raise ApiError(
                code="bad_request",
                message=f"name must be one of {', '.join(LOG_NAMES)}, not {name!r}",
            )
        raw_follow = request.query.get("follow", "0")
        if raw_follow not in FOLLOW_VALUES:
            raise ApiError(
                code="bad_request",
                message=f"follow must be one of {', '.join(FOLLOW_VALUES)}, not {raw_follow!r}",
            )
        follow = raw_follow in ("1", "true")
        path = self.run.paths.log(name)
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        offset = 0
        while True:
            chunk = await asyncio.to_thread(_read_from, path, offset)
            if chunk:
                offset += len(chunk)
                await response.write(chunk)
                continue
            if not follow or self.run.finished.is_set():
                break
            await asyncio.sleep(FOLLOW_POLL_S)
        await response.write_eof()
        return response

    # ------------------------------------------------------------------ helpers
    def _require_agent_over(self, what: str) -> None:
        if self.run.phase not in AGENT_OVER:
            raise ApiError(
                code="agent_phase",
                message=f"{what} is served only once the agent phase is over (phase {self.run.phase})",
            )

    def live_diff(self) -> str:
        episode = self.run.episode
        return episode.world.diff if episode is not None else ""

    def changed_files(self) -> list[FileChange]:
        episode = self.run.episode
        return list(episode.world.files) if episode is not None else []


def _read_from(path: Path, offset: int, limit: int = 1 << 16) -> bytes:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read(limit)
    except OSError:
        return b""
