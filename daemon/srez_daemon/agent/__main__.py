"""Entry point of ``srez-agent``: the act/observe loop over the agent socket."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

import aiohttp

from srez_daemon.protocol.api import AgentTask
from srez_env.agents import build_agent
from srez_env.errors import EnvError
from srez_env.task import Task

logger = logging.getLogger("srez_daemon.agent")
BASE = "http://agent"  # the host part is ignored on a unix socket


async def run_agent(socket: str, spec: str, run_seed: int) -> int:
    """Plays one episode; the exit code the agent process ends with."""
    connector = aiohttp.UnixConnector(path=socket)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        async with http.get(f"{BASE}/task") as resp:
            resp.raise_for_status()
            task = AgentTask.model_validate(await resp.json())
        oracle = Task.model_validate(task.oracle) if task.oracle is not None else None
        agent = build_agent(spec, task_id=task.task_id, run_seed=run_seed, oracle=oracle)
        observation: dict[str, Any] = task.prompt
        while True:
            action = agent.act(observation)
            tool = str(action.get("tool", ""))
            args = action.get("args", {})
            url = f"{BASE}/submit" if tool == "submit" else f"{BASE}/tools/{tool}"
            async with http.post(url, json=args if isinstance(args, dict) else {}) as resp:
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
        sys.exit(asyncio.run(run_agent(socket, spec, seed)))
    except (EnvError, ValueError) as e:
        print(f"srez-agent: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
