"""A complete SRE-Zero agent using only Python's standard library ("bring your own agent").

The daemon starts it with SREZ_AGENT_SOCKET set; everything else comes from the socket:
GET /task (the prompt and step budget), POST /tools/<name> (one action each; the daemon runs it
on the simulator and records it), POST /dialog (notes for the dialog), POST /submit.

This one is deliberately naive: it reads the alerts, looks at the logs of every alerting service,
says what it saw, declares "none" and submits. Replace `decide` with your own policy.
Run it with:  srez run --task sre-001 --agent cmd:byo --agent-cmd 'python3 examples/byo_agent.py'
"""

import http.client
import json
import os
import socket


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over the daemon's unix socket."""

    def __init__(self, path):
        super().__init__("agent")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def call(method, path, body=None):
    conn = UnixHTTPConnection(os.environ["SREZ_AGENT_SOCKET"])
    payload = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, payload, {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return json.loads(data) if data else None


def decide(prompt):
    """Yields (tool, args) actions; a real agent would look at each observation."""
    alerts = call("POST", "/tools/get_alerts", {})
    services = sorted({a["service"] for a in json.loads(alerts["output"])["alerts"]})
    for service in services:
        yield "get_logs", {"service": service, "limit": 20}
    yield "declare_root_cause", {"service": "none", "fault": "none"}


def main():
    task = call("GET", "/task")
    print(f"task {task['task_id']}: {task['max_steps']} steps")
    for tool, args in decide(task["prompt"]):
        observation = call("POST", f"/tools/{tool}", args)
        if observation["done"]:
            return
    call("POST", "/dialog", {"type": "assistant", "fields": {"text": "Nothing conclusive; submitting."}})
    result = call("POST", "/submit", {"summary": "byo example agent"})
    print("submitted at step", result["step"])


if __name__ == "__main__":
    main()
