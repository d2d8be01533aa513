"""Text screenshots of the real terminal UI, for ``docs/watch.md``.

Usage (``make tui-screens`` runs it; needs tmux)::

    python docs/capture_tui.py           # rewrite the screens in docs/watch.md
    python docs/capture_tui.py --print   # print them instead

It evaluates the heuristic expert on ``sre-007`` into a scratch folder, opens ``srez attach RUN``
and ``srez tui`` in a private tmux server at 120x34, presses the keys a reader would (the viewer's
dialog beside its Changes tab, then its Evaluation Result tab, then the dashboard of a small
managed run made for it), and copies each screen
with ``tmux capture-pane``. Each screen replaces the text between its ``<!-- screen:NAME -->``
markers in ``docs/watch.md``; nothing else of the page changes. Run ids and times differ from one
capture to the next, so the screens are not compared by any test.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "watch.md"
COLS, ROWS = 120, 34
SREZ = Path(sys.executable).with_name("srez")


class Tmux:
    """A private tmux server running one command; :meth:`close` ends it."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        self.socket = f"srez-screens-{os.getpid()}"
        self.env = env
        size = ["-x", str(COLS), "-y", str(ROWS)]
        self.run("new-session", "-d", "-s", "s", *size, "-c", str(cwd), f"{command}; sleep 60")

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "s")

    def wait_for(self, pattern: str, limit_s: float = 60.0) -> str:
        deadline = time.monotonic() + limit_s
        while not re.search(pattern, screen := self.screen(), re.M):
            if time.monotonic() > deadline:
                msg = f"{pattern!r} did not appear; the screen:\n{screen}"
                raise TimeoutError(msg)
            time.sleep(0.2)
        time.sleep(0.5)  # let the last redraw land
        return self.screen()

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "s", *keys)

    def close(self) -> None:
        self.run("kill-server")


def capture() -> dict[str, str]:
    """The screens, by name: ``viewer`` (its Changes tab), ``evaluation`` and ``dashboard``."""
    if shutil.which("tmux") is None:
        msg = "tmux is not installed: apt-get install tmux"
        raise FileNotFoundError(msg)
    screens: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="srez-screens-") as scratch:
        where = Path(scratch)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SREZ_")},
            "HOME": str(where),
            "TERM": "xterm-256color",
            "SREZ_STATE": str(where / "state"),
        }
        results = where / "results"
        subprocess.run(
            [str(SREZ), "eval", "--agent", "heuristic", "--tasks", "sre-007", "--no-floors"]
            + ["--results", str(results)],
            env=env,
            cwd=where,
            check=True,
            capture_output=True,
        )
        run = next((results / "sre-007" / "none" / "heuristic").iterdir()).name
        viewer = Tmux(f"{SREZ} attach {run} --results {results}", where, env)
        try:
            screens["viewer"] = viewer.wait_for("Session complete")
            viewer.keys("3")
            screens["evaluation"] = viewer.wait_for(r"Reward \d")
        finally:
            viewer.close()
        for command in (
            "managed create demo --baselines heuristic,random --tasks sre-007,sre-025 --backend inline",
            "managed run demo",
        ):
            subprocess.run(
                [str(SREZ), *command.split()], env=env, cwd=where, check=True, capture_output=True
            )
        dashboard = Tmux(f"{SREZ} tui", where, env)
        try:
            screens["dashboard"] = dashboard.wait_for(r"\bdemo\b")
        finally:
            dashboard.close()
    return {name: _tidy(text) for name, text in screens.items()}


def _tidy(screen: str) -> str:
    lines = [line.rstrip() for line in screen.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def replace(page: str, screens: dict[str, str]) -> str:
    """``page`` with the text between each screen's markers replaced by a text block."""
    for name, text in screens.items():
        start, end = f"<!-- screen:{name} -->", f"<!-- /screen:{name} -->"
        if start not in page or end not in page:
            msg = f"{PAGE.name} has no {start} ... {end} markers"
            raise ValueError(msg)
        before, rest = page.split(start, 1)
        _, after = rest.split(end, 1)
        page = f"{before}{start}\n```text\n{text}\n```\n{end}{after}"
    return page


def main(argv: list[str] | None = None) -> int:
    """Captures the screens and writes them into the page (or prints them)."""
    cli = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    cli.add_argument("--print", action="store_true", help="print the screens, change nothing")
    args = cli.parse_args(argv)
    screens = capture()
    if args.print:
        for name, text in screens.items():
            print(f"--- {name}\n{text}")
        return 0
    PAGE.write_text(replace(PAGE.read_text(encoding="utf-8"), screens), encoding="utf-8")
    print(f"wrote {len(screens)} screens into {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
