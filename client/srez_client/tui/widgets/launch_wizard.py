"""The launch wizard: tasks, agent, model, backend and limits, then launch; every run launched
is attached at once, and mirrored into ``results/`` in the background when it ends.

The LLM agents (``llm``, ``llm-json``) need a litellm slug and the baselines take ``none``, as on
the command line. An LLM run on ``docker`` reaches its model through the relay this process
serves (docs/security.md A12), so the TUI must stay open while its agent works.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import urwid

from srez_client.backends.base import Backend, LaunchSpec, RunHandle
from srez_client.errors import ClientError
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import run_to_results, scratch_dir
from srez_client.models_catalog import valid_slug
from srez_client.tui.shell import Shell
from srez_env import agent_registry
from srez_env.agents.llm import LLM_SPECS
from srez_env.errors import EnvError

DEFAULT_AGENT = "heuristic"
AGENTS = (DEFAULT_AGENT, *(name for name in agent_registry.LAUNCHABLE if name != DEFAULT_AGENT))
"""The built-in agents offered, the default first (it starts selected)."""


def parse_tasks(text: str, known: Sequence[str]) -> list[str]:
    """Task ids from ``all`` or a comma list; unknown ids raise ValueError."""
    wanted = (
        list(known)
        if text.strip() in ("", "all")
        else [t.strip() for t in text.split(",") if t.strip()]
    )
    unknown = [t for t in wanted if t not in known]
    if unknown:
        msg = f"unknown task {unknown[0]!r}"
        raise ValueError(msg)
    return wanted


def parse_model(agent: str, text: str) -> str:
    """The model of a run of ``agent``: a slug for the LLM agents, ``none`` for the others;
    anything else raises ValueError."""
    model = text.strip()
    if agent in LLM_SPECS:
        if model in ("", "none"):
            msg = f"agent {agent} needs a model: a litellm slug such as openai/gpt-4o-mini"
            raise ValueError(msg)
        if not valid_slug(model):
            msg = f"model {model!r} is not a slug (provider/model, e.g. openai/gpt-4o-mini)"
            raise ValueError(msg)
        return model
    if model not in ("", "none"):
        msg = f"model {model!r} is only for the llm and llm-json agents; baselines take none"
        raise ValueError(msg)
    return "none"


@dataclass(frozen=True, slots=True)
class Choice:
    """What the form says to launch."""

    tasks: list[str]
    agent: str
    model: str
    backend: str
    limit_s: float | None
    seed: int


def parse_limit(text: str) -> float | None:
    """A time limit in seconds (empty: none); anything else raises ValueError."""
    text = text.strip()
    if not text:
        return None
    try:
        limit = float(text)
    except ValueError:
        limit = -1.0
    if not limit > 0 or limit == float("inf"):
        msg = f"time limit must be a number of seconds above 0, got {text!r}"
        raise ValueError(msg)
    return limit


def parse_seed(text: str) -> int:
    """A run seed (empty: 0); anything but a whole number raises ValueError."""
    text = text.strip() or "0"
    try:
        return int(text)
    except ValueError:
        msg = f"seed must be a whole number, got {text!r}"
        raise ValueError(msg) from None


class LaunchWizard(urwid.WidgetWrap[urwid.Widget]):
    """The form."""

    def __init__(self, shell: Shell, backends: Sequence[Backend]) -> None:
        self.shell = shell
        self.backends = {b.name: b for b in backends}
        self.tasks = urwid.Edit("Tasks (comma list or all): ", "sre-001")
        group: list[urwid.RadioButton] = []
        self.agents = [urwid.RadioButton(group, a) for a in AGENTS]
        self.replay = urwid.Edit("  or replay file: ")
        self.model = urwid.Edit("Model (none for baselines): ", "none")
        bgroup: list[urwid.RadioButton] = []
        self.backend_buttons = [urwid.RadioButton(bgroup, n) for n in self.backends]
        self.limit = urwid.Edit("Time limit, s (empty: none): ")
        self.seed = urwid.Edit("Seed: ", "0")
        self.keep = urwid.CheckBox("Keep the daemon serving after the run")
        self.message = urwid.Text("")
        launch = urwid.AttrMap(
            urwid.Button("Launch", on_press=lambda _b: self.launch()), "tab", "tab_on"
        )
        cancel = urwid.AttrMap(
            urwid.Button("Cancel", on_press=lambda _b: shell.pop()), "tab", "tab_on"
        )
        rows: list[urwid.Widget] = [
            urwid.Text(("title", "Launch runs")),
            self.tasks,
            urwid.Text("Agent:"),
            *self.agents,
            self.replay,
            self.model,
            urwid.Text("Backend:"),
            *self.backend_buttons,
            self.limit,
            self.seed,
            self.keep,
            urwid.Columns([launch, cancel], dividechars=2),
            self.message,
        ]
        super().__init__(urwid.ListBox(urwid.SimpleFocusListWalker[Any](rows)))

    def choice(self) -> Choice:
        """What the form says, or ValueError (or EnvError) naming what is wrong."""
        from srez_env.tasks import load_tasks

        known = [t.id for t in load_tasks(None)]
        tasks = parse_tasks(self.tasks.edit_text, known)
        replay = self.replay.edit_text.strip()
        agent = f"replay:{replay}" if replay else next(b.label for b in self.agents if b.state)
        backend = next((b.label for b in self.backend_buttons if b.state), "")
        if backend not in self.backends:
            msg = "no backend to launch on"
            raise ValueError(msg)
        return Choice(
            tasks=tasks,
            agent=agent,
            model=parse_model(agent, self.model.edit_text),
            backend=backend,
            limit_s=parse_limit(self.limit.edit_text),
            seed=parse_seed(self.seed.edit_text),
        )

    def launch(self) -> None:
        """Validate and launch (in the background)."""
        try:
            choice = self.choice()
        except (ValueError, EnvError) as e:
            self.message.set_text(("error", str(e)))
            return
        self.message.set_text("")
        self.shell.spawn(self._launch(choice), "launch")

    async def _launch(self, choice: Choice) -> None:
        backend = self.backends[choice.backend]
        launched = 0
        for task in choice.tasks:
            spec = LaunchSpec(
                task_id=task,
                agent_spec=choice.agent,
                model=choice.model,
                run_seed=choice.seed,
                keep=self.keep.state,
                time_limit_s=choice.limit_s,
                results_root=self.shell.results_root,
            )
            launcher = RunLauncher(backend)  # one model relay per run, closed once it is mirrored
            try:
                handle = await launcher.launch(spec)
            except (ClientError, EnvError, OSError) as e:
                launcher.close()
                self.shell.notify(f"{task}: not launched: {e}")
                continue
            launched += 1
            self.shell.open_run(handle.run_id)
            self.shell.spawn(self._mirror(launcher, spec, handle), f"mirror-{handle.run_id}")
        self.shell.notify(f"launched {launched} of {len(choice.tasks)} runs on {choice.backend}")

    async def _mirror(self, launcher: RunLauncher, spec: LaunchSpec, handle: RunHandle) -> None:
        scratch = scratch_dir(self.shell.state_dir)
        try:
            with contextlib.suppress(ClientError, OSError):
                await run_to_results(
                    launcher.backend, spec, scratch, handle=handle, launcher=launcher
                )
        finally:
            launcher.close()


def open_wizard(shell: Shell, backends: Sequence[Backend]) -> None:
    """Show the wizard."""
    shell.push(LaunchWizard(shell, [b for b in backends if b.name != "inline"]), "Launch")
