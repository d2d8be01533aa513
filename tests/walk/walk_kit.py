"""The README walk's machinery: the commands the documentation shows, and a newcomer who runs them.

:func:`readme_commands` reads every command line of a page's ``sh`` blocks (continuations joined,
comments dropped, spaces collapsed); :func:`documented_commands` those of README.md and of every
page of ``docs/``, the pages the README sends a reader to. :class:`Walker` runs concrete :class:`Step` commands
in a fresh clone (the repository's files as ``git ls-files`` lists them, nothing else: no
``results/``, no generated sets, no state), under a home folder of its own, with no ``SREZ_*``
variable and no provider key from the machine: what a person who just cloned the repository and
ran ``make setup`` has. Each step runs through ``bash`` (so pipes, ``$(...)`` and ``<(...)`` work
as they do for the reader) and must exit with its status and print what it expects; a failure
names the documented line it walks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
VENV_BIN = Path(sys.executable).parent

_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
_COMMENT = re.compile(r"(?:^|\s)#.*$")
_OPTION = re.compile(r"(?<![\w$/-])--?[A-Za-z][\w-]*")
# What a reader's shell would bring along and the walk must not: our own settings, provider keys
# and endpoints, and a state folder elsewhere.
_FOREIGN = re.compile(r"SREZ_\w+|\w+_API_KEY|\w+_API_BASE|\w+_BASE_URL|XDG_\w+|REQUIRE_\w+")


def readme_commands(text: str) -> list[str]:
    """Every command line of the ``sh`` blocks of ``text``, in order, normalised."""
    lines = []
    for block in _SH_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            command = " ".join(_COMMENT.sub("", line).split())
            if command:
                lines.append(command)
    return lines


def documents() -> list[Path]:
    """README.md, then every page of ``docs/`` in name order: what the walk covers."""
    return [README, *sorted(DOCS.glob("*.md"))]


def documented_commands() -> dict[str, list[str]]:
    """Every command line of every document's ``sh`` blocks, by the document's repository path."""
    return {str(d.relative_to(ROOT)): readme_commands(d.read_text()) for d in documents()}


def options(command: str) -> set[str]:
    """The options a command line shows (``[--keep]`` included), not its values."""
    return set(_OPTION.findall(command))


@dataclass(frozen=True, slots=True)
class Step:
    """One concrete command: ``{name}`` fields come from the walk's context.

    ``expect`` is a regular expression searched in stdout and stderr together; its named groups
    join the context (how a run id reaches the next step).
    """

    command: str
    expect: str = ""
    status: int = 0
    stdin: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 240.0


@dataclass
class Walker:
    """A newcomer in a fresh clone: runs steps there and checks what they print."""

    clone: Path
    home: Path
    context: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    """The last output of each README line walked, for the section's own checks."""
    seconds: dict[str, float] = field(default_factory=dict)
    """How long each README line took to walk (to keep the walk within the suite's minutes)."""
    terminals: int = 0
    """How many terminals this walker has opened (each gets a tmux server of its own)."""

    @classmethod
    def fresh(cls, where: Path) -> Walker:
        clone, home = where / "clone", where / "home"
        home.mkdir(parents=True)
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        for name in filter(None, listed.split("\0")):
            source = ROOT / name
            if source.is_file():  # a file deleted in the work tree is not in the clone
                target = clone / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        return cls(clone, home)

    @property
    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not _FOREIGN.fullmatch(k)}
        env.update(
            HOME=str(self.home),
            PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            TERM="xterm-256color",
            COLUMNS="200",
        )
        env.pop("PYTEST_XDIST_WORKER", None)
        return env

    @property
    def state(self) -> Path:
        """Where a newcomer's runs live: the default ``~/.local/state/srez``."""
        return self.home / ".local" / "state" / "srez"

    def stop_local_runs(self) -> None:
        """Stops every local run this walker's home still has (a failed walk leaves none)."""
        live = self.state / "live"
        for run in sorted(live.iterdir()) if live.is_dir() else ():
            subprocess.run(
                ["srez", "runs", "stop", run.name],
                env=self.environment,
                cwd=self.clone,
                capture_output=True,
                timeout=60,
            )

    def filled(self, text: str) -> str:
        """``text`` with each ``{name}`` of the context replaced (a regex's ``{8}`` stays)."""
        return re.sub(r"\{([a-z_]+)\}", lambda m: self.context.get(m[1], m[0]), text)

    def walk(self, readme_line: str, steps: Iterable[Step]) -> str:
        """Runs the steps of one README line; returns the last step's output."""
        output, started = "", time.monotonic()
        for step in steps:
            command = self.filled(step.command)
            done = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                cwd=self.clone,
                env={**self.environment, **step.env},
                input=step.stdin,
                capture_output=True,
                text=True,
                timeout=step.timeout_s,
            )
            output = done.stdout + done.stderr
            where = (
                f"documented: {readme_line}\nwalked: {command}\nexit {done.returncode}\n{output}"
            )
            assert done.returncode == step.status, where
            expect = self.filled(step.expect)
            found = re.search(expect, output, re.M)
            assert found, f"{where}\nexpected: {expect!r}"
            self.context.update(found.groupdict())
        self.outputs[readme_line] = output
        self.seconds[readme_line] = time.monotonic() - started
        return output

    def terminal(self, command: str) -> Terminal:
        """``command`` in a real terminal (tmux, 160x45, ``ixon`` on as in a user's terminal)."""
        # A server of its own per terminal: a new session on the socket of a server that
        # kill-server is still ending can be lost with it (seen on a loaded machine).
        self.terminals += 1
        socket = f"walk-{os.getpid()}-{id(self):x}-{self.terminals}"
        done = self.home / f"exit-{len(self.outputs)}-{self.terminals}"
        shell = f"stty ixon; {self.filled(command)}; echo $? > {done}; sleep 60"
        terminal = Terminal(socket, done, self.environment)
        terminal.tmux(
            "new-session", "-d", "-s", "walk", "-x", "160", "-y", "45", "-c", str(self.clone), shell
        )
        return terminal


@dataclass
class Terminal:
    """A tmux session the walk types into; :meth:`close` ends it."""

    socket: str
    done: Path
    env: Mapping[str, str]

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            env=dict(self.env),
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "walk")

    def wait_for(self, pattern: str, limit_s: float = 60.0) -> str:
        deadline = time.monotonic() + limit_s
        while not re.search(pattern, screen := self.screen(), re.M):
            assert time.monotonic() < deadline, f"{pattern!r} not on screen:\n{screen}"
            time.sleep(0.1)
        return screen

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "walk", *keys)

    def exit_status(self, limit_s: float = 30.0) -> int:
        """The command's exit status once it has ended."""
        deadline = time.monotonic() + limit_s
        while not self.done.exists() or not self.done.read_text().strip():
            assert time.monotonic() < deadline, f"still running; the screen:\n{self.screen()}"
            time.sleep(0.1)
        return int(self.done.read_text())

    def close(self) -> None:
        self.tmux("kill-server")
