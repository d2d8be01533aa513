"""Entry point of ``srez-agent``: the act/observe loop over the agent socket.

``act`` runs in a worker thread, so the event loop stays free to post the agent's notes (the LLM
agent's ``assistant``, ``thinking``, ``usage`` and ``provider_error`` entries) to ``POST /dialog``
while the agent waits: a ``provider_error`` is posted *before* its backoff or cooldown starts, so
the daemon can exclude the wait from the time limit as it happens.

Exit codes: 0 the episode ended (submit, budget, or the agent phase closed); 2 bad configuration
(one ``srez-agent: error:`` line on stderr); 75 (``EX_TEMPFAIL``) the model provider failed for
good (attempts exhausted, auth refused, a ``Retry-After`` too long). Before exiting 75 the agent
has posted a ``provider_error`` entry with ``retry_in_s: null``; the daemon records the run with
``error_kind: "provider"``, so it is retried by a managed run, never counted as the model's
failure.

The LLM agents call their model through :class:`~srez_daemon.agent.model_client.HTTPModelClient`
(OpenAI-compatible HTTP with the standard library): this process never imports litellm. On
``local`` and ``docker`` the base URL is the launcher's model relay; headless, any
OpenAI-compatible server (see :mod:`srez_daemon.agent.model_client`).

A reply the LLM agent could not turn into a call (raw text) goes to ``POST /tools/_reply`` as
``{"text": ...}``: the daemon hands the text to the environment, which rejects it with a coded
error (``PARSE_ERROR``, ``BAD_ARGS``) and counts the step (:mod:`srez_daemon.record.episode`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

import aiohttp

from srez_daemon.agent.model_client import HTTPModelClient
from srez_daemon.protocol.agent import EXIT_PROVIDER, SUBMIT_TOOL, tool_call
from srez_daemon.protocol.api import AgentTask
from srez_env.agents import build_agent
from srez_env.agents.llm import LLM_SPECS, LLMSettings, Note
from srez_env.agents.llm_retry import ProviderGaveUp
from srez_env.errors import EnvError

logger = logging.getLogger("srez_daemon.agent")
BASE = "http://agent"  # the host part is ignored on a unix socket


def route(action: dict[str, Any] | str) -> tuple[str, dict[str, Any]]:
    """The agent socket path and JSON body of an action."""
    tool, body = tool_call(action)
    if tool == SUBMIT_TOOL:
        return f"{BASE}/submit", body
    return f"{BASE}/tools/{tool}", body


async def run_agent(socket: str, spec: str, run_seed: int, environ: Mapping[str, str]) -> int:
    """Plays one episode; the exit code the agent process ends with."""
    connector = aiohttp.UnixConnector(path=socket)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
    loop = asyncio.get_running_loop()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:

        async def post_note(note: Note) -> None:
            async with http.post(f"{BASE}/dialog", json=note) as resp:
                if resp.status >= 300:  # a note refused (the phase ended): the episode goes on
                    logger.warning("note %s refused: %s", note["type"], await resp.text())

        def on_note(note: Note) -> None:  # called from the worker thread running act()
            asyncio.run_coroutine_threadsafe(post_note(note), loop).result()

        async with http.get(f"{BASE}/task") as resp:
            resp.raise_for_status()
            task = AgentTask.model_validate(await resp.json())
        oracle = None
        if task.oracle is not None:  # the scripted expert alone: the task models load only then
            from srez_env.task import Task

            oracle = Task.model_validate(task.oracle)
        client = None
        if spec in LLM_SPECS:
            client = HTTPModelClient(LLMSettings.from_env(environ, spec=spec), environ)
        agent = build_agent(
            spec,
            task_id=task.task_id,
            run_seed=run_seed,
            oracle=oracle,
            environ=environ,
            client=client,
            on_note=on_note,
        )
        observation: dict[str, Any] = task.prompt
        while True:
            try:
                action = await asyncio.to_thread(agent.act, observation)
            except ProviderGaveUp as e:
                logger.error("%s", e)
                return EXIT_PROVIDER
            url, body = route(action)
            async with http.post(url, json=body) as resp:
                if resp.status == 409:
                    logger.info("the agent phase is over")
                    return 0
                resp.raise_for_status()
                observation = await resp.json()
            if observation.get("done"):
                return 0


def main() -> None:
    """Runs the agent named by the environment; exit 0 when the episode ended normally."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    socket = os.environ.get("SREZ_AGENT_SOCKET", "")
    if not socket:
        print("srez-agent: error: SREZ_AGENT_SOCKET is not set", file=sys.stderr)
        sys.exit(2)
    spec = os.environ.get("SREZ_AGENT_SPEC", "heuristic")
    try:
        seed = int(os.environ.get("SREZ_RUN_SEED", "0"))
        code = asyncio.run(run_agent(socket, spec, seed, dict(os.environ)))
        # the thin-agent promise, checkable in logs/agent.log (tests read this line)
        logger.info("exit %d; litellm imported: %s", code, "litellm" in sys.modules)
        sys.exit(code)
    except (EnvError, ValueError) as e:
        print(f"srez-agent: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
