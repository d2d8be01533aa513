"""``make card``: the figures of ``docs/benchmark-card.md``, from a fresh evaluation.

The card quotes numbers (the baselines' and the floors' scores with their intervals, the task
counts, the calibrators' outcomes). Each sits between two markers of its name::

    <!-- figure baselines-canonical -->
    ...
    <!-- /figure -->

and this module computes every one of them in this process: the baselines and the trivial-agent
floors played inline on the canonical 40 tasks and on a generated set of :data:`GENERATED_SEED`,
graded, and aggregated by the same report ``srez eval`` prints. ``python -m bench.card`` rewrites
the card's figures in place (the prose is the card's own); ``--check`` exits 1, naming the
figures, when the card differs from what a fresh evaluation gives (the test of the card runs
the same function).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from bench import model_card
from srez_client.results.report import Report, build_report, leaderboard_table
from srez_env import agent_registry
from srez_env.agents import make_agent
from srez_env.baselines import learners, memorised, ranges
from srez_env.baselines.loudest import loudest
from srez_env.generator.sets import CANONICAL_SEED, generate
from srez_env.generator.worlds import GENERATOR
from srez_env.grade import GRADE_SCHEMA_VERSION, Grade, grade_episode
from srez_env.play import play_episode
from srez_env.task import Task
from srez_env.tasks import load_tasks

CARD: Final = Path(__file__).resolve().parent.parent / "docs" / "benchmark-card.md"
AGENTS: Final = agent_registry.OFFLINE
"""The baselines and the floors, as the card's tables list them."""
FLOORS: Final = agent_registry.FLOORS
GENERATED_SEED: Final = 4242
"""The generated set the card quotes beside the canonical one (a public seed)."""
SLOW_FIGURES: Final = ("learners-at-scale",)
"""Figures whose freshness only the slow test checks (:mod:`bench.card_scale`)."""
MARKER: Final = re.compile(
    r"(<!-- figure (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(\n?<!-- /figure -->)", re.DOTALL
)


def play_all(tasks: Sequence[Task], agents: Sequence[str]) -> list[Grade]:
    """Every agent on every task (seed 0), graded."""
    grades = []
    for spec in agents:
        for task in tasks:
            env = play_episode(task, make_agent(spec, task, 0), name=spec)
            grades.append(grade_episode(env.record()))
    return grades


def _dumps(grades: Sequence[Grade]) -> list[dict[str, object]]:
    return [g.model_dump(mode="json", by_alias=True) for g in grades]


def _floors_line(tasks: Sequence[Task], grades: Sequence[Grade]) -> str:
    kinds = {t.id: t.fault_kind for t in tasks}
    parts = []
    for floor in FLOORS:
        mine = [g for g in grades if g.agent == floor]
        faults = [g for g in mine if kinds[g.task_id] != "none"]
        controls = [g for g in mine if kinds[g.task_id] == "none"]
        passed = sum(g.passed for g in faults)
        best = max((g.reward.total for g in faults), default=0.0)
        control = (
            sum(g.reward.total for g in controls) / len(controls) if controls else float("nan")
        )
        parts.append(
            f"`{floor}` passes {passed} of {len(faults)} fault tasks (best reward {best:.3f}) and"
            f" scores {control:.3f} on the {len(controls)} controls"
        )
    return "; ".join(parts) + "."


def _tasks_line(tasks: Sequence[Task]) -> str:
    tiers = {d: sum(t.difficulty == d for t in tasks) for d in ("easy", "medium", "hard")}
    kinds = {t.fault_kind for t in tasks} - {"none"}
    controls = sum(t.fault_kind == "none" for t in tasks)
    return (
        f"{len(tasks)} tasks: {tiers['easy']} easy, {tiers['medium']} medium, {tiers['hard']} hard;"
        f" {len(kinds)} fault kinds and {controls} no-fault controls."
    )


def _calibration_line(tasks: Sequence[Task], other: Sequence[Task], other_name: str) -> str:
    hard = [t for t in tasks if t.difficulty == "hard"]
    fooled = sum(loudest(t).blame != t.ground_truth.root_cause.service for t in hard)
    memory = memorised.learn(load_tasks())
    solved = memorised.run(hard, memory)
    passed = sum(g.passed for g in solved.values())
    learnt = ranges.learn(other)
    heuristic = mean_reward(play_all(tasks, ["heuristic"]))
    scopes = []
    for scope in ranges.SCOPES:
        grades = list(ranges.run(tasks, learnt, scope).values())
        hard_passed = sum(g.passed for g in grades if g.difficulty == "hard")
        scopes.append(
            f"{hard_passed} of {len(hard)} (scope {scope}, mean reward {mean_reward(grades):.3f})"
        )
    return (
        f"the loudest-anomaly calibrator blames the wrong service on {fooled} of {len(hard)} hard"
        f" tasks; the memorised baseline (the canonical set's typical values, learnt) passes"
        f" {passed} of {len(hard)}; the range calibrator (every key's healthy range learnt from"
        f" {other_name}) passes {' and '.join(scopes)}, against the heuristic expert's mean reward"
        f" of {heuristic:.3f}."
    )


def _learners_line(tasks: Sequence[Task], other: Sequence[Task], other_name: str) -> str:
    """The cheap learners of §6.18, fit on ``other`` and played on ``tasks``."""
    parts = []
    for label, learner in (
        ("the prompt lookup", learners.PromptLookup().fit(other)),
        ("the nearest T0 signature", learners.NearestSignature().fit(other)),
    ):
        got = learners.score(learner, tasks, label)
        parts.append(
            f"{label} passes {got.hard_passed} of {got.hard} hard tasks"
            f" (mean reward {got.mean_reward:.3f})"
        )
    return f"fit on {other_name} and played with a perfect fixer, {' and '.join(parts)}."


def mean_reward(grades: Sequence[Grade]) -> float:
    """The mean of the grades' rewards."""
    return sum(g.reward.total for g in grades) / len(grades)


def _board(report: Report) -> str:
    return "```\n" + leaderboard_table(report) + "\n```"


def _model_line(ledger_path: Path, total: int) -> str:
    """The first real model's figure, from the ledger ``make model-card`` keeps
    (:mod:`bench.model_card`): its leaderboard row over the tasks measured so far."""
    if not ledger_path.exists():
        return "Not measured yet: `make model-card` plays the canonical tasks a sitting at a time."
    ledger = json.loads(ledger_path.read_text(encoding="utf-8"))
    digests = model_card.task_digests()  # a grade of a task redrawn since is not quoted
    runs = [run for run in ledger["runs"] if model_card.is_current(run, digests)]
    if not runs:
        return "Not measured yet: `make model-card` plays the canonical tasks a sitting at a time."
    settings = " ".join(f"`{k}={v}`" for k, v in sorted(ledger["settings"].items()))
    walls = sorted(run["wall_s"] for run in runs)
    median = walls[len(walls) // 2]
    status = (
        f"all {total} canonical tasks"
        if len(runs) == total
        else f"{len(runs)} of the {total} canonical tasks so far ({', '.join(r['task_id'] for r in runs)})"
    )
    return (
        f"{ledger['model']} through `srez eval --agent {ledger['agent']}` on `local`, served by"
        f" {ledger['server']}, with {settings}; measured on {status}, seed 0,"
        f" a median of {median:.0f} s a task on this machine's two cores:\n\n"
        + _board(build_report([run["grade"] for run in runs]))
    )


def figures(*, at_scale: bool = True) -> dict[str, str]:
    """Every figure of the card, by name, from a fresh evaluation (about a minute, and as much
    again for the learners fit at scale, :data:`SLOW_FIGURES`, left out when not ``at_scale``)."""
    canonical = load_tasks()
    fresh = generate(GENERATED_SEED, len(canonical))
    out: dict[str, str] = {}
    sets = (
        ("canonical", canonical, fresh, f"the generated set of seed {GENERATED_SEED}"),
        ("generated", fresh, canonical, "the canonical set"),
    )
    for name, tasks, other, other_name in sets:
        grades = play_all(tasks, AGENTS)
        out[f"baselines-{name}"] = _board(build_report(_dumps(grades)))
        out[f"floors-{name}"] = _floors_line(tasks, grades)
        out[f"tasks-{name}"] = _tasks_line(tasks)
        out[f"calibration-{name}"] = _calibration_line(tasks, other, other_name)
        out[f"learners-{name}"] = _learners_line(tasks, other, other_name)
    out["model-card"] = _model_line(model_card.LEDGER, len(canonical))
    if at_scale:
        from bench import card_scale  # imports this module: loaded when the figure is measured

        out["learners-at-scale"] = card_scale.figure()
    out["versions"] = (
        f"grade version {GRADE_SCHEMA_VERSION}; world generator `{GENERATOR}`; canonical set seed"
        f" {CANONICAL_SEED}; generated set quoted here: seed {GENERATED_SEED}."
    )
    return out


def rewrite(text: str, values: Mapping[str, str]) -> tuple[str, list[str], list[str]]:
    """The card with every figure replaced; (text, figures that changed, unknown markers)."""
    changed: list[str] = []
    unknown: list[str] = []

    def one(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in values:
            unknown.append(name)
            return match.group(0)
        if match.group("body").strip() != values[name].strip():
            changed.append(name)
        return f"{match.group(1)}{values[name].strip()}\n<!-- /figure -->"

    return MARKER.sub(one, text), changed, unknown


def cited_figures(text: str) -> set[str]:
    """The names of the figures the card has markers for."""
    return {m.group("name") for m in MARKER.finditer(text)}


def main(argv: list[str] | None = None) -> int:
    """Rewrite the card's figures (or, with ``--check``, say which are stale)."""
    parser = argparse.ArgumentParser(prog="python -m bench.card", description=__doc__)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    parser.add_argument("--card", type=Path, default=CARD)
    args = parser.parse_args(argv)
    values = figures()
    text = args.card.read_text()
    new, changed, unknown = rewrite(text, values)
    missing = sorted(set(values) - cited_figures(text))
    if unknown or missing:
        print(
            f"card: unknown figures {unknown}, figures not in the card {missing}", file=sys.stderr
        )
        return 2
    if args.check:
        if changed:
            print(f"card: stale figures: {', '.join(changed)} (run make card)", file=sys.stderr)
            return 1
        return 0
    if new != text:
        tmp = args.card.with_suffix(".md.tmp")
        tmp.write_text(new)
        tmp.replace(args.card)
    print(f"card: {len(values)} figures, {len(changed)} rewritten: {', '.join(changed) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
