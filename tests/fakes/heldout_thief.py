"""An agent that hunts for its held-out task's file and ground truth; standard library only.

``python heldout_thief.py agent PATH...``: a ``cmd:`` agent. It asks the agent socket for its
task, probes, says what it found in one ``assistant`` note (JSON) and submits.

``python heldout_thief.py probe TASK_ID PATH...``: the same probes for task ``TASK_ID``, the report
printed on stdout (run as a run's agent user inside its container, where the docker backend runs no
``cmd:`` agent).

What it tries, each a probe:

* every ``PATH`` it is told (the set's folder and its task files on the host: the strongest
  attacker knows where the evaluator keeps them), every file under a folder;
* ``$SREZ_TASK_FILE`` if its environment has it, and ``/run/srez/task.json`` (where a container's
  daemon reads it);
* the ``SREZ_TASK_FILE`` of every process whose ``/proc/PID/environ`` it can read;
* a walk of the whole file system it can see (not ``/proc``, ``/sys``, ``/dev``) for any file
  named after its task id, ``task.json`` or ``taskset.json``.

A probe that reads a file reports its size, its SHA-256 and whether it holds the ground truth (the
words ``ground_truth`` or ``reference_fix``).
"""

import hashlib
import http.client
import json
import os
import socket
import sys
import time
from pathlib import Path

SECRETS = (b"ground_truth", b"reference_fix")
WALK_LIMIT_S = 15.0


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("agent")
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def call(method, path, body=None):
    conn = UnixHTTPConnection(os.environ["SREZ_AGENT_SOCKET"])
    payload = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, payload, {"Content-Type": "application/json"})
    data = conn.getresponse().read()
    conn.close()
    return json.loads(data) if data else None


def read(path):
    try:
        with open(path, "rb") as f:  # noqa: PTH123 - the standard library only, as an agent would
            data = f.read(64 << 20)
    except OSError as e:
        return {"path": str(path), "error": e.strerror or str(e)}
    return {
        "path": str(path),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "secret": any(word in data for word in SECRETS),
    }


def told(paths):
    """Every file under each told path (a folder is searched all the way down, as an attacker
    told where the state is would: the whole-disk walk may run out of time first)."""
    out = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            out.append(read(path))
            continue
        try:
            next(iter(path.iterdir()), None)
        except OSError as e:
            out.append({"path": raw, "error": e.strerror or str(e)})
            continue
        for root, _dirs, files in os.walk(path, onerror=lambda e: None):
            out += [read(Path(root) / name) for name in sorted(files)]
    return out


def from_processes():
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            pairs = environ.read_bytes().split(b"\0")
        except OSError:
            continue
        for pair in pairs:
            if pair.startswith(b"SREZ_TASK_FILE="):
                found.append(read(pair.split(b"=", 1)[1].decode(errors="replace")))
    return found


def walk(task_id):
    wanted = {"task.json", "taskset.json"}
    found, seen = [], 0
    deadline = time.monotonic() + WALK_LIMIT_S
    for root, dirs, files in os.walk("/", onerror=lambda e: None):
        if root == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
        seen += len(files)
        for name in files:
            if task_id in name or name in wanted:
                found.append(read(os.path.join(root, name)))  # noqa: PTH118
        if time.monotonic() > deadline:
            break
    return found, seen


def probe(task_id, paths):
    direct = [Path(p) for p in (os.environ.get("SREZ_TASK_FILE"), "/run/srez/task.json") if p]
    walked, seen = walk(task_id)
    probes = told(paths) + [read(p) for p in direct] + from_processes() + walked
    return {
        "task_id": task_id,
        "files_walked": seen,
        "probes": probes,
        "readable": [p for p in probes if "bytes" in p],
    }


def main():
    mode = sys.argv[1]
    if mode == "probe":
        print(json.dumps(probe(sys.argv[2], sys.argv[3:])))
        return
    task = call("GET", "/task")
    report = probe(task["task_id"], sys.argv[2:])
    report["oracle"] = task.get("oracle") is not None
    call("POST", "/dialog", {"type": "assistant", "fields": {"text": json.dumps(report)}})
    call("POST", "/submit", {"summary": "thief"})


main()
