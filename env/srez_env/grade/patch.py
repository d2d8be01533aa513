"""Diffs of the config files: the run's own and the reference patch (docs/environment.md §6.11).

The reference patch is never written by hand: it is the diff of a fresh episode that executes the
task's ``reference_fix`` through the normal ``step()`` path.
"""

from __future__ import annotations

from collections.abc import Mapping

from srez_env.env import SREEnv
from srez_env.task import Task
from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile, render_value


def unified_diff(initial: dict[str, ConfFile], final: dict[str, ConfFile]) -> str:
    """The run's diff: one unified diff per changed file, services in fixed order, n=3."""
    return unified_diff_texts(
        {s: f.text for s, f in initial.items()}, {s: f.text for s, f in final.items()}
    )


def unified_diff_texts(initial: Mapping[str, str], final: Mapping[str, str]) -> str:
    """:func:`unified_diff` over file texts (what the daemon reads back from its world folder)."""
    parts = []
    for s in topo.SERVICES:
        a, b = initial[s], final[s]
        if a != b:
            import difflib  # once a file changed: a daemon at rest does not load it

            lines = difflib.unified_diff(
                a.splitlines(True), b.splitlines(True), f"a/{s}/{s}.conf", f"b/{s}/{s}.conf", n=3
            )
            parts.append("".join(lines))
    return "".join(parts)


def changed_keys(
    initial: dict[str, ConfFile], final: dict[str, ConfFile]
) -> dict[str, tuple[str, str]]:
    """``{"service:key": (old, new)}`` for every key whose file value differs."""
    out = {}
    for s in topo.SERVICES:
        for key, old in initial[s].values.items():
            new = final[s].values[key]
            if new != old:
                out[f"{s}:{key}"] = (render_value(old), render_value(new))
    return out


_REFERENCE: dict[tuple[str, str], str] = {}


def reference_patch(task: Task) -> str:
    """The diff of an episode that runs ``reference_fix`` (memoised per task)."""
    key = (task.id, task.model_dump_json())
    if key not in _REFERENCE:
        env = SREEnv(task, agent="reference")
        env.reset()
        for action in task.reference_fix:
            env.step({"tool": action.tool, "args": dict(action.args)})
        env.force_submit("agent_exit")
        world, t = env.world, env.log.submit_clock or 0
        _REFERENCE[key] = unified_diff(world.at(0).files, world.at(t + topo.SOAK_MINUTES).files)
    return _REFERENCE[key]


def clear_reference_cache() -> None:
    """Forgets every memoised reference patch (for measuring cold starts)."""
    _REFERENCE.clear()
