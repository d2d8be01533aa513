"""The ``inline`` backend's run: one episode in this process, no daemon (docs/design.md §9).

The simulator and the agent run in the calling thread, and the run is recorded by the daemon's own
recorder (:class:`srez_daemon.record.episode.Episode`): the dialog, the transcript, the world
files, the patches and the grade are written exactly as a daemon writes them, and each action goes
through the same translation the daemon's agent process applies
(:func:`srez_daemon.protocol.agent.tool_call`), so an inline run's dialog is a daemon run's, ids
and times aside. This module only drives the agent and writes ``run.json`` and ``summary.json``
into the results layout (:mod:`srez_client.layout`).

LLM agents are refused (one-line :class:`~srez_env.agents.AgentSpecError`): they call their model
from ``srez-agent``, with provider retries, waits excluded from the time limit and credentials kept
out of this process; the ``local`` backend runs them with the same results layout.

Nothing is lost when the agent fails: if ``act`` raises, the episode is ended with
``force_submit("agent_exit")``, graded as it stands (``error_kind`` ``agent``), the dialog ends
with ``session_failed`` and ``summary.json`` has status ``error``. When the agent keeps acting, the
environment ends the episode itself once the step budget is used. An interrupted run (Ctrl-C:
``KeyboardInterrupt``) leaves nothing: its ``.<run-id>.partial`` folder is deleted before the
interrupt goes on.

:class:`~srez_client.backends.inline.backend.InlineBackend` puts :func:`run_inline` behind the
common backend interface.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from srez_client.errors import ResultsError
from srez_client.layout import RandomBytes, RunFolder, new_run_id, run_path
from srez_core.clock import Clock, system_clock, utc_timestamp
from srez_daemon.protocol import RunManifest, RunSummary, srez_version
from srez_daemon.protocol.agent import SUBMIT_TOOL, tool_call
from srez_daemon.protocol.api import submit_args
from srez_daemon.record.episode import Episode, run_summary
from srez_daemon.record.folder import RunPaths
from srez_env.agents import Agent, AgentSpecError, make_agent
from srez_env.agents.llm import LLM_SPECS
from srez_env.grade import Grade
from srez_env.provenance import task_provenance
from srez_env.task import Task

logger = logging.getLogger(__name__)

BACKEND: Final = "inline"
"""Name of this backend in ``run.json``."""

Timer = Callable[[], float]
"""A monotonic clock in seconds (``time.perf_counter`` in production)."""

Commit = Callable[[RunFolder], None]
"""Completes a finished run folder, now or later (:class:`~srez_client.commit_queue.CommitQueue`)."""


@dataclass(frozen=True, slots=True)
class InlineRun:
    """A finished inline run."""

    run_id: str
    """The run id."""
    run_dir: Path
    """The completed run folder."""
    grade: Grade
    """The grade (also in ``result.json``)."""
    summary: RunSummary
    """What ``summary.json`` says (status, reward, error ...)."""

    @property
    def error(self) -> str | None:
        """What went wrong, or None when the run ended normally."""
        return self.summary.error


def run_inline(
    task: Task,
    agent_spec: str,
    run_seed: int,
    results_root: Path,
    *,
    clock: Clock = system_clock,
    timer: Timer = time.perf_counter,
    random_bytes: RandomBytes = os.urandom,
    commit: Commit | None = None,
    task_set_digest: str | None = None,
) -> InlineRun:
    """Run one episode of ``task`` with the agent ``agent_spec`` and write its run folder.

    Args:
        task: The task.
        agent_spec: ``scripted``, ``heuristic``, ``random`` or ``replay:PATH``.
        run_seed: Seed of the run.
        results_root: Root of the results layout (``./results`` on the command line).
        clock: Wall clock, for the run id and the timestamps.
        timer: Monotonic clock, for durations.
        random_bytes: Randomness of the run id.
        commit: Completes the finished folder (a
            :meth:`~srez_client.commit_queue.CommitQueue.submit`: the folder is final a flush
            later); None completes it before returning.
        task_set_digest: The digest of the set ``task`` was chosen from, as ``run.json``
            records it (None: the packaged set's for a packaged task, else unrecorded).

    Returns:
        The run, with its grade and its final folder.

    Raises:
        srez_env.errors.EnvError: If the agent cannot be made (unknown agent, malformed replay
            file); nothing is written then.
        srez_client.errors.ResultsError: If the run folder cannot be created.
    """
    start = timer()
    agent = make_agent(agent_spec, task, run_seed)
    if agent.name in LLM_SPECS:
        msg = f"the inline backend runs the baselines only: run {agent_spec!r} with --backend local or docker"
        raise AgentSpecError(msg)
    # the baselines have no model; LLM agents run under a daemon
    hosted = HostedRun.open(
        task,
        RunIdentity(agent=agent.name, agent_spec=agent_spec, model="none", run_seed=run_seed),
        results_root,
        clock=clock,
        timer=timer,
        random_bytes=random_bytes,
        start=start,
        task_set_digest=task_set_digest,
    )
    try:
        return hosted.end(_play(hosted.episode, agent), commit=commit)
    except ResultsError:  # the final folder appeared meanwhile: the partial one is kept, and said
        raise
    except BaseException:  # Ctrl-C included: no half-written run folder is left behind
        hosted.discard()
        raise


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """Who plays a hosted run, as ``run.json`` records it."""

    agent: str
    """The agent's name (the results folder it is filed under)."""
    agent_spec: str
    """The agent as requested (``scripted``, ``mcp:NAME`` ...)."""
    model: str
    """The model slug, ``none`` without one."""
    run_seed: int
    """Seed of the run."""


class HostedRun:
    """One run in this process, from ``run.json`` to ``summary.json``: its folder, its dialog and
    its episode, driven by whoever calls :attr:`episode` (an agent's ``act`` loop, or the tool
    calls of an MCP client), then ended once with :meth:`end` or :meth:`discard`."""

    def __init__(
        self,
        folder: RunFolder,
        manifest: RunManifest,
        episode: Episode,
        closing: contextlib.ExitStack,
        *,
        clock: Clock,
        timer: Timer,
        start: float,
    ) -> None:
        self.folder = folder
        self.manifest = manifest
        self.episode = episode
        self._closing = closing
        self._clock = clock
        self._timer = timer
        self._start = start

    @classmethod
    def open(
        cls,
        task: Task,
        who: RunIdentity,
        results_root: Path,
        *,
        clock: Clock = system_clock,
        timer: Timer = time.perf_counter,
        random_bytes: RandomBytes = os.urandom,
        start: float | None = None,
        task_set_digest: str | None = None,
    ) -> HostedRun:
        """Creates the run folder, writes ``run.json``, opens the dialog and starts the episode
        (its opening entries and world files written; the prompt is ``episode.prompt``).

        Raises:
            srez_client.errors.ResultsError: If the run folder cannot be created.
        """
        begun = timer() if start is None else start
        started = clock()
        run_id = new_run_id(started, random_bytes)
        # no flush per dialog entry: complete() makes the whole folder durable before its rename
        final_dir = run_path(results_root, task.id, who.model, who.agent, run_id)
        folder = RunFolder.create(final_dir, sync=False)
        closing = contextlib.ExitStack()
        try:
            manifest = RunManifest(
                run_id=run_id,
                task_id=task.id,
                agent=who.agent,
                agent_spec=who.agent_spec,
                model=who.model,
                backend=BACKEND,
                run_seed=who.run_seed,
                srez_version=srez_version(),
                started_at=utc_timestamp(started),
            ).model_copy(update=task_provenance(task, task_set_digest))
            folder.write_json("run.json", manifest)
            paths = RunPaths(folder.partial_dir)
            dialog = closing.enter_context(folder.open_dialog(clock=clock))
            episode = Episode(task, manifest, paths, dialog, timer=timer, sync=folder.sync)
            closing.callback(episode.close)
            episode.start()
        except BaseException:
            closing.close()
            folder.discard()
            raise
        return cls(folder, manifest, episode, closing, clock=clock, timer=timer, start=begun)

    def end(self, error: str | None, *, commit: Commit | None = None) -> InlineRun:
        """Ends the run (the episode must be over): the closing dialog entry, the patches, the
        grade, ``summary.json``, and the folder under its final name. ``error`` is what went wrong
        with the agent (the run then counts as the agent's error), None when it ended normally.
        ``commit`` completes the folder (see :func:`run_inline`); None completes it here."""
        episode = self.episode
        try:
            episode.finish("failed" if error else "completed", error)
        finally:
            self._closing.close()
        episode.seal()
        grade = episode.grade("agent" if error else None)
        summary = run_summary(
            self.manifest,
            episode,
            error=error,
            error_kind="agent",
            grade=grade,
            end_reason=episode.end_reason,
            duration_s=self._timer() - self._start,
            finished_at=self._clock(),
        )
        self.folder.write_json("summary.json", summary)
        if commit is None:
            run_dir = self.folder.complete()
        else:
            commit(self.folder)
            run_dir = self.folder.final_dir
        m = self.manifest
        logger.info("run %s: %s on %s, reward %.3f", m.run_id, m.agent, m.task_id, summary.reward)
        return InlineRun(run_id=m.run_id, run_dir=run_dir, grade=grade, summary=summary)

    def discard(self) -> None:
        """Deletes the half-written run (Ctrl-C): nothing of it stays."""
        self._closing.close()
        self.folder.discard()


def _play(episode: Episode, agent: Agent) -> str | None:
    """Drives the agent until the episode ends; what went wrong with the agent, or None."""
    observation: Mapping[str, Any] = episode.prompt
    while not episode.done:
        try:
            tool, args = tool_call(agent.act(dict(observation)))
            if tool == SUBMIT_TOOL:  # as the agent process posts it: POST /submit
                args = submit_args(args)
        except Exception as e:  # the agent is untrusted code: any failure ends its phase
            logger.info("agent %s failed: %s", agent.name, e)
            logger.debug("traceback of the agent's failure", exc_info=True)
            episode.force_submit("agent_exit")
            return _one_line(f"agent {agent.name} raised {type(e).__name__}: {e}")
        observation = episode.call(tool, args).observation
        if episode.turns > episode.task.max_steps and not episode.done:
            episode.force_submit("step_budget")  # the env ends at its budget; never loop forever
    return None


def _one_line(text: str, limit: int = 500) -> str:
    """Collapse a message to one line of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
