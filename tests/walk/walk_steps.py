"""The README walk's steps: every README command, as a newcomer runs them on a fresh clone.

Every command line of README.md's ``sh`` blocks is either walked here or listed in
:data:`NOT_WALKED` with the reason; ``test_readme_covered.py`` fails on a README command nobody
walks, and the ``test_walk_*`` files beside it walk these tables section by section (one file
each, so the suite's workers share them). Each line is walked by one or more concrete steps (:class:`walk_kit.Step`):
placeholders (``RUN``, ``CMD``, ``[--keep]``) get real values, and every option the README line
shows is passed. Where a line runs
the whole task set on a daemon backend, or generates 200 tasks, the walk narrows the value
(``--tasks sre-001,sre-007``, ``--count 20``) so the suite stays within minutes; the inline
baseline sweep runs as written.

What the walk stands in for, and why:

* LLM lines run against a scripted OpenAI-compatible server on loopback (``tests/fakes``), through
  litellm's own ``OPENAI_API_BASE``: the only offline way to run them, and the code path is the
  real one. ``OPENAI_API_KEY=...`` gets a placeholder key, the ``127.0.0.1:8000`` of the local
  server example becomes the fake's port.
* The terminal UI lines run in tmux, with flow control on as in a user's terminal.
* The Docker lines run where an engine answers (the docker marker: a skip becomes a failure with
  ``REQUIRE_DOCKER=1``), against the run image ``make image`` built.
"""

from __future__ import annotations

import re

from walk_kit import Step

from srez_daemon.protocol import srez_version as version_of
from srez_env.actions import TOOLS
from srez_env.agents import make_agent
from srez_env.env import SREEnv
from srez_env.tasks import load_tasks

VERSION = version_of()
RUN_ID = r"\d{8}T\d{6}Z-[0-9a-f]{8}"
RESULTS_RUN = rf"results/sre-007/none/scripted/(?P<finished>{RUN_ID})"


def expert_moves(task_id: str) -> list[dict[str, object]]:
    """The scripted expert's actions on ``task_id``, in order."""
    task = load_tasks([task_id])[0]
    env, oracle = SREEnv(task), make_agent("scripted", task)
    observation: object = env.reset()
    moves = []
    while not env.done:
        action = oracle.act(observation)
        assert isinstance(action, dict)
        moves.append(action)
        observation = env.step(action).observation
    return moves


def typed(move: dict[str, object]) -> str:
    """A move as a person types it at ``srez play``'s prompt: ``tool value ...``."""
    args = move["args"]
    assert isinstance(args, dict)
    return " ".join([str(move["tool"]), *map(str, args.values())])


MY_AGENTS = '''\
class MyAgent:
    """Looks at the alerts, then submits: the smallest agent a class can be."""

    name = "my-agent"

    def __init__(self, task_id):
        self.task_id = task_id
        self.moves = iter(["get_alerts", "submit"])

    def act(self, observation):
        return {"tool": next(self.moves), "args": {}}
'''

MY_MCP_CLIENT = '''\
"""A small MCP client: plays a replay file (one {"tool", "args"} a line) on an MCP server.

    python3 my_mcp_client.py ACTIONS -- SERVER COMMAND...

It starts the server's command (a $VARIABLE in it is taken from the environment). On stdio by
default; when the command has --http, it reads the line the server writes on stderr for the URL
and the header (or the file the token is in), shows that a call without the token is refused,
and then plays over streamable HTTP with the header.
"""

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import httpx2
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcp import Client, StdioServerParameters


async def play(client, actions):
    tools = (await client.list_tools()).tools
    print(f"{len(tools)} tools; prompt: {client.instructions.splitlines()[0]}", flush=True)
    for action in actions:
        result = await client.call_tool(action["tool"], action["args"])
        print(action["tool"], "error" if result.is_error else "ok", flush=True)


async def over_http(command, actions):
    server = await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.PIPE)
    line = (await server.stderr.readline()).decode()
    print(line, end="", flush=True)
    url = re.search(r"http://127\\.0\\.0\\.1:\\d+/mcp", line).group(0)
    header = re.search(r'"Authorization: (Bearer [^"]+)"', line).group(1)
    token_file = re.search(r"with the token in (\\S+)$", line)
    if token_file:
        header = "Bearer " + Path(token_file.group(1)).read_text().strip()
    async with httpx2.AsyncClient(timeout=60) as http:
        refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        print("without the token:", refused.status_code, refused.text, flush=True)
    async with (
        httpx2.AsyncClient(headers={"Authorization": header}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await play(client, actions)
    server.terminate()
    await server.wait()


def main():
    actions = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    command = [os.path.expandvars(arg) for arg in sys.argv[sys.argv.index("--") + 1 :]]
    if "--http" in command:
        asyncio.run(over_http(command, actions))
        return
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    asyncio.run(_stdio(params, actions))


async def _stdio(params, actions):
    async with Client(stdio_client(params)) as client:
        await play(client, actions)


if __name__ == "__main__":
    main()
'''
"""The MCP client a reader has (any would do: this one is the ``mcp`` library's), written into the
clone as ``my_mcp_client.py``: the walk drives ``srez mcp`` with it."""

# ------------------------------------------------------------------ the walk, section by section
COMMANDS: list[tuple[str, tuple[Step, ...]]] = [
    ("srez --version", (Step("srez --version", rf"^srez {re.escape(VERSION)} \(protocol"),)),
    ("srez tasks list", (Step("srez tasks list", r"^sre-040 "),)),
    ("srez tasks show sre-007", (Step("srez tasks show sre-007", r"sre-007"),)),
    (
        "srez tasks show sre-007 --private",
        (Step("srez tasks show sre-007 --private", r"(?i)root.cause"),),
    ),
    (
        "srez eval --agent scripted,diagnostician,heuristic,random,noop,restart-all --tasks all --seeds 1"
        " --backend inline",
        (
            Step(
                "srez eval --agent scripted,diagnostician,heuristic,random,noop,restart-all --tasks all --seeds 1"
                " --backend inline",
                r"(?s)^ +1 +scripted +> +40 +1\.000 \[1\.00, 1\.00\] .*^ +\d +noop \(floor\) .*"
                r"^240 runs written under results",
            ),
        ),
    ),
    (
        "srez eval --agent random --tasks sre-007,sre-025 --seeds 5 --json",
        (Step("srez eval --agent random --tasks sre-007,sre-025 --seeds 5 --json", r'"agents"'),),
    ),
    (
        "srez eval --agent replay:my-actions.jsonl --tasks sre-007",
        (
            Step(
                "srez eval --agent replay:my-actions.jsonl --tasks sre-007",
                r"^ +1 +replay +\S+ +1 +1\.000 ",
            ),
        ),
    ),
    (
        "srez eval --agent scripted,random --tasks all --seeds 3 --resume",
        (
            # done before: seed 0 of both agents (the sweep), seeds 1-4 of random on two tasks
            Step(
                "srez eval --agent scripted,random --tasks sre-001,sre-007,sre-025 --seeds 3"
                " --resume",
                r"srez: 10 of 18 runs already complete under results",
            ),
        ),
    ),
    (
        "srez eval --agent my_agents:MyAgent --tasks sre-007 --limit 5",
        (
            Step(
                "srez eval --agent my_agents:MyAgent --tasks sre-007 --limit 5",
                r"^ +\d +my-agent +\S+ +1 ",
            ),
        ),
    ),
    (
        "srez play sre-007",
        (
            Step(
                "srez play sre-007",
                r"resolved True, passed True",
                stdin="\n".join(map(typed, expert_moves("sre-007"))) + "\n",
            ),
        ),
    ),
    ("srez schema dialog", (Step("srez schema dialog | python3 -m json.tool", r'"\$schema"'),)),
    (
        "srez tasks generate --seed 1234 --count 200 --out sets/s1234",
        (
            Step(
                "srez tasks generate --seed 1234 --count 20 --out sets/s1234",
                r"wrote 20 verified tasks",
            ),
        ),
    ),
    (
        "srez tasks generate --seed 7 --count 30 --kinds memory_leak,disk_full --difficulty hard --out sets/h7",
        (
            Step(
                "srez tasks generate --seed 7 --count 6 --kinds memory_leak,disk_full"
                " --difficulty hard --out sets/h7",
                r"wrote 6 verified tasks",
            ),
        ),
    ),
    (
        "srez eval --agent heuristic --tasks-dir sets/s1234 --tasks all",
        (
            Step(
                "srez eval --agent heuristic --tasks-dir sets/s1234 --tasks all",
                r"^ +\d +heuristic +\S+ +20 ",
            ),
        ),
    ),
    (
        "srez eval --agent heuristic --task-seed 8675309",
        (
            Step(
                "srez eval --agent heuristic --task-seed 8675309",
                r"^provenance: generated \(srez-worlds/\d+, seed 8675309, 40 tasks, set [0-9a-f]{16}\)",
            ),
        ),
    ),
    ("srez runs results", (Step("srez runs results", RESULTS_RUN),)),
    (
        "srez runs results --agent random --status resolved --json",
        (
            Step("srez runs results --agent random --status resolved --json", r"^\[\]$"),
            Step(
                "srez runs results --agent scripted --status resolved --task sre-007 --model none"
                " --json",
                r'"agent": "scripted"',
            ),
        ),
    ),
    (
        "srez export atif RUN",
        (
            Step(
                "srez export atif {finished} && python3 -m json.tool"
                " results/sre-007/none/scripted/{finished}/archive/trajectory.json",
                r'"schema_version": "ATIF-v1\.8"',
            ),
        ),
    ),
    ("srez export atif --all", (Step("srez export atif --all", r"archive/trajectory\.json"),)),
    (
        "source <(srez completion bash)",
        (Step("source <(srez completion bash) && complete -p srez", r"complete .* srez$"),),
    ),
]

LOCAL_RUNS: list[tuple[str, tuple[Step, ...]]] = [
    (
        "srez run --task sre-007 --agent heuristic --backend local [--keep] [--timeout S]",
        (
            Step(
                "srez run --task sre-007 --agent heuristic --backend local --keep --timeout 120",
                rf"^run: +(?P<run>{RUN_ID}) \(sre-007, heuristic",
            ),
        ),
    ),
    ("srez runs list [--all]", (Step("srez runs list --all", r"{run} +sre-007 +heuristic"),)),
    (
        "srez runs url RUN | token RUN",
        (
            Step("srez runs url {run}", r"^http://127\.0\.0\.1:\d+$"),
            Step("srez runs token {run}", r"^[0-9a-f]{64}$|^[\w-]{40,}$"),
        ),
    ),
    (
        'curl -H "Authorization: Bearer $(srez runs token RUN)" "$(srez runs url RUN)/api/grade"',
        (
            Step(
                'curl -sf -H "Authorization: Bearer $(srez runs token {run})"'
                ' "$(srez runs url {run})/api/grade"',
                r'"task_id": "sre-007"',
            ),
        ),
    ),
    (
        "srez runs exec RUN [--tty] -- CMD",
        (
            Step("srez runs exec {run} -- echo walked", r"^walked$"),
            # --tty wants a terminal on stdin: `script` gives it one
            Step(
                "script -qec 'srez runs exec {run} --tty -- echo tty-walked' /dev/null",
                r"^tty-walked",
            ),
        ),
    ),
    (
        "srez attach RUN --plain",
        (Step("srez attach {run} --plain", r"session completed after \d+ turns"),),
    ),
    ("srez runs stop RUN | rm RUN", (Step("srez runs stop {run}", r"{run}: stopped"),)),
    (
        "srez runs logs RUN [--follow]",
        (
            Step("srez runs logs {run}", r"phase done"),
            # the daemon has stopped: following ends with its last line
            Step("srez runs logs {run} --follow", r"exiting \(phase done\)\s*\Z"),
        ),
    ),
    ("srez mirror RUN", (Step("srez mirror {run}", r"{run}: skipped \(already mirrored"),)),
    ("srez regrade RUN", (Step("srez regrade {run}", r"{run}: already graded"),)),
    (
        "srez runs prune [--yes]",
        (
            Step("srez runs prune", r"{run}: would be removed"),
            Step("srez runs prune --yes", r"{run}: removed"),
            Step("srez runs rm {run}", r"{run}: already gone"),  # the rest of `stop | rm`
            Step("srez runs list --all && srez runs results", r"{run} +sre-007 +none +heuristic"),
        ),
    ),
    (
        "srez eval --backend local --parallel 4 --agent scripted,heuristic --tasks all",
        (
            Step(
                "srez eval --backend local --parallel 4 --agent scripted,heuristic"
                " --tasks sre-001,sre-007",
                r"^ +1 +scripted +\S+ +2 +1\.000 ",
            ),
        ),
    ),
    (
        "srez run --task sre-007 --agent heuristic --backend local --keep",
        (
            Step(
                "srez run --task sre-007 --agent heuristic --backend local --keep",
                rf"^run: +(?P<kept>{RUN_ID})",
            ),
            Step("srez runs stop {kept}", r"{kept}: stopped"),
        ),
    ),
    (
        "srez run --task sre-007 --agent cmd:my-agent --agent-cmd 'python3 examples/byo_agent.py'",
        (
            Step(
                "srez run --task sre-007 --agent cmd:my-agent --agent-cmd"
                " 'python3 examples/byo_agent.py'",
                r"results/sre-007/none/my-agent/",
            ),
        ),
    ),
    (
        """SREZ_AGENT_CMD='["python3", "examples/byo_agent.py"]' srez run --task sre-007 --agent cmd:my-agent""",
        (
            Step(
                """SREZ_AGENT_CMD='["python3", "examples/byo_agent.py"]' srez run --task sre-007"""
                " --agent cmd:my-agent",
                r"results/sre-007/none/my-agent/",
            ),
        ),
    ),
]

LLM = "openai/gpt-4o-mini"
LLM_AND_MANAGED: list[tuple[str, tuple[Step, ...]]] = [
    (
        f"OPENAI_API_KEY=... srez run --backend local --task sre-007 --agent llm --model {LLM}",
        (
            Step(
                f"OPENAI_API_KEY=sk-walk srez run --backend local --task sre-007 --agent llm"
                f" --model {LLM}",
                rf"(?s)^run: +(?P<llm_run>{RUN_ID}).*reward 1\.000, resolved yes",
            ),
        ),
    ),
    (
        "SREZ_LLM_API_BASE=http://127.0.0.1:8000/v1 SREZ_LLM_API_KEY=unused srez run --task sre-007"
        " --agent llm --model openai/my-local-model",
        (
            Step(
                "SREZ_LLM_API_BASE={llm_base} SREZ_LLM_API_KEY=unused srez run --task sre-007"
                " --agent llm --model openai/my-local-model",
                r"reward 1\.000, resolved yes",
            ),
        ),
    ),
    (
        "srez explain RUN --prompt compare",
        (
            Step(
                f"SREZ_EXPLAIN_MODEL={LLM} OPENAI_API_KEY=sk-walk"
                " srez explain {llm_run} --prompt compare",
                r"the walk's explanation",
            ),
        ),
    ),
    (
        f"srez managed create nightly --baselines random,scripted --models {LLM} --tasks all"
        " --backend local --daily-budget-usd 20 --cost-cap-usd 0.5",
        (
            Step(
                f"srez managed create nightly --baselines random,scripted --models {LLM}"
                " --tasks sre-001,sre-007 --backend local --daily-budget-usd 20 --cost-cap-usd 0.5",
                r"nightly",
            ),
        ),
    ),
    (
        "srez managed run nightly",
        (
            Step(
                "OPENAI_API_KEY=sk-walk srez managed run nightly",
                r"^llm-openai__gpt-4o-mini +model +2/2 +2 +1\.000 \[1\.00, 1\.00\] +0$",
            ),
        ),
    ),
    (
        "srez managed run nightly --wait",
        (
            Step(
                "OPENAI_API_KEY=sk-walk srez managed run nightly --wait",
                r"nothing to run, all 2 tasks of every target are done",
            ),
        ),
    ),
    ("srez managed pause nightly", (Step("srez managed pause nightly", r"^paused nightly"),)),
    ("srez managed stop nightly", (Step("srez managed stop nightly", r"no runner was running"),)),
    (
        "srez managed status nightly",
        (Step("srez managed status nightly", r"^llm-openai__gpt-4o-mini +done +2/2 +1\.000"),),
    ),
    (
        "srez managed summarize nightly",
        (Step("srez managed summarize nightly", r"summaries written in results/managed/nightly"),),
    ),
]

# inside a local run's sandbox ``srez`` cannot start (it reads the task files the sandbox hides):
# there the same server is ``python3 -m srez_client.integrations.mcp``, as the README says
IN_A_RUN = r"python3 -m srez_client.integrations.mcp --socket \$SREZ_AGENT_SOCKET"  # the run's
PLAY = "python3 my_mcp_client.py my-actions.jsonl --"
MCP: list[tuple[str, tuple[Step, ...]]] = [
    (
        "srez mcp --task sre-007 --name my-client",
        (
            Step(
                f"{PLAY} srez mcp --task sre-007 --name my-client",
                rf"(?s)^{len(TOOLS)} tools; prompt: .*^submit ok$.*^srez: run (?P<mcp_run>{RUN_ID}): sre-007"
                r" as my-client, filed in results/sre-007/none/my-client/",
            ),
            Step(
                "cat results/sre-007/none/my-client/{mcp_run}/result.json",
                r'"agent": "my-client",(?s:.*)"passed": true',
            ),
        ),
    ),
    (
        'srez mcp --socket "$SREZ_AGENT_SOCKET"',
        (
            Step(
                "srez run --task sre-007 --backend local --agent cmd:mcp-stdio --agent-cmd"
                f' "{PLAY} {IN_A_RUN}"',
                r"^grade: +reward 1\.000, resolved yes",
            ),
            Step(
                "cat results/sre-007/none/mcp-stdio/*/logs/agent.log",
                rf"(?s)^{len(TOOLS)} tools; prompt: You are the on-call SRE.*^declare_root_cause ok$",
            ),
        ),
    ),
    (
        'srez mcp --socket "$SREZ_AGENT_SOCKET" --http 8765',
        (
            Step(
                "srez run --task sre-007 --backend local --agent cmd:mcp-http --agent-cmd"
                f' "{PLAY} {IN_A_RUN} --http 8765"',
                r"^grade: +reward 1\.000, resolved yes",
            ),
            Step(
                "cat results/sre-007/none/mcp-http/*/logs/agent.log",
                r"(?s)^srez: MCP \(streamable HTTP\) at http://127\.0\.0\.1:8765/mcp; send the header"
                r' "Authorization: Bearer [\w-]{43}"$'
                r'.*^without the token: 401 \{"error":\{"code":"unauthorized".*^declare_root_cause ok$',
            ),
        ),
    ),
    (
        'srez mcp --socket "$SREZ_AGENT_SOCKET" --http --token-file mcp.token',
        (
            Step(
                "srez run --task sre-007 --backend local --agent cmd:mcp-token --agent-cmd"
                f' "{PLAY} {IN_A_RUN} --http --token-file /tmp/mcp.token"',
                r"^grade: +reward 1\.000, resolved yes",
            ),
            Step(
                "cat results/sre-007/none/mcp-token/*/logs/agent.log",
                r"(?s)^srez: MCP \(streamable HTTP\) at http://127\.0\.0\.1:\d+/mcp; send the header"
                r' "Authorization: Bearer <token>" with the token in /tmp/mcp\.token$'
                r".*^without the token: 401 .*^declare_root_cause ok$",
            ),
        ),
    ),
]
"""On the host (``--task``), and inside local runs (``--socket``), each played by the reader's
MCP client (:data:`MY_MCP_CLIENT`) with the scripted expert's moves. The grade shows the whole
episode went through; the agent's log may lack its last line (the sandbox ends right after
``submit``)."""

TERMINAL_UI = ("srez tui", "srez attach RUN")

KEPT_LOG = "kept-container.log"
DOCKER: list[tuple[str, tuple[Step, ...]]] = [
    (
        "srez run --backend docker --task sre-007 --agent scripted [--keep-container]",
        (
            # it serves until stopped: started in the background, stopped once its run is done
            Step(
                "(srez run --backend docker --task sre-007 --agent scripted --keep-container"
                f' >{KEPT_LOG} 2>&1 &); timeout 180 bash -c \'until grep -q "phase done"'
                f" {KEPT_LOG}; do sleep 0.5; done'; cat {KEPT_LOG}",
                rf"run (?P<container_run>{RUN_ID}): sre-007 with scripted on docker",
            ),
            Step(
                "srez runs stop {container_run} --backend docker && timeout 120 bash -c"
                f" 'until grep -q ^grade: {KEPT_LOG}; do sleep 0.5; done'; cat {KEPT_LOG}",
                r"^grade: +reward 1\.000, resolved yes",
            ),
        ),
    ),
    (
        "srez runs list --backend docker [--all]",
        (
            Step(
                "srez run --backend docker --task sre-001 --agent scripted --keep",
                rf"^run: +(?P<docker_kept>{RUN_ID})",
            ),
            Step("srez runs list --backend docker --all", r"^{docker_kept} +sre-001 .*running"),
        ),
    ),
    (
        "srez mirror RUN --backend docker",
        (
            Step("srez runs stop {docker_kept} --backend docker", r"{docker_kept}: stopped"),
            Step(
                "srez mirror {docker_kept} --backend docker",
                r"{docker_kept}: (skipped \(already mirrored|mirrored)",
            ),
            Step("srez runs rm {docker_kept} --backend docker", r"{docker_kept}: removed"),
        ),
    ),
    (
        "srez eval --backend docker --parallel 4 --agent scripted,heuristic --tasks all",
        (
            Step(
                "srez eval --backend docker --parallel 4 --agent scripted,heuristic"
                " --tasks sre-001,sre-007",
                r"^ +1 +scripted +\S+ +2 +1\.000 ",
            ),
        ),
    ),
    (
        f'docker run --rm --cap-add NET_ADMIN -v "$PWD/out:/out" srez-run:{VERSION} --task sre-007'
        " --agent scripted --out /out",
        (
            Step(
                f'docker run --rm --cap-add NET_ADMIN -v "$PWD/out:/out" srez-run:{VERSION}'
                " --task sre-007 --agent scripted --out /out && cat out/summary.json",
                r'"reward": 1\.0',
            ),
        ),
    ),
]
"""``srez mirror --watch`` runs until interrupted: ``test_walk_docker`` starts it in a terminal,
sees it notice a kept run's container stop, and stops it with ctrl c."""

INSPECT_MODEL = "anthropic/claude-sonnet-4-5"
# Inspect against a scripted Anthropic Messages API (tests/fakes/anthropic_server.py): not
# streamed (``-M streaming=false``, a ``--max-tokens`` the SDK allows without a stream), one
# sample at a time so the script is answered in order; the sets are narrowed like the others.
INSPECT_FAKE = f"--model {INSPECT_MODEL} -M streaming=false --max-tokens 4096 --max-samples 1"
INSPECT: list[tuple[str, tuple[Step, ...]]] = [
    (
        f"inspect eval srez/sre_zero --model {INSPECT_MODEL} -T tasks=sre-001,sre-007",
        (
            Step(
                f"inspect eval srez/sre_zero {INSPECT_FAKE} -T tasks=sre-001,sre-007"
                " --log-dir logs --display plain",
                r"(?s)^reward +valid.*^mean +1\.000 +mean +1\.000",
            ),
        ),
    ),
    (
        f"inspect eval srez/sre_zero --model {INSPECT_MODEL} -T difficulty=hard --epochs 3",
        (
            Step(
                f"inspect eval srez/sre_zero {INSPECT_FAKE} -T difficulty=hard -T tasks=sre-025"
                " --epochs 3 --log-dir logs --display plain",
                r"(?s)^reward +valid.*^mean +1\.000 +mean +1\.000",
            ),
        ),
    ),
    (
        f"inspect eval srez/sre_zero --model {INSPECT_MODEL} -T tasks_dir=sets/s1234",
        (
            Step("srez tasks generate --seed 1234 --count 1 --out sets/s1234", r"wrote 1 verified"),
            Step(
                f"inspect eval srez/sre_zero {INSPECT_FAKE} -T tasks_dir=sets/s1234"
                " --log-dir logs --display plain",
                r"(?s)sre_zero \(1 sample\).*^reward +valid",
            ),
        ),
    ),
    (
        f"inspect eval srez/sre_zero --model {INSPECT_MODEL} -T seed=1234 -T count=10",
        (
            Step(
                f"inspect eval srez/sre_zero {INSPECT_FAKE} -T seed=1234 -T count=1"
                " --log-dir logs --display plain",
                r"(?s)sre_zero \(1 sample\).*^reward +valid",
            ),
        ),
    ),
    (
        "inspect view",
        # a server until interrupted: it must say where it serves the logs the lines above wrote
        (
            Step(
                "timeout 15 inspect view --log-dir logs --port {view_port}",
                r"Running on http://",
                124,
            ),
        ),
    ),
]
"""``test_walk_inspect`` scripts the replies: the expert's for the first two lines, a submit for
each sample of the generated sets; ``{view_port}`` is a free port."""

NOT_WALKED = {
    "LLAMA_BASE_URL=http://127.0.0.1:8080/v1 LLAMA_API_KEY=unused inspect eval srez/sre_zero"
    " --model openai-api/llama/smollm2 --max-tokens 256 -T tasks=sre-001 --message-limit 6": "runs"
    " from .venv-inspect (Inspect's OpenAI-compatible providers need openai>=3.4):"
    " tests/client/integrations/test_inspect_real_model.py runs this very command against"
    " llama.cpp's server on a free port",
    "srez view": "a server that serves until stopped: tests/client/web/test_web_browser.py starts "
    "the command and drives it in Debian's chromium (a results folder, hosted mode, a live run)",
    "srez view --results runs/ --port 8080": "as srez view; the browser tests pass --results and "
    "a free port (8080 may be taken on a test machine)",
    "srez view --hosted --results /srv/srez-results --host 0.0.0.0 --allow-host srez.example.org": "a "
    "test binds loopback only; the browser tests run --hosted, and tests/client/web/test_web_server.py "
    "checks the Host rules --allow-host extends",
    "ray start --head --node-ip-address 127.0.0.1 --include-dashboard false": "a Ray head needs "
    "the ray extra and about a gigabyte; tests/client/test_ray_cluster.py starts a head and two "
    "worker nodes on 127.0.0.1 with ray.cluster_utils instead",
    "srez eval --backend ray --ray-address 127.0.0.1:6379 --parallel 8 --agent scripted,heuristic"
    " --tasks all": "tests/client/test_ray_cluster.py runs it against its own three-node cluster "
    "(its address instead of 6379), compared with srez eval --backend inline; all 40 tasks behind "
    "the slow marker",
    "srez eval --agent llm --model openai/gpt-4o-mini --tasks-dir sets/s1234 --backend local": "tests"
    "/client/test_heldout_sets.py::test_an_llm_evaluates_a_held_out_set_on_local runs it on one task"
    " of a generated set against the scripted OpenAI-compatible server (a whole set of LLM runs is"
    " minutes here)",
    "srez eval --agent llm --model openai/gpt-4o-mini --tasks-dir sets/s1234 --backend docker": "tests"
    "/client/test_heldout_docker.py::test_an_llm_evaluates_a_held_out_set_on_docker runs it on one"
    " task of a generated set against the scripted OpenAI-compatible server (docker marker)",
    "make run": "it is `make setup` and the inline baseline sweep, which the walk runs as written "
    "(test_make_run_is_the_walked_sweep holds the Makefile to it)",
    "make test": "the walk runs inside it",
    "make image": ".ci/run makes it before the suite, and the docker walk uses the image it built; "
    "building it here would reinstall the project into the suite's own environment",
    **dict.fromkeys(
        (
            "srez run --task sre-007 --backend local --model anthropic/claude-sonnet-4-5"
            ' --agent mcp:claude-code --agent-cmd "claude -p {prompt} --mcp-config {mcp_config}'
            " --strict-mcp-config --tools '' --allowedTools mcp__srez\"",
            "srez run --task sre-007 --backend local --model openai/gpt-5 --agent mcp:codex"
            ' --agent-cmd "codex exec --skip-git-repo-check -c mcp_servers.srez={mcp_toml}'
            ' {prompt}"',
        ),
        "Claude Code and Codex CLI are not installed here, and they need a provider's key and"
        " network; tests/client/test_mcp_agent.py walks the same mechanism (an mcp:NAME agent,"
        " its launcher, {mcp_config} and {mcp_toml}) with an MCP client agent of ours through"
        " srez run --backend local",
    ),
}

WALKED = {line for line, _ in COMMANDS + LOCAL_RUNS + LLM_AND_MANAGED + DOCKER + INSPECT + MCP}
WALKED |= {*TERMINAL_UI, "srez mirror --watch"}
