"""Entry point of ``srez-agent``: the act/observe loop over the agent socket.

Synchronous, with the standard library's ``http.client`` over the unix socket (no event loop, no
aiohttp, no pydantic: the process starts in about 0.08 s of imports). The LLM agent's notes (``assistant``,
``thinking``, ``usage`` and ``provider_error``) are posted to ``POST /dialog`` as they are made,
from inside ``act``: a ``provider_error`` is posted *before* its backoff or cooldown starts, so the
daemon can exclude the wait from the time limit as it happens.

Exit codes: 0 the episode ended (submit, budget, or the agent phase closed); 2 bad configuration
(one ``srez-agent: error:`` line on stderr); 75 (``EX_TEMPFAIL``) the model provider failed for
good (attempts exhausted, auth refused, a ``Retry-After`` too long). Before exiting 75 the agent
has posted a ``provider_error`` entry with ``retry_in_s: null``; the daemon records the run with
``error_kind: "provider"``, so it is retried by a managed run, never counted as the model's
failure. 76 the model's own limit ended the episode (its context window is exhausted, its
content filter refused): ``error_kind: "model_limit"``, graded on the state reached and counted,
never retried (:mod:`srez_env.agents.failures`).

The LLM agents call their model through :class:`~srez_daemon.agent.model_client.HTTPModelClient`
(OpenAI-compatible HTTP with the standard library): this process never imports litellm. On
``local`` and ``docker`` the base URL is the launcher's model relay; headless, any
OpenAI-compatible server (see :mod:`srez_daemon.agent.model_client`).

A reply the LLM agent could not turn into a call (raw text) goes to ``POST /tools/_reply`` as
``{"text": ...}``: the daemon hands the text to the environment, which rejects it with a coded
error (``PARSE_ERROR``, ``BAD_ARGS``) and counts the step (:mod:`srez_daemon.record.episode`).
"""

# ruff: noqa: E402 - the imports after tls_unused() follow its choice (see there)
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from srez_env import agent_registry

BUILT_IN_WITHOUT_NETWORK = agent_registry.WITHOUT_NETWORK
"""The built-in agents that speak to nothing but the agent socket."""
TLS_FREE_BASES = ("http://",)


def tls_unused(environ: Mapping[str, str]) -> bool:
    """Whether this agent process can never speak TLS: a built-in baseline, or a built-in LLM
    agent whose base URL is plain ``http://`` (the launcher's model relay). A Python agent
    (``package.module:Class``) or an ``https`` model endpoint keeps TLS."""
    spec = environ.get("SREZ_AGENT_SPEC", "heuristic")
    if spec in BUILT_IN_WITHOUT_NETWORK or spec.startswith("replay:"):
        return True
    if spec not in agent_registry.LLM:
        return False
    names = ("SREZ_LLM_API_BASE", "OPENAI_API_BASE", "OPENAI_BASE_URL")
    base = next((v.strip() for n in names if (v := environ.get(n, "")).strip()), "")
    return base.startswith(TLS_FREE_BASES)


if __name__ == "__main__" and tls_unused(os.environ):
    # http.client imports ssl whether or not it is used, and OpenSSL then costs every agent
    # process about 4.7 MB of private memory (a fifth of a thin agent; 470 MB at 100 runs).
    # An agent that can never speak TLS goes without: http.client then simply has no
    # HTTPSConnection.
    sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]

import http.client
import json
import socket as sockets
import time
from typing import Any, Final

from srez_daemon.agent.model_client import HTTPModelClient
from srez_daemon.protocol.agent import (
    EXIT_MODEL_LIMIT,
    EXIT_PROVIDER,
    SUBMIT_TOOL,
    parse_agent_task,
    tool_call,
)
from srez_env.agents import build_agent
from srez_env.agents.llm import LLM_SPECS, LLMSettings, Note
from srez_env.agents.llm_retry import ModelLimitReached, ProviderGaveUp
from srez_env.errors import EnvError

LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(message)s"
"""The agent log's lines (``logs/agent.log``), written by :func:`say` or by ``logging``."""
READ_TIMEOUT_S: Final = 600.0
"""Longest wait for one answer of the agent socket (a tool call runs in the daemon)."""


def say(level: str, message: str) -> None:
    """One line of the agent log on stderr, as ``logging`` formats it with :data:`LOG_FORMAT`.

    The agent does without ``logging`` (with what it imports, about 1 MB of a thin agent's 10
    of private memory, 100 MB at 100 runs) unless the agent it runs imported it, in which case
    ``logging`` is set up as before and this line goes through it (:func:`_log_with_logging`).
    """
    if "logging" in sys.modules:
        _log_with_logging(level, message)
        return
    now = time.time()  # noqa: TID251 - a log line's wall time, as logging stamps it
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    print(f"{stamp},{int(now % 1 * 1000):03d} {level} {message}", file=sys.stderr, flush=True)


def _log_with_logging(level: str, message: str) -> None:
    _set_up_logging()
    import logging

    logging.getLogger("srez_daemon.agent").log(logging.getLevelName(level), "%s", message)


def _set_up_logging() -> None:
    """The root logger writes :data:`LOG_FORMAT` to stderr from INFO (once: ``basicConfig``
    leaves a root logger that has a handler alone)."""
    import logging

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)


class AgentSocketError(Exception):
    """The agent socket answered an unexpected status."""


class UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over the agent's unix socket."""

    def __init__(self, path: str, timeout: float = READ_TIMEOUT_S) -> None:
        super().__init__("agent", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class AgentSocket:
    """The agent socket's client: one kept-alive connection, JSON in and out."""

    def __init__(self, path: str) -> None:
        self._conn = UnixConnection(path)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request; the status and the decoded JSON answer (None when it is not JSON)."""
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        for attempt in (1, 2):  # a kept-alive connection the server closed: once more, anew
            try:
                self._conn.request(method, path, body=payload, headers=headers)
                response = self._conn.getresponse()
                raw = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._conn.close()
                if attempt == 2:
                    raise
        if response.will_close:
            self._conn.close()
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")

    def close(self) -> None:
        self._conn.close()


def route(action: dict[str, Any] | str) -> tuple[str, dict[str, Any]]:
    """The agent socket path and JSON body of an action."""
    tool, body = tool_call(action)
    if tool == SUBMIT_TOOL:
        return "/submit", body
    return f"/tools/{tool}", body


def run_agent(socket: str, spec: str, run_seed: int, environ: Mapping[str, str]) -> int:
    """Plays one episode; the exit code the agent process ends with.

    Raises:
        AgentSocketError: The socket refused the task or an action (other than 409, the phase
            being over).
    """
    agent_socket = AgentSocket(socket)
    try:
        return _play(agent_socket, spec, run_seed, environ)
    finally:
        agent_socket.close()


def _play(agent_socket: AgentSocket, spec: str, run_seed: int, environ: Mapping[str, str]) -> int:
    def on_note(note: Note) -> None:  # called from inside act()
        status, answer = agent_socket.call("POST", "/dialog", note)
        if status >= 300:  # a note refused (the phase ended): the episode goes on
            say("WARNING", f"note {note['type']} refused: {answer}")

    status, answer = agent_socket.call("GET", "/task")
    if status != 200:
        msg = f"GET /task answered {status}: {answer}"
        raise AgentSocketError(msg)
    task = parse_agent_task(answer)
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
    if "logging" in sys.modules:  # an agent of the user's that logs: its lines go to the log
        _set_up_logging()
    observation: dict[str, Any] = task.prompt
    while True:
        try:
            action = agent.act(observation)
        except ProviderGaveUp as e:
            say("ERROR", str(e))
            return EXIT_PROVIDER
        except ModelLimitReached as e:
            say("ERROR", str(e))
            return EXIT_MODEL_LIMIT
        path, body = route(action)
        status, answer = agent_socket.call("POST", path, body)
        if status == 409:
            say("INFO", "the agent phase is over")
            return 0
        if status >= 300 or not isinstance(answer, dict):
            msg = f"POST {path} answered {status}: {answer}"
            raise AgentSocketError(msg)
        observation = answer
        if observation.get("done"):
            return 0


def main() -> None:
    """Runs the agent named by the environment; exit 0 when the episode ended normally."""
    socket = os.environ.get("SREZ_AGENT_SOCKET", "")
    if not socket:
        print("srez-agent: error: SREZ_AGENT_SOCKET is not set", file=sys.stderr)
        sys.exit(2)
    spec = os.environ.get("SREZ_AGENT_SPEC", "heuristic")
    try:
        seed = int(os.environ.get("SREZ_RUN_SEED", "0"))
        code = run_agent(socket, spec, seed, dict(os.environ))
        # the thin-agent promise, checkable in logs/agent.log (tests read this line)
        say("INFO", f"exit {code}; litellm imported: {'litellm' in sys.modules}")
        sys.exit(code)
    except (EnvError, ValueError) as e:
        print(f"srez-agent: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
