"""Lifecycle of ``local`` runs under concurrency and spoofing (docs/security.md §4 tests 40, 41
(b)).

Real daemons, real signals: stop and remove are idempotent under 50 concurrent callers, and a run
whose labels do not match this state's ledger (another owner, another nonce) is never signalled
or deleted; nor is a process whose pid was reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from backend_contract import spec_for

from srez_client.backends.local.backend import LocalBackend
from srez_client.backends.local.files import LocalRecord
from srez_client.backends.process import is_alive, start_time
from srez_client.backends.state import Ledger, OwnedRun, make_labels
from srez_client.errors import NotOwnedError
from srez_core.atomic import atomic_write_json

SREZ = Path(sys.executable).parent / "srez"


async def launch(backend: LocalBackend, tmp_path: Path) -> tuple[str, int]:
    handle = await backend.launch(spec_for(tmp_path / "results"))
    record = backend._record(handle.run_id)
    assert record is not None and record.pid is not None
    return handle.run_id, record.pid


async def test_50_concurrent_stop_and_remove_on_one_run(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "state")
    run_id, pid = await launch(backend, tmp_path)
    handle = await backend.get(run_id)
    calls = [backend.stop(handle) if i % 2 else backend.remove(handle) for i in range(50)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert not is_alive(pid, None)
    assert not (tmp_path / "state" / "live" / run_id).exists()
    assert [p for p in (tmp_path / "state" / "live").iterdir()] == []
    assert await backend.list(include_exited=True) == []
    assert Ledger(tmp_path / "state").get(run_id) is None
    # and again, on the run that is already gone
    again = await asyncio.gather(
        *(backend.stop(handle) if i % 2 else backend.remove(handle) for i in range(50)),
        return_exceptions=True,
    )
    assert [r for r in again if isinstance(r, BaseException)] == []


async def test_concurrent_rm_from_separate_processes_all_exit_0(tmp_path: Path) -> None:
    state = tmp_path / "state"
    backend = LocalBackend(state)
    run_id, pid = await launch(backend, tmp_path)
    env = {**os.environ, "SREZ_STATE": str(state)}
    procs = [
        await asyncio.create_subprocess_exec(
            str(SREZ),
            "runs",
            *(["stop"] if i % 2 else ["rm", "--force"]),  # never mirrored: rm needs --force
            run_id,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(8)
    ]
    outputs = [await p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, outputs
    assert not is_alive(pid, None)
    assert await backend.list(include_exited=True) == []


async def test_a_run_of_another_owner_or_nonce_is_never_stopped_or_removed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    backend = LocalBackend(state)
    run_id, pid = await launch(backend, tmp_path)
    folder = state / "live" / run_id
    record = LocalRecord.model_validate_json((folder / "record.json").read_bytes())
    foreign = record.model_copy(
        update={"labels": {**record.labels, "srez.owner": str(os.getuid() + 1)}}
    )
    atomic_write_json(folder / "record.json", foreign)
    handle = await backend.get(run_id)
    assert not handle.owned
    for action in (backend.stop, backend.remove, backend.token, backend.endpoint):
        with pytest.raises(NotOwnedError, match="--any"):
            await action(handle)
    assert is_alive(pid, record.pid_start) and folder.is_dir()
    # the right owner, but a nonce this state never issued (a replayed or copied record)
    ledger = Ledger(state)
    entry = ledger.get(run_id)
    assert entry is not None
    atomic_write_json(folder / "record.json", record)
    ledger.add(entry.model_copy(update={"nonce": "0" * 32}))
    with pytest.raises(NotOwnedError):
        await backend.remove(await backend.get(run_id))
    assert is_alive(pid, record.pid_start) and folder.is_dir()
    # --any acts anyway
    await LocalBackend(state, any_owner=True).remove(await backend.get(run_id))
    assert not is_alive(pid, record.pid_start) and not folder.exists()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process in its own session."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def stubborn() -> Iterator[subprocess.Popen[bytes]]:
    """A process group leader that ignores SIGTERM."""
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)"
    proc = subprocess.Popen(
        [sys.executable, "-c", script], start_new_session=True, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"1\n"
    yield proc
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()


def plant_record(state: Path, pid: int, *, run_id: str, in_ledger: bool) -> LocalRecord:
    """A record.json (and, if asked, a matching ledger entry) naming ``pid`` as the daemon."""
    nonce = "a" * 32
    labels = make_labels(
        run_id=run_id,
        task_id="sre-001",
        model="none",
        agent="scripted",
        results_root=state.parent / "results",
        nonce=nonce,
        owner=os.getuid(),
        version="0",
    )
    manifest = {
        "run_id": run_id,
        "task_id": "sre-001",
        "agent": "scripted",
        "agent_spec": "scripted",
        "model": "none",
        "backend": "local",
        "run_seed": 0,
        "srez_version": "0",
        "started_at": "2025-03-14T10:00:00Z",
    }
    record = LocalRecord.model_validate(
        {
            "run_id": run_id,
            "labels": labels,
            "manifest": manifest,
            "pid": pid,
            "pid_start": start_time(pid),
            "created_at": "2025-03-14T10:00:00Z",
        }
    )
    (state / "live" / run_id).mkdir(parents=True)
    atomic_write_json(state / "live" / run_id / "record.json", record)
    if in_ledger:
        entry = OwnedRun(
            run_id=run_id, backend="local", nonce=nonce, owner=os.getuid(), created_at="x"
        )
        Ledger(state).add(entry)
    return record


async def test_a_planted_record_never_gets_its_process_signalled(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """A record nobody launched from here, naming a live process: 0 signals sent."""
    state = tmp_path / "state"
    plant_record(state, sleeper.pid, run_id="20250314T100000Z-0123abcd", in_ledger=False)
    backend = LocalBackend(state)
    handle = await backend.get("20250314T100000Z-0123abcd")
    assert handle.status == "running" and not handle.owned
    for action in (backend.stop, backend.remove):
        with pytest.raises(NotOwnedError):
            await action(handle)
    assert sleeper.poll() is None


async def test_a_reused_pid_is_not_our_daemon(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """An owned record whose pid now names another process (other start time): not signalled."""
    state = tmp_path / "state"
    backend = LocalBackend(state)
    run_id, _ = await launch(backend, tmp_path)
    await backend.stop(await backend.get(run_id))
    folder = state / "live" / run_id
    record = LocalRecord.model_validate_json((folder / "record.json").read_bytes())
    started = start_time(sleeper.pid)
    assert started is not None
    stale = record.model_copy(update={"pid": sleeper.pid, "pid_start": started - 1})
    atomic_write_json(folder / "record.json", stale)
    handle = await backend.get(run_id)
    assert handle.status == "exited"
    await backend.stop(handle)
    await backend.remove(handle)
    assert sleeper.poll() is None


async def test_stop_escalates_to_sigkill_after_the_grace(
    tmp_path: Path, stubborn: subprocess.Popen[bytes]
) -> None:
    state = tmp_path / "state"
    record = plant_record(state, stubborn.pid, run_id="20250314T100000Z-00000001", in_ledger=True)
    backend = LocalBackend(state, stop_grace_s=0.3)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await backend.stop(await backend.get(record.run_id))
    assert 0.3 <= loop.time() - began < 8  # the grace was waited; slack for a loaded machine
    assert not is_alive(stubborn.pid, record.pid_start)  # (reaped by the backend: it is our child)
