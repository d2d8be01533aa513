"""A live run read through its daemon (WebSocket stream and REST), found through a backend.

While the run starts the daemon may not answer yet: :meth:`LiveRunSource.connect` waits for it
with backoff (panels read "Starting…"), and :meth:`LiveRunSource.reconnect_now` (a key) cuts the
wait short. The stream resumes from the last offset it delivered, so a reconnect neither loses
nor repeats an entry. Once the daemon has exited (a run without ``keep``), reads fall back to the
run's results folder when the mirror has written it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypeVar

from srez_client.backends.base import Backend, RunHandle
from srez_client.daemon_client.api import LOG_NAMES, DaemonClient
from srez_client.errors import (
    ClientError,
    DaemonAuthError,
    DaemonConflictError,
    DaemonNotFoundError,
)
from srez_client.results.finder import find_results
from srez_client.tui.source import DialogBatch, RunMeta, RunSource, SourceEvent, SourceUnavailable
from srez_client.tui.source_results import FinishedRunSource
from srez_daemon.protocol import encode_entry
from srez_daemon.protocol.api import DialogFrame, Health, HeartbeatFrame

logger = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_DELAY_S: Final = 0.1
MAX_DELAY_S: Final = 3.0


class LiveRunSource(RunSource):
    """A run a backend knows, read through its daemon."""

    live = True
    identity_limit_s: float = 5.0
    """How long the identity check may take before the daemon counts as not answering (a port
    that accepts and never answers must not hold the viewer for the client's whole timeout)."""

    def __init__(
        self,
        backend: Backend,
        handle: RunHandle,
        *,
        terminal_allowed: bool = True,
    ) -> None:
        self.backend = backend
        self.handle = handle
        self.run_id = handle.run_id
        self.client: DaemonClient | None = None
        self.offset = 0
        self._wake = asyncio.Event()
        self._terminal_allowed = terminal_allowed
        self._has_terminal = False
        self._fallback: FinishedRunSource | None = None

    def reconnect_now(self) -> None:
        """Stop waiting before the next connection attempt."""
        self._wake.set()

    async def connect(self, status: Callable[[str], None] | None = None) -> None:
        """Wait, with backoff, until the daemon answers its health check."""
        say = status or (lambda _text: None)
        delay = FIRST_DELAY_S
        while True:
            try:
                client, health = await self._open()
            except DaemonAuthError as e:
                say(f"Not trusted: {e}; R retries")
                logger.warning("run %s: %s", self.run_id, e)
                if await self._wait_or_finished(delay):
                    return
                delay = min(delay * 2, MAX_DELAY_S)
                continue
            except (ClientError, OSError) as e:
                say(f"Starting… waiting for the daemon ({type(e).__name__}); R retries")
                if await self._wait_or_finished(delay):
                    say("the run's daemon has exited; showing its results")
                    return
                delay = min(delay * 2, MAX_DELAY_S)
                continue
            if self.client is not None:
                await self.client.close()
            self.client = client
            self._has_terminal = health.terminal
            say("")
            return

    async def _open(self) -> tuple[DaemonClient, Health]:
        """A client of the run's daemon once it has proved it is one, and its health."""
        url = await self.backend.endpoint(self.handle)
        client = DaemonClient(url, await self.backend.token(self.handle))
        try:
            # Whoever answers on the run's port must prove it is the run's daemon before
            # anything it says is shown (docs/security.md A2): an impostor is never adopted.
            async with asyncio.timeout(self.identity_limit_s):
                await client.verify()
                return client, await client.health()
        except BaseException:
            await client.close()
            raise

    async def _wait_or_finished(self, delay: float) -> bool:
        """True once the run has stopped and its results are there; otherwise waits ``delay``
        (or until :meth:`reconnect_now`) and returns False."""
        self.handle = await self._refresh()
        if self.handle.status != "running" and await self._finished() is not None:
            return True
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._wake.wait()
        return False

    async def _refresh(self) -> RunHandle:
        try:
            return await self.backend.get(self.run_id)
        except ClientError:
            return self.handle

    async def _finished(self) -> FinishedRunSource | None:
        if self._fallback is None:
            found = await asyncio.to_thread(find_results, self.handle.results_root)
            for item in found:
                if item.summary.run_id == self.run_id:
                    self._fallback = FinishedRunSource(item.path)
        return self._fallback

    def _daemon(self) -> DaemonClient:
        if self.client is None:
            msg = "not connected to the run's daemon yet"
            raise SourceUnavailable(msg)
        return self.client

    async def _or_results(self, name: str, e: Exception) -> FinishedRunSource:
        finished = await self._finished()
        if finished is None:
            msg = f"{name}: {e}"
            raise SourceUnavailable(msg) from e
        return finished

    async def _ask(
        self,
        part: str,
        ask: Callable[[DaemonClient], Awaitable[T]],
        from_results: Callable[[FinishedRunSource], Awaitable[T]],
        *,
        not_yet: tuple[type[ClientError], str] | None = None,
    ) -> T:
        """``ask`` the daemon for ``part``; when it cannot answer, read the run's results.

        ``not_yet`` is the daemon's error meaning the part does not exist yet, and what to say
        then: the results would not have it either, so they are not read.
        """
        try:
            return await ask(self._daemon())
        except (ClientError, SourceUnavailable) as e:
            if not_yet is not None and isinstance(e, not_yet[0]):
                raise SourceUnavailable(not_yet[1]) from e
            return await from_results(await self._or_results(part, e))

    async def meta(self) -> RunMeta:
        return await self._ask("run", self._meta, FinishedRunSource.meta)

    async def _meta(self, daemon: DaemonClient) -> RunMeta:
        info = await daemon.run()
        labels = self.handle.labels
        settings = {"backend": info.backend, "started_at": info.started_at}
        settings.update({k: v for k, v in labels.items() if k in ("srez.results", "srez.version")})
        return RunMeta(
            run_id=info.run_id,
            task_id=info.task.id,
            title=info.task.title,
            difficulty=info.task.difficulty,
            brief=info.task.brief,
            model=info.model,
            agent=info.agent,
            backend=info.backend,
            phase=info.phase,
            version=labels.get("srez.version", ""),
            steps_used=info.steps_used,
            step_budget=info.step_budget,
            settings=settings,
        )

    async def events(self) -> AsyncIterator[SourceEvent]:
        if self.client is None:
            finished = await self._finished()
            if finished is not None:
                async for event in finished.events():
                    yield event
            return
        async for frame in self.client.stream(self.offset):
            if isinstance(frame, DialogFrame):
                self.offset = frame.next_offset
                yield DialogBatch([frame.entry])
            elif not isinstance(frame, HeartbeatFrame):
                yield frame

    async def diff(self) -> str:
        return await self._ask("diff", DaemonClient.diff, FinishedRunSource.diff)

    async def reference(self) -> tuple[str, float | None]:
        refused = (DaemonConflictError, "the reference is shown once the agent phase is over")
        return await self._ask(
            "reference", _reference, FinishedRunSource.reference, not_yet=refused
        )

    async def grade(self) -> dict[str, Any]:
        return await self._ask(
            "grade",
            _grade,
            FinishedRunSource.grade,
            not_yet=(DaemonNotFoundError, "not graded yet"),
        )

    async def summary(self) -> dict[str, Any]:
        finished = await self._finished()
        if finished is None:
            msg = "summary.json is written when the run ends"
            raise SourceUnavailable(msg)
        return await finished.summary()

    def log_names(self) -> list[str]:
        return [*LOG_NAMES, "container"]

    async def logs(self, name: str, *, follow: bool) -> AsyncIterator[str]:
        if name == "container":
            async for chunk in self.backend.logs(self.handle, follow=follow):
                yield chunk
            return
        async for chunk in self._daemon().logs(name, follow=follow):
            yield chunk

    async def dialog_bytes(self) -> bytes:
        return await self._ask("dialog", _dialog_bytes, FinishedRunSource.dialog_bytes)

    async def terminal(self) -> bool:
        return self._terminal_allowed and self._has_terminal and self.client is not None

    async def pty(self, cols: int, rows: int) -> Any:
        if not await self.terminal():
            msg = "this run offers no terminal"
            raise SourceUnavailable(msg)
        # Opening the Terminal tab is the user's explicit act: only here does the viewer make
        # the admin claim the daemon asks of a pty (docs/security.md A4); every other call is
        # view-only.
        return await self._daemon().pty(cols, rows, admin=True)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None


async def _reference(daemon: DaemonClient) -> tuple[str, float | None]:
    text = await daemon.reference()
    return text, (await daemon.similarity()).similarity


async def _grade(daemon: DaemonClient) -> dict[str, Any]:
    return dict(await daemon.grade())


async def _dialog_bytes(daemon: DaemonClient) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:  # entries re-encoded as the daemon wrote them; reader-made errors skipped
        page = await daemon.dialog(offset, limit=5000)
        chunks.extend(encode_entry(e) for e in page.entries if e.type != "error")
        if not page.entries or page.next_offset <= offset:
            break
        offset = page.next_offset
    return b"".join(chunks)
