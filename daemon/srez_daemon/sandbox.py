"""The agent's bubblewrap sandbox on the ``local`` backend (docs/design.md §13.2).

On ``local`` the daemon and the agent are one user on one machine. Without a sandbox, the agent
can read the task files from the installed package, the run's token and the live run folder,
append to ``archive/dialog.jsonl``, and leave a ``setsid`` + double-forked process behind that
rewrites ``result.json`` once the run is graded. With :class:`Sandbox`, the agent runs under
``bwrap`` in new PID, mount, IPC, UTS and user namespaces (``--unshare-all``), with no
capabilities, no further user namespaces, ``--die-with-parent`` and ``--new-session``. It sees:

* read-only: the system's programs and libraries (``/usr``, ``/bin``, ``/lib*``), the few files
  of ``/etc`` that name resolution, TLS and the dynamic loader read (:data:`ETC_ENTRIES`), the
  interpreter (``sys.prefix``, ``sys.base_prefix``), every folder on the daemon's ``sys.path``
  but its working folder, the ``srez_core``, ``srez_env`` and ``srez_daemon`` packages, the files named in the
  agent's command line and a replay agent's file;
* hidden even there (an empty read-only folder over them, :func:`hidden_paths`): the task files
  (every ``srez_env/tasks`` folder on ``sys.path``), the task generator (``srez_env/generator``,
  which writes the canonical task files), the run folder, the token file, the agent socket's
  folder and whatever the launcher adds (``SREZ_SANDBOX_HIDE``: the ``local`` backend passes
  ``$SREZ_STATE``);
* writable: the agent socket (at :data:`SOCKET`) and a private scratch tmpfs at :data:`SCRATCH`,
  its ``HOME``, ``TMPDIR`` and working folder, gone with the sandbox;
* its own ``/proc`` (only its own processes) and a minimal ``/dev``;
* the network only when a custom command is given a model (it calls its provider, as on the
  host; ``--share-net``). A baseline or replay run has a network namespace of its own with
  nothing in it, and so has a built-in model agent (``llm``, ``llm-json``) whose model relay is
  on loopback: it reaches the relay through a unix socket the daemon forwards (at
  :data:`MODEL_SOCKET`), and nothing else of the host, no view, no daemon, no internet.

The sandbox is one process tree under bwrap's own init (pid 1 of the new PID namespace): when the
agent's main process exits, or when the daemon kills that init at the end of the agent phase, the
kernel kills every process inside, whatever it did (``setsid``, double forks). ``--die-with-parent``
does the same if the daemon dies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from srez_daemon.protocol.sandbox import namespace_options

SOCKET: Final = Path("/run/srez/agent.sock")
"""Where the agent socket is inside the sandbox."""
MODEL_SOCKET: Final = Path("/run/srez/model.sock")
"""Where a built-in model agent's way to its model relay is inside the sandbox."""
SCRATCH: Final = Path("/tmp")  # noqa: S108 - a private tmpfs inside the sandbox
"""The agent's private, writable scratch folder inside the sandbox (a tmpfs)."""
HOSTNAME: Final = "srez-agent"
SYSTEM_DIRS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Shown read-only (or re-created as the same symbolic link, on merged-/usr systems)."""
ETC_ENTRIES: Final = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "crypto-policies",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "passwd",
    "pki",
    "protocols",
    "resolv.conf",
    "services",
    "ssl",
    "timezone",
)
"""What the agent sees of ``/etc``: name resolution, TLS certificates, the loader, user names
(and ``/etc/python3*``, a system Python's own configuration)."""


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How one agent is sandboxed; :meth:`argv` is the whole ``bwrap`` command line.

    Paths are host paths; each read-only one is shown at the same place inside, so an
    interpreter, ``sys.path`` and the agent's command line work unchanged.
    """

    bwrap: Path
    """The ``bwrap`` executable."""
    socket: Path
    """The agent socket on the host (bound writable at :data:`SOCKET`)."""
    read_only: tuple[Path, ...] = ()
    """Host paths shown read-only, besides the system's (:data:`SYSTEM_DIRS`, ``/etc``)."""
    hidden: tuple[Path, ...] = ()
    """Host paths never shown, even inside a read-only path."""
    network: bool = False
    """Keep the host's network (a custom command given a model); otherwise an empty network
    namespace."""
    model_socket: Path | None = None
    """A unix socket on the host forwarded to the model relay (:mod:`srez_daemon.model_forward`),
    bound at :data:`MODEL_SOCKET`: a built-in model agent's only way out of its empty network."""
    model_target: tuple[str, int] | None = None
    """The relay's loopback address, which the daemon forwards :attr:`model_socket` to."""
    system: tuple[str, ...] = field(default=SYSTEM_DIRS)
    etc: tuple[str, ...] = field(default=ETC_ENTRIES)

    def argv(self, command: Sequence[str]) -> list[str]:
        """The ``bwrap`` command line that runs ``command`` in the sandbox."""
        out = [str(self.bwrap), *namespace_options(network=self.network)]
        out += ["--hostname", HOSTNAME]
        shown: list[tuple[Path, Path]] = []  # (place inside, resolved host path)
        for name in self.system:
            path = Path(name)
            if path.is_symlink():
                out += ["--symlink", str(path.readlink()), name]
            elif path.is_dir():
                out += ["--ro-bind", name, name]
                shown.append((path, _resolved(path)))
        python_etc = sorted(p.name for p in Path("/etc").glob("python3*"))  # Debian's site config
        for name in (*self.etc, *python_etc):
            path = Path("/etc") / name
            if path.exists():
                out += ["--ro-bind", str(path), str(path)]
                shown.append((path, _resolved(path)))
        out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", str(SCRATCH)]
        hidden = sorted({_resolved(p) for p in self.hidden})
        for path in self._binds(shown, hidden):
            out += ["--ro-bind", str(path), str(path)]
            shown.append((path, _resolved(path)))
        for secret in hidden:  # over everything shown: an empty read-only folder or file
            for inside, host in shown:
                if _within(secret, host):
                    target = str(inside / secret.relative_to(host))
                    if secret.is_dir():
                        out += ["--tmpfs", target, "--remount-ro", target]
                    elif secret.exists():
                        out += ["--ro-bind", "/dev/null", target]
        out += ["--bind", str(self.socket), str(SOCKET)]
        if self.model_socket is not None:
            out += ["--bind", str(self.model_socket), str(MODEL_SOCKET)]
        out += ["--chdir", str(SCRATCH), "--"]
        return [*out, *command]

    def _binds(self, shown: list[tuple[Path, Path]], hidden: list[Path]) -> list[Path]:
        """The read-only paths to bind: existing, not hidden, not inside one already shown."""
        places = {inside for inside, _ in shown}
        chosen: list[Path] = []
        for path in sorted({Path(os.path.abspath(p)) for p in self.read_only}):  # noqa: PTH100
            host = _resolved(path)
            if path == Path("/") or not path.exists() or any(_within(host, h) for h in hidden):
                continue
            if path in places or any(parent in places for parent in path.parents):
                continue
            if any(parent in chosen for parent in path.parents):
                continue
            chosen.append(path)
        return chosen

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment inside: the socket's place, the scratch folder as home."""
        inside = dict(env)
        inside.update(
            SREZ_AGENT_SOCKET=str(SOCKET), HOME=str(SCRATCH), TMPDIR=str(SCRATCH), PWD=str(SCRATCH)
        )
        if self.model_socket is not None:
            inside["SREZ_LLM_SOCKET"] = str(MODEL_SOCKET)
        return inside


def code_paths(cwd: Path | None = None) -> list[Path]:
    """The interpreter and the project's code: ``sys.prefix`` and friends, every existing folder
    on ``sys.path`` except the working folder (``python -m`` puts it first; it is wherever the
    launcher ran), and the ``srez_core``, ``srez_env`` and ``srez_daemon`` packages (an editable
    install maps them without a ``sys.path`` entry)."""
    import srez_core
    import srez_daemon
    import srez_env

    here = _resolved(cwd or Path.cwd())
    found = [
        Path(p)
        for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
        if p  # pragma: no branch
    ]
    found.append(Path(sys.executable).parent)
    for entry in sys.path:
        if entry and Path(entry).is_dir() and _resolved(Path(entry)) != here:
            found.append(Path(entry))
    found += [Path(m.__file__).parent for m in (srez_core, srez_env, srez_daemon) if m.__file__]
    # The client package too, located without importing it (the daemon never imports the client):
    # an MCP agent's server runs as ``python -m srez_client.integrations.mcp`` in the sandbox, and
    # an editable install maps the package without a ``sys.path`` entry.
    client = importlib.util.find_spec("srez_client")
    if client is not None and client.submodule_search_locations:
        found += [Path(p) for p in client.submodule_search_locations]
    return found


def task_secret_paths() -> list[Path]:
    """Every ``srez_env/tasks`` (task files: ground truth, reference fix) and ``srez_env/generator``
    (it writes the canonical task files) folder reachable from ``sys.path`` or the imported
    package."""
    import srez_env

    roots = [Path(srez_env.__file__).parent]
    roots += [Path(entry) / "srez_env" for entry in sys.path if entry]
    return [
        root / name
        for root in dict.fromkeys(roots)
        for name in ("tasks", "generator")
        if (root / name).is_dir()
    ]


def command_files(command: Sequence[str], environ: Mapping[str, str]) -> list[Path]:
    """Files the agent's command names by absolute path, and its program when found on ``PATH``
    outside the system folders: shown read-only so the command runs as it would outside."""
    found: list[Path] = []
    if command:
        program = shutil.which(command[0], path=environ.get("PATH") or os.defpath)
        if program:
            found.append(Path(program))
    found += [Path(arg) for arg in command if arg.startswith("/") and Path(arg).is_file()]
    return found


def replay_file(agent_spec: str) -> list[Path]:
    """The file of a ``replay:PATH`` agent (absolute: the launcher made it so)."""
    if agent_spec.startswith("replay:"):
        path = Path(agent_spec.removeprefix("replay:"))
        if path.is_absolute():
            return [path]
    return []


def python_agent_source(agent_spec: str) -> list[Path]:
    """The module file (or package folder) of a ``module:Class`` agent, and nothing else of
    the folder it is in (the launcher put that folder on ``PYTHONPATH``)."""
    from srez_env.agents.python_agent import import_path, module_source

    parts = import_path(agent_spec)
    source = module_source(parts[0]) if parts is not None else None
    return [source] if source is not None else []


def build_sandbox(
    bwrap: Path,
    *,
    socket: Path,
    command: Sequence[str],
    agent_spec: str,
    model: str,
    environ: Mapping[str, str],
    hide: Iterable[Path] = (),
    model_socket: Path | None = None,
) -> Sandbox:
    """The sandbox of one agent: what it is shown and what is hidden (module docstring). With
    ``model_socket`` (a built-in model agent whose relay is on loopback), the agent has no
    network: it reaches its relay through that socket alone."""
    target = relay_address(environ) if model_socket is not None else None
    read_only = [
        *code_paths(),
        *command_files(command, environ),
        *replay_file(agent_spec),
        *python_agent_source(agent_spec),
    ]
    hidden = [*task_secret_paths(), *hide, socket.parent]
    return Sandbox(
        bwrap=bwrap,
        socket=socket,
        read_only=tuple(read_only),
        hidden=tuple(hidden),
        network=model not in ("", "none") and target is None,
        model_socket=model_socket if target is not None else None,
        model_target=target,
    )


def relay_address(environ: Mapping[str, str]) -> tuple[str, int] | None:
    """The loopback ``(host, port)`` of ``SREZ_LLM_API_BASE`` (the launcher's model relay), or
    None when it is not a plain-HTTP loopback address (a server elsewhere needs the network)."""
    from srez_daemon.agent_network import relay_target

    target = relay_target(environ)
    return target if target is not None and target[0] in ("127.0.0.1", "localhost", "::1") else None
