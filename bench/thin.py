"""Thin agents (docs/design.md §13.1): what an LLM agent process costs with and without litellm, and
many concurrent ``local`` LLM runs against a slow stand-in provider.

* ``agent_start``: in fresh subprocesses, alternating, the import path of ``srez-agent`` and the
  building of its model client: *thin* (:class:`~srez_daemon.agent.model_client.HTTPModelClient`)
  against *litellm* (the same, plus ``import litellm`` and the former binding,
  :mod:`bench.litellm_client`, as every agent process paid before). Seconds from the first
  import to a client ready (``ready_s``), the whole process's wall time (``process_s``, the
  interpreter's start included), and its RSS and PSS once ready (MB).
* ``concurrent``: after one warm-up run (the launcher's first call through litellm, a one-off
  reported as ``launcher_first_call_s``, as ``import litellm`` is as ``launcher_litellm_import_s``),
  N ``local`` LLM runs (``llm`` on sre-001, the default sandbox) launched at once
  (at most 4 launches in flight) by one :class:`~srez_client.backends.local.backend.LocalBackend`
  and one :class:`~srez_client.lifecycle.launch.RunLauncher`, so through its one model relay,
  against a stand-in provider that answers every request after 1 s and scripts a short episode
  (``get_alerts``, ``list_services``, ``submit``). The provider holds each run's first request until every run has made one (or 240 s passed), so all N runs
  are alive at once when memory is sampled: the PSS (``/proc/<pid>/smaps_rollup``) of each run's
  daemon and everything under it (the sandbox and the agent), summed and divided by N, and
  the same split by part (``pss_mb_per_run_by_part``: the daemon, the agent, the sandbox's other
  processes); the launcher (relay and litellm included) is reported apart. Also: runs per
  minute (N over the time from the first launch to the last run finished, the barrier included),
  the median and p90 of start to first model call (from a run's launch call to the provider
  seeing its first request), and whether every run completed (``summary.json`` status ``ok``).
  Each scale runs twice, on the two paths of the ``local`` backend, alternating which goes first
  from one scale to the next: ``template`` (each daemon forked from the backend's warm run
  template, :mod:`srez_client.backends.local.template`) and ``fresh`` (each daemon a fresh
  interpreter, ``SREZ_RUN_TEMPLATE=0``). Both also report the median CPU time of a run's daemon
  when memory is sampled (``daemon_start_cpu_s_p50``: its start, the task loaded and the agent
  started, with nothing else done yet, since the first model call is held), and ``template``
  the template's own RSS, PSS and CPU time; ``fresh_over_template`` puts them side by side.
  *before* runs the same with every agent process importing litellm at its start (a
  ``sitecustomize`` on ``PYTHONPATH`` that does so in processes with an LLM ``SREZ_AGENT_SPEC``:
  the cost the old agent paid at its first call); it is skipped at a scale whose estimated
  memory does not fit in what the machine has free, and says so.

``make bench`` runs ``agent_start`` and ``concurrent`` at 1 and 10 runs on both paths, without
*before* (one run alone is the start-to-first-call of a run that does not share the machine's two
cores with nine others starting at the same instant); the scale figures
(both paths at 10, 50 and 100, before at 10 and 50) are ``make bench-thin``
(``python -m bench.thin --scales 10,50,100 --before 10,50``), a few minutes on two cores.
Figures only: nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import psutil
from aiohttp import web

TARGET_MB_PER_RUN: Final = 120.0
TARGET_FIRST_CALL_S: Final = 0.5
TARGET_RUNS: Final = 100
TEMPLATE_TARGET_MB_PER_RUN: Final = 20.0
TEMPLATE_TARGET_FIRST_CALL_S: Final = 1.0
TEMPLATE_TARGET_START_CPU_S: Final = 0.05
"""What runs forked from the warm run template are to reach at 100 concurrent runs (issue 30)."""
SCRIPT: Final = ("get_alerts", "list_services", "submit")
"""The stand-in provider's tool call at each turn of a run."""
REPLY_DELAY_S: Final = 1.0
BARRIER_TIMEOUT_S: Final = 240.0
LAUNCHES_IN_FLIGHT: Final = 4
BEFORE_MB_PER_RUN: Final = 250.0
"""Estimated PSS of a run whose agent imports litellm (measured: about 215 MB), for the memory
check before *before*: it runs only if N times this, plus a quarter, plus 4 GiB to spare for
the machine's other users, is free."""

_START_SNIPPET = textwrap.dedent(
    """
    import json, time
    t0 = time.perf_counter()
    import srez_daemon.agent.__main__
    from srez_daemon.agent.model_client import HTTPModelClient
    from srez_env.agents.llm import LLMSettings
    settings = LLMSettings(model="openai/bench", api_base="http://127.0.0.1:9/v1")
    client = HTTPModelClient(settings)
    if WITH_LITELLM:
        from bench.litellm_client import LiteLLMClient
        LiteLLMClient(settings)._lib()
    ready = time.perf_counter() - t0
    fields = {}
    for name in ("status", "smaps_rollup"):
        for line in open(f"/proc/self/{name}"):
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Pss"):
                fields[key] = int(value.split()[0]) / 1024
    print(json.dumps({"ready_s": ready, "rss_mb": fields["VmRSS"], "pss_mb": fields["Pss"]}))
    """
)


def _start_once(with_litellm: bool) -> dict[str, float]:
    code = _START_SNIPPET.replace("WITH_LITELLM", str(with_litellm))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process_s"] = time.perf_counter() - started
    return figures


def agent_start_figures(rounds: int = 3) -> dict[str, Any]:
    """The agent's start with the thin client and with litellm, alternating in one run."""
    samples: dict[str, list[dict[str, float]]] = {"thin": [], "litellm": []}
    for _ in range(rounds):
        samples["thin"].append(_start_once(False))
        samples["litellm"].append(_start_once(True))
    out: dict[str, Any] = {"rounds": rounds}
    for name, runs in samples.items():
        out[name] = {
            key: round(statistics.median(r[key] for r in runs), 3)
            for key in ("ready_s", "process_s", "rss_mb", "pss_mb")
        }
    thin, heavy = out["thin"], out["litellm"]
    out["litellm_over_thin"] = {
        "ready_s": round(heavy["ready_s"] / thin["ready_s"], 1),
        "rss_mb": round(heavy["rss_mb"] / thin["rss_mb"], 1),
    }
    return out


# ---------------------------------------------------------------------- the stand-in provider


def _completion(name: str) -> dict[str, Any]:
    args = {"summary": "bench episode"} if name == "submit" else {}
    function = {"name": name, "arguments": json.dumps(args)}
    call = {"id": "call_1", "type": "function", "function": function}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "bench",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


class SlowProvider:
    """``POST /r/<i>/v1/chat/completions``: run ``i``'s next scripted call, after 1 s; first
    requests are held until ``expected`` runs have made one (see the module docstring)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.port = 0
        self.first_at: dict[int, float] = {}
        self.requests = 0
        self.all_held = threading.Event()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._release: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True, name="bench-provider")

    def __enter__(self) -> SlowProvider:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.release()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def base_url(self, run: int) -> str:
        return f"http://127.0.0.1:{self.port}/r/{run}/v1"

    def release(self) -> None:
        """Let the held first requests go (their answer comes 1 s later)."""
        if self._release is not None:
            self._loop.call_soon_threadsafe(self._release.set)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        run = int(request.match_info["run"])
        body = await request.json()
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        self.requests += 1
        if turn == 0 and run not in self.first_at:
            self.first_at[run] = time.monotonic()
            if len(self.first_at) >= self.expected:
                self.all_held.set()
            assert self._release is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._release.wait(), BARRIER_TIMEOUT_S)
        await asyncio.sleep(REPLY_DELAY_S)
        name = SCRIPT[min(turn, len(SCRIPT) - 1)]
        if not body.get("stream"):
            return web.json_response(_completion(name))
        # streamed, as a provider answers the relay: the call in one chunk, then the usage
        completion = _completion(name)
        choice = completion["choices"][0]
        calls = [{"index": 0, **c} for c in choice["message"]["tool_calls"]]
        delta = {"role": "assistant", "tool_calls": calls}
        chunk = {"id": completion["id"], "object": "chat.completion.chunk"}
        events = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}]},
            {**chunk, "choices": [], "usage": completion["usage"]},
        ]
        answer = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await answer.prepare(request)
        for event in events:
            await answer.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        await answer.write(b"data: [DONE]\n\n")
        await answer.write_eof()
        return answer

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._release = asyncio.Event()
        app = web.Application()
        app.router.add_post("/r/{run}/v1/chat/completions", self._chat)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        self._loop.run_until_complete(site.start())
        self.port = int(runner.addresses[0][1])
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())
        self._loop.close()


# ---------------------------------------------------------------------- memory


def _pss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tree(pid: int) -> list[int]:
    try:
        parent = psutil.Process(pid)
        return [pid, *(p.pid for p in parent.children(recursive=True))]
    except psutil.Error:
        return []


def _role(pid: int, daemon: int) -> str:
    """Which part of a run ``pid`` is: its ``daemon``, its ``agent`` (the interpreter running
    ``srez_daemon.agent``), or ``other`` (the sandbox's helpers)."""
    if pid == daemon:
        return "daemon"
    try:
        cmdline = psutil.Process(pid).cmdline()
    except psutil.Error:
        return "other"
    return "agent" if any("srez_daemon.agent" in part for part in cmdline) else "other"


def _tree_pss_mb(pid: int) -> tuple[float, int, dict[str, float]]:
    """A run's PSS (its daemon and everything under it), its process count, and the PSS of
    each part of it (:func:`_role`)."""
    pids = _tree(pid)
    parts = {"daemon": 0.0, "agent": 0.0, "other": 0.0}
    for p in pids:
        parts[_role(p, pid)] += _pss_mb(p)
    return sum(parts.values()), len(pids), parts


@contextlib.contextmanager
def _litellm_in_every_agent(folder: Path) -> Iterator[None]:
    """``PYTHONPATH`` gains a ``sitecustomize`` importing litellm in LLM agent processes."""
    (folder / "sitecustomize.py").write_text(
        "import os\n"
        "if os.environ.get('SREZ_AGENT_SPEC') in ('llm', 'llm-json'):\n"
        "    os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'\n"
        "    import litellm  # noqa: F401  (the former agent's import)\n"
    )
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), old) if p)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


# ---------------------------------------------------------------------- concurrent runs


def _cpu_s(pid: int) -> float:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


async def _concurrent(runs: int, root: Path, *, template: bool = True) -> dict[str, Any]:
    from srez_client.backends.base import LaunchSpec, RunHandle
    from srez_client.backends.local.backend import LocalBackend
    from srez_client.lifecycle.launch import RunLauncher

    backend = LocalBackend(root / "state", ready_timeout_s=300.0, run_template=template)
    launcher = RunLauncher(backend)  # one model relay for every run
    gate = asyncio.Semaphore(LAUNCHES_IN_FLIGHT)
    launched_at: dict[int, float] = {}
    ready_at: dict[int, float] = {}
    handles: dict[int, RunHandle] = {}
    failures: list[str] = []
    with SlowProvider(runs) as provider:

        async def one(i: int) -> None:
            spec = LaunchSpec(
                task_id="sre-001",
                agent_spec="llm",
                model="openai/bench",
                results_root=root / "results",
                agent_env={
                    "SREZ_LLM_API_BASE": provider.base_url(i),
                    "SREZ_LLM_TIMEOUT_S": "600",
                },
            )
            async with gate:
                launched_at[i] = time.monotonic()
                try:
                    handles[i] = await launcher.launch(spec)
                except Exception as e:
                    failures.append(f"{type(e).__name__}: {str(e)[:200]}")
                    return
                ready_at[i] = time.monotonic()
            await backend.wait(handles[i], timeout_s=900)
            launcher.revoke(handles[i].run_id)

        started = time.monotonic()
        tasks = [asyncio.ensure_future(one(i)) for i in range(runs)]
        held = await asyncio.to_thread(provider.all_held.wait, BARRIER_TIMEOUT_S)
        # a run's first model call can come before its launch call returned (the launcher polls
        # health): sample once every launch has returned, the first calls still held
        for _ in range(int(BARRIER_TIMEOUT_S / 0.05)):
            if len(handles) + len(failures) >= runs:
                break
            await asyncio.sleep(0.05)
        sampled = []
        start_cpu = []
        for handle in handles.values():
            record = backend._record(handle.run_id)
            if record is not None and record.pid is not None:
                sampled.append(_tree_pss_mb(record.pid))
                start_cpu.append(_cpu_s(record.pid))
        launcher_mb = _pss_mb(os.getpid())
        forked_from = backend._template
        template_pid = None if forked_from is None or forked_from.off else forked_from.pid
        template_fig = (
            {
                "rss_mb": round(psutil.Process(template_pid).memory_info().rss / (1 << 20), 1),
                "pss_mb": round(_pss_mb(template_pid), 1),
                "cpu_s": round(_cpu_s(template_pid), 3),
            }
            if template_pid is not None
            else None
        )
        provider.release()
        await asyncio.gather(*tasks, return_exceptions=True)
        elapsed = time.monotonic() - started
        first = [provider.first_at[i] - launched_at[i] for i in provider.first_at]
        ready = sorted(ready_at[i] - launched_at[i] for i in ready_at)
        requests = provider.requests
    completed = 0
    for handle in handles.values():
        summary = backend.live / handle.run_id / "run" / "summary.json"
        with contextlib.suppress(OSError, ValueError):
            if json.loads(summary.read_text()).get("status") == "ok":
                completed += 1
    await asyncio.gather(*(backend.remove(h) for h in handles.values()), return_exceptions=True)
    launcher.close()
    backend.close()
    total_mb = sum(mb for mb, _, _ in sampled)
    per_part = {
        part: round(sum(parts[part] for _, _, parts in sampled) / max(1, len(sampled)), 1)
        for part in ("daemon", "agent", "other")
    }
    first.sort()
    return {
        "runs": runs,
        "path": "template" if template else "fresh",
        "template": template_fig,
        "daemon_start_cpu_s_p50": round(statistics.median(start_cpu), 3) if start_cpu else None,
        "all_alive_at_sample": held and len(sampled) == runs,
        "processes_per_run": round(sum(n for _, n, _ in sampled) / max(1, len(sampled)), 1),
        "pss_mb_per_run": round(total_mb / max(1, len(sampled)), 1),
        "pss_mb_per_run_by_part": per_part,
        "launcher_pss_mb": round(launcher_mb, 1),
        "runs_per_min": round(60 * runs / elapsed, 1),
        "elapsed_s": round(elapsed, 1),
        "first_call_p50_s": round(statistics.median(first), 3) if first else None,
        "first_call_p90_s": round(first[int(0.9 * (len(first) - 1))], 3) if first else None,
        "launch_to_ready_p50_s": round(statistics.median(ready), 3) if ready else None,
        "completed": completed,
        "all_completed": completed == runs,
        "model_requests": requests,
        "launch_failures": failures[:3],
    }


def _free_mb() -> float:
    return float(psutil.virtual_memory().available) / (1 << 20)


def _vs_targets(fig: dict[str, Any]) -> dict[str, float]:
    return {
        "mb_per_run_over_target": round(fig["pss_mb_per_run"] / TARGET_MB_PER_RUN, 2),
        "first_call_over_target": round((fig["first_call_p50_s"] or 0) / TARGET_FIRST_CALL_S, 2),
        "mb_per_run_over_template_target": round(
            fig["pss_mb_per_run"] / TEMPLATE_TARGET_MB_PER_RUN, 2
        ),
        "first_call_over_template_target": round(
            (fig["first_call_p50_s"] or 0) / TEMPLATE_TARGET_FIRST_CALL_S, 2
        ),
    }


def _ratio(over: dict[str, Any], under: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    return {k: round(over[k] / under[k], 2) for k in keys if over.get(k) and under.get(k)}


def concurrent_figures(
    scales: tuple[int, ...] = (10,), before: tuple[int, ...] = ()
) -> dict[str, Any]:
    """Concurrent local LLM runs with thin agents, their daemons forked from the run template
    (``template``) and started afresh (``fresh``), side by side and alternating which goes first;
    and before (agents importing litellm, daemons started afresh)."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")  # the relay's litellm wants a key
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    started = time.perf_counter()
    import litellm  # noqa: F401  (the relay's one-off import, outside the runs' figures)

    litellm_import_s = time.perf_counter() - started
    out: dict[str, Any] = {
        "launcher_litellm_import_s": round(litellm_import_s, 2),
        "targets": {
            "runs": TARGET_RUNS,
            "pss_mb_per_run": TARGET_MB_PER_RUN,
            "first_call_p50_s": TARGET_FIRST_CALL_S,
            "template_pss_mb_per_run": TEMPLATE_TARGET_MB_PER_RUN,
            "template_first_call_p50_s": TEMPLATE_TARGET_FIRST_CALL_S,
            "template_start_cpu_s": TEMPLATE_TARGET_START_CPU_S,
        },
        "template": {},
        "fresh": {},
        "before": {},
    }
    root = Path(tempfile.mkdtemp(prefix="srez-bench-thin-"))
    try:
        # one run first: the launcher's first litellm call through the relay (its provider
        # modules, its HTTP client) is a one-off of the launcher, reported apart
        warm = asyncio.run(_concurrent(1, root / "warm-up"))
        out["launcher_first_call_s"] = warm["first_call_p50_s"]
        for n in before:
            need = n * BEFORE_MB_PER_RUN * 1.25
            if need + 4096 > _free_mb():
                out["before"][str(n)] = {
                    "skipped": f"about {need / 1024:.0f} GiB needed, {_free_mb() / 1024:.0f} GiB free"
                }
                continue
            shim = root / f"shim-{n}"
            shim.mkdir()
            with _litellm_in_every_agent(shim):
                out["before"][str(n)] = asyncio.run(
                    _concurrent(n, root / f"before-{n}", template=False)
                )
        for i, n in enumerate(scales):
            paths = ("template", "fresh") if i % 2 == 0 else ("fresh", "template")
            for path in paths:
                out[path][str(n)] = asyncio.run(
                    _concurrent(n, root / f"{path}-{n}", template=path == "template")
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for path in ("template", "fresh"):
        for fig in out[path].values():
            if "pss_mb_per_run" in fig:
                fig["vs_targets"] = _vs_targets(fig)
    keys = ("pss_mb_per_run", "first_call_p50_s", "daemon_start_cpu_s_p50")
    for n, fig in out["template"].items():
        fig["fresh_over_template"] = _ratio(out["fresh"].get(n, {}), fig, keys)
        fig["before_over_template"] = _ratio(out["before"].get(n, {}), fig, keys[:2])
    return out


def thin_figures(scales: tuple[int, ...] = (1, 10), before: tuple[int, ...] = ()) -> dict[str, Any]:
    """Both figures (``make bench`` runs the light default)."""
    return {"agent_start": agent_start_figures(), "concurrent": concurrent_figures(scales, before)}


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.thin", description=__doc__)
    parser.add_argument("--scales", default="10", help="concurrent runs, after (default 10)")
    parser.add_argument("--before", default="", help="concurrent runs, before (default none)")
    args = parser.parse_args()
    print(json.dumps(thin_figures(_ints(args.scales), _ints(args.before)), indent=2))
