"""What ``srez eval`` does around its runs: ``--resume`` and ``--limit``, the inline loop, and
the report it ends with (runs, aggregates, leaderboard, then a short table of what it did).

``--resume`` skips each (agent, task, seed) that already has a complete run in the results folder
(:func:`~srez_client.results.finder.is_complete`: graded, not ended by a provider or harness
failure) on the same task set (its ``task_set_digest``: a run of another set, even of a task of
the same id, is left alone, run again and not reported; a run that recorded no set digest is
held to its provenance as before) and reports those runs with the new ones;
``--limit N`` then runs at most N of the rest.

The tasks come from a set (:mod:`srez_client.task_sets`): the packaged one, ``--tasks-dir DIR``
or ``--task-seed N``, on every backend; on ``inline`` a Python agent is refused on a set that is
not packaged (:func:`~srez_client.task_sets.check_isolated`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from srez_client.agent_command import absolute_replay
from srez_client.backends import run_inline
from srez_client.backends.registry import entry_for, names_where
from srez_client.cli.options import comma_list, environment_of, model_for, say
from srez_client.cli.tasks import task_ids
from srez_client.errors import UsageError
from srez_client.floors import FloorsAhead, missing_floors, played_pairs
from srez_client.provider_keys import check_provider_keys
from srez_client.results.provenance import Scored, check_mergeable, leaderboard_provenance
from srez_client.results.report import (
    agent_label,
    aggregate_table,
    build_report,
    difficulty_table,
    leaderboard_table,
    report_json,
    runs_table,
)
from srez_client.results.tally import run_row, tally_runs, tally_table
from srez_client.task_sets import TaskSet, check_isolated, load_task_set
from srez_daemon.protocol import Provenance, srez_version
from srez_env.agents import custom_agent_name, make_agent
from srez_env.agents.llm import LLM_SPECS
from srez_env.grade import GRADE_SCHEMA_VERSION
from srez_env.provenance import task_digest, task_set_kind
from srez_env.task import Task

if TYPE_CHECKING:  # the results finder is imported by --resume only
    from srez_client.inline_split import PlayOne
    from srez_client.layout import RunFolder
    from srez_client.results.finder import FoundRun, RunKey

Job = tuple[str, Task, int]
"""(agent spec, task, run seed)."""
Row = dict[str, object]


@dataclass(slots=True)
class EvalPlan:
    """The runs to make, and the complete ones ``--resume`` found."""

    todo: list[Job]
    resumed: list[FoundRun] = field(default_factory=list)
    left_out: int = 0
    """Runs ``--limit`` left for a later ``--resume``."""
    other_sets: int = 0
    """Jobs whose only complete run under ``--results`` is of another task set (run again)."""


def job_keys(spec: str, model: str, task: Task, seed: int) -> set[RunKey]:
    """The keys a complete run of this job may be filed under (a replay file as given, or made
    absolute as the daemon backends record it)."""
    run_model = model if spec in LLM_SPECS else "none"
    return {(s, run_model, task.id, seed) for s in (spec, absolute_replay(spec))}


def plan_eval(
    jobs: list[Job],
    results: Path,
    model: str,
    *,
    resume: bool,
    limit: int | None,
    set_digest: str | None = None,
) -> EvalPlan:
    """Drop the jobs already complete under ``results`` on the task set of ``set_digest``
    (``resume``), then keep ``limit``."""
    plan = EvalPlan(list(jobs))
    if resume:
        from srez_client.results.finder import complete_runs_by_set

        by_set = complete_runs_by_set(results)
        # a run that recorded no set digest predates them: it is held to the rules it was
        # written under (check_resume), never taken for a run of another set
        complete = {**by_set.get(None, {}), **by_set.get(set_digest, {})}
        elsewhere = {
            k for digest, runs in by_set.items() if digest not in (None, set_digest) for k in runs
        }
        plan.todo = []
        for spec, task, seed in jobs:
            keys = job_keys(spec, model, task, seed)
            found = [complete[k] for k in keys if k in complete]
            if found:
                plan.resumed.append(found[0])
            else:
                plan.todo.append((spec, task, seed))
                plan.other_sets += bool(keys & elsewhere)
    if limit is not None and len(plan.todo) > limit:
        plan.left_out = len(plan.todo) - limit
        plan.todo = plan.todo[:limit]
    return plan


def expected_provenance(task: Task, set_digest: str | None) -> Provenance:
    """The provenance a run of ``task`` (of the set ``set_digest``) made by this srez will have."""
    world = task.world
    return Provenance(
        task_set=task_set_kind(task),
        generator=world.generator if world else None,
        task_set_seed=world.set_seed if world else None,
        task_digest=task_digest(task),
        task_set_digest=set_digest,
        srez_version=srez_version(),
        grade_version=GRADE_SCHEMA_VERSION,
    )


def check_resume(
    plan: EvalPlan, jobs: list[Job], results: Path, set_digest: str | None = None
) -> None:
    """Refuse a ``--resume`` whose complete runs would not compare with the new ones.

    Raises:
        IncompatibleResults: naming a kept run and a job of this srez that disagree.
    """
    if not plan.resumed:
        return
    kept = [
        Scored(
            f"{item.summary.task_id} {item.summary.agent} under {item.path}",
            item.summary.task_id,
            item.summary.provenance,
        )
        for item in plan.resumed
    ]
    tasks = {task.id: task for _spec, task, _seed in jobs}
    new = [
        Scored(
            f"a new run of {t.id} by srez {srez_version()}",
            t.id,
            expected_provenance(t, set_digest),
        )
        for t in tasks.values()
    ]
    check_mergeable([*new, *kept])


def scored_rows(runs: list[Row]) -> list[Scored]:
    """The rows of ``srez eval`` as the provenance check reads them."""
    out = []
    for row in runs:
        recorded = row.get("provenance")
        provenance = Provenance.model_validate(recorded) if isinstance(recorded, dict) else None
        where = f"{row.get('task_id')} {row.get('agent')} seed {row.get('run_seed')} ({row.get('run_dir')})"
        out.append(Scored(where, str(row.get("task_id")), provenance))
    return out


def resumed_results(found: list[FoundRun]) -> tuple[list[Row], list[Row]]:
    """The grades and rows of the runs ``--resume`` kept (those whose ``result.json`` reads)."""
    from srez_client.transfer.fs import read_small_file

    grades: list[Row] = []
    rows: list[Row] = []
    for item in found:
        data = read_small_file(item.path, b"result.json", 64 << 20)
        try:
            grade = orjson.loads(data) if data is not None else None
        except orjson.JSONDecodeError:
            grade = None
        if not isinstance(grade, dict):
            continue
        grades.append(grade)
        rows.append({**summary_row(item), "resumed": True})
    return grades, rows


def summary_row(item: FoundRun) -> Row:
    """The report row of a finished run."""
    s = item.summary
    return run_row(s, task_id=s.task_id, agent=s.agent, seed=grade_seed(item), run_dir=item.path)


def grade_seed(item: FoundRun) -> int | None:
    """The run seed in ``run.json``, None if unreadable."""
    from srez_client.results.finder import run_key

    key = run_key(item)
    return None if key is None else key[3]


def eval_inline(
    jobs: list[Job],
    results: Path,
    grades: list[Row],
    runs: list[Row],
    set_digest: str | None = None,
) -> None:
    """Run ``jobs`` inline, appending to ``grades`` and ``runs`` in job order.

    With a second core, every other task is played in a forked process meanwhile
    (:mod:`srez_client.inline_split`); the report is the same. Each finished folder is completed
    by a :class:`~srez_client.commit_queue.CommitQueue` while the next run plays; every run that
    ended is final, and in ``runs``, when this returns or raises (Ctrl-C included).
    """
    from tqdm import tqdm  # imported once there are runs to show (about 30 ms)

    from srez_client import inline_split
    from srez_client.commit_queue import CommitQueue

    mine, theirs = list(range(len(jobs))), list[int]()
    if len(jobs) >= 4 and inline_split.can_fork():  # before any thread (tqdm's, the queue's)
        mine, theirs = inline_split.split_by_task(jobs)
    play = play_inline(results, set_digest)
    half = inline_split.ForkedHalf(jobs, theirs, play) if theirs else None
    done: dict[int, inline_split.Finished] = {}
    bar = tqdm(total=len(jobs), file=sys.stderr, disable=not sys.stderr.isatty(), unit="run")

    def record(index: int, got: inline_split.Played) -> None:
        finished((index, *got))

    def finished(run: inline_split.Finished) -> None:
        index, _grade, _row, error = done[run[0]] = run
        if error:
            _spec, task, seed = jobs[index]
            bar.write(f"srez: warning: {task.id} seed {seed}: {error}", file=sys.stderr)
        bar.update()

    try:
        with CommitQueue() as commits, inline_split.HeldInterrupts() as interrupts:
            for index in mine:
                spec, task, seed = jobs[index]
                bar.set_description(f"{spec} {task.id} seed {seed}", refresh=False)
                inline_split.play_recorded(
                    play, jobs[index], commits.submit, partial(record, index), interrupts
                )
                for run in half.ready() if half else ():
                    finished(run)
    except BaseException:
        if half is not None:
            half.interrupt()
        raise
    finally:
        for run in half.rest() if half else ():
            finished(run)
        bar.close()
        for index in sorted(done):
            _index, grade, row, _error = done[index]
            grades.append(grade)
            runs.append(row)
    if half is not None:
        inline_split.check(half)


def play_inline(results: Path, set_digest: str | None = None) -> PlayOne:
    """Plays one job inline under ``results`` (its task of the set ``set_digest``): its grade,
    report row and the agent's error."""

    def play(job: Job, commit: Callable[[RunFolder], None]) -> tuple[Row, Row, str | None]:
        spec, task, seed = job
        run = run_inline(task, spec, seed, results, commit=commit, task_set_digest=set_digest)
        row = run_row(run.summary, task_id=task.id, agent=spec, seed=seed, run_dir=run.run_dir)
        return run.grade.model_dump(mode="json", by_alias=True), row, run.error

    return play


def say_interrupted(done: int | None, total: int, results: Path) -> None:
    """The line an interrupted ``srez eval`` ends with: what finished and how to go on."""
    count = f" after {done} of {total} runs" if done is not None else ""
    sys.stderr.write(
        f"srez: interrupted{count}; the runs that ended are under {results}; the same command"
        " with --resume runs the rest\n"
    )
    sys.stderr.flush()


def print_eval(
    args: argparse.Namespace,
    grades: list[Row],
    runs: list[Row],
    *,
    failed: dict[str, int] | None = None,
    plan: EvalPlan | None = None,
    floors: list[Row] | None = None,
) -> int:
    """Print the report: JSON with ``--json``; else the leaderboard first, the provenance line,
    each agent's mean reward by difficulty and what was done, in a screenful; ``--detail`` then
    adds the runs table, each agent's aggregates by difficulty and by fault kind, and the count
    of runs per agent.

    ``floors``: grades of the trivial-agent floors played beside the runs (:mod:`srez_client.floors`),
    in the aggregates and the leaderboard, not among the runs."""
    floors = floors or []
    report = build_report([*grades, *floors])
    scored = scored_rows(runs)
    check_mergeable(scored)
    provenance = leaderboard_provenance(scored)
    if args.json:
        played = sorted({str(g["agent"]) for g in floors})
        block = {
            **report_json(report),
            "provenance": provenance.as_json(),
            "floors_played_here": played,
            "runs": runs,
        }
        print(json.dumps(block, indent=2))
        return 0
    ascii_marks = (sys.stdout.encoding or "").lower().replace("-", "") != "utf8"
    tally = tally_runs(runs, failed)
    if report.agents:
        print("leaderboard (95 % intervals; a floor is a trivial agent: scores below it are noise)")
        print(leaderboard_table(report, ascii_marks=ascii_marks))
    if runs:
        print(provenance.describe())
    if report.agents:
        print()
        print(difficulty_table(report))
    print()
    if floors:
        names = ", ".join(sorted({str(g["agent"]) for g in floors}))
        print(f"floors: {names} played here on the same tasks and seeds (not written; --no-floors)")
    print(_done_line(args, runs, plan))
    errors = [f"{row.label} {row.errors}" for row in tally if row.errors]
    if errors:
        print(f"runs ended in an error: {', '.join(errors)} (--detail: which)")
    if report.left_out:
        counts = ", ".join(f"{label} {n}" for label, n in report.left_out.items())
        print(
            f"left out of the aggregates, an infrastructure failure (provider, harness): {counts};"
            " --resume runs them again"
        )
    if not args.detail:
        return 0
    if grades:
        print()
        print(runs_table(grades, ascii_marks=ascii_marks))
    for agent in report.agents:
        print(f"\naggregates: {agent_label(agent.agent, agent.model)}")
        print(aggregate_table(agent))
    if runs or failed:
        print()
        print(tally_table(tally))
    return 0


def _done_line(args: argparse.Namespace, runs: list[Row], plan: EvalPlan | None) -> str:
    """What this evaluation did: the runs it wrote, kept and left."""
    resumed = sum(1 for r in runs if r.get("resumed"))
    line = f"{len(runs) - resumed} runs written under {args.results}"
    if resumed:
        line += f", {resumed} complete ones kept (--resume)"
    if plan is not None and plan.left_out:
        line += f"; {plan.left_out} left by --limit (--resume runs them)"
    if plan is not None and plan.other_sets:
        line += (
            f"; {plan.other_sets} complete only on another task set there (run again, not merged)"
        )
    if not args.detail:
        line += "; --detail: each run, and the breakdowns by fault kind"
    return line


def failed_by_label(failures: list[Job], model: str) -> dict[str, int]:
    """Runs that could not be run, counted by agent label."""
    out: dict[str, int] = {}
    for spec, _task, _seed in failures:
        label = agent_label(spec, model if spec in LLM_SPECS else "none")
        out[label] = out.get(label, 0) + 1
    return out


def cmd_eval(args: argparse.Namespace) -> int:
    """``srez eval``: every (agent, task, seed) on the chosen backend, then the report."""
    # a backend that writes its results runs the episodes in this process, so eval drives them
    # directly (with task files from anywhere); the others are driven through their daemons
    in_process = entry_for(args.backend).writes_results
    agents = list(dict.fromkeys(comma_list("--agent", args.agent)))
    if not agents:
        msg = "--agent needs at least one agent (scripted, heuristic, random, replay:FILE)"
        raise UsageError(msg)
    if in_process:
        check_isolated(
            agents,
            args.backend,
            tasks_dir=args.tasks_dir,
            task_seed=getattr(args, "task_seed", None),
        )
    task_set = task_set_of(args)
    tasks = task_set.select(task_ids(args.tasks))
    if not tasks:
        msg = f"--tasks {args.tasks!r} selects no task ('all' or a comma list of ids)"
        raise UsageError(msg)
    model = model_for(agents, args.model)
    for spec in agents:  # fail fast on an unknown agent or a malformed replay file
        # An LLM agent is built in its own process, with its model; a custom command (cmd:NAME)
        # is its own process on a daemon backend (the inline backend refuses it below).
        if spec in LLM_SPECS or (custom_agent_name(spec) and not in_process):
            continue
        make_agent(spec, tasks[0], 0)
    if model != "none" and in_process:
        hosts = " or ".join(names_where(lambda b: not b.writes_results))
        msg = f"the llm agents run on --backend {hosts} (their own process), not {args.backend}"
        raise UsageError(msg)
    if any(spec in LLM_SPECS for spec in agents):
        check_provider_keys([model], os.environ)
    jobs = [(spec, task, seed) for spec in agents for task in tasks for seed in range(args.seeds)]
    if args.resume and not in_process:
        adopt_earlier_runs(args)
    plan = plan_eval(
        jobs, args.results, model, resume=args.resume, limit=args.limit, set_digest=task_set.digest
    )
    check_resume(plan, jobs, args.results, task_set.digest)
    grades, runs = resumed_results(plan.resumed)
    if plan.resumed:
        say(f"{len(plan.resumed)} of {len(jobs)} runs already complete under {args.results}")
    if plan.other_sets:
        say(
            f"{plan.other_sets} runs complete under {args.results} only on another task set (not"
            f" {task_set.digest}): run again here, never merged with this set's"
        )
    ahead = floors_ahead(args, agents, tasks, runs, plan.todo)
    try:
        return run_and_report(args, plan, model, task_set, tasks, grades, runs, ahead)
    finally:
        ahead.close()


def adopt_earlier_runs(args: argparse.Namespace) -> None:
    """``--resume`` on a daemon backend: the runs an earlier, killed eval left unmirrored in
    ``--results`` are waited for and mirrored before the plan reads the folder
    (:func:`~srez_client.lifecycle.recovery.adopt_strays`)."""
    from srez_client.backends.registry import make_backend
    from srez_client.cli.options import config_of
    from srez_client.lifecycle.recovery import adopt_strays
    from srez_client.lifecycle.run import scratch_dir

    config = config_of(args)
    backend = make_backend(config)

    async def adopt() -> None:
        try:
            for outcome in await adopt_strays(
                backend, args.results, scratch_dir(config.state_dir), report=say
            ):
                if outcome.outcome != "mirrored":
                    say(f"{outcome.run_id}: {outcome.outcome} ({outcome.detail})")
        finally:
            backend.close()

    asyncio.run(adopt())


def task_set_of(args: argparse.Namespace) -> TaskSet:
    """The task set ``--tasks-dir`` or ``--task-seed`` names (else the packaged one); a set
    drawn from a seed is cached in the state folder (``$SREZ_STATE``)."""
    from srez_client.backends.config import BackendSettings

    seed = getattr(args, "task_seed", None)
    state = BackendSettings.from_env(environment_of(args, os.environ)).state_dir
    return load_task_set(args.tasks_dir, seed, state, progress=say)


def run_and_report(
    args: argparse.Namespace,
    plan: EvalPlan,
    model: str,
    task_set: TaskSet,
    tasks: list[Task],
    grades: list[Row],
    runs: list[Row],
    ahead: FloorsAhead,
) -> int:
    """Plays ``plan.todo`` (tasks of ``task_set``) on ``args.backend`` (after the resumed
    ``grades`` and ``runs``), then prints the report with the floors ``ahead`` plays; the exit
    status."""
    if not entry_for(args.backend).writes_results:
        from srez_client.evaluation import eval_on_backend

        try:
            done = eval_on_backend(
                args.backend,
                plan.todo,
                args.results,
                args.parallel,
                model,
                environ=environment_of(args, os.environ),
                task_set=task_set,
            )
        except KeyboardInterrupt:  # a second signal: the runs that ended are mirrored already
            say_interrupted(None, len(plan.todo), args.results)
            return 130
        if done.interrupted:
            say_interrupted(len(done.rows), len(plan.todo), args.results)
        failed = failed_by_label(done.failed, model)
        grades, runs = grades + done.grades, runs + done.rows
        floors = [] if done.interrupted else ahead.grades(played_pairs(tasks, runs))
        print_eval(args, grades, runs, failed=failed, plan=plan, floors=floors)
        return 130 if done.interrupted else 0
    first = len(runs)
    try:
        eval_inline(plan.todo, args.results, grades, runs, task_set.digest)
    except KeyboardInterrupt:  # the run in flight left nothing behind (run_inline removes it)
        say_interrupted(len(runs) - first, len(plan.todo), args.results)
        print_eval(args, grades, runs, plan=plan)
        return 130
    floors = ahead.grades(played_pairs(tasks, runs))
    return print_eval(args, grades, runs, plan=plan, floors=floors)


def floors_ahead(
    args: argparse.Namespace, agents: list[str], tasks: list[Task], runs: list[Row], todo: list[Job]
) -> FloorsAhead:
    """The floors ``--agent`` left out (none with ``--no-floors``), started on the (task, seed)
    pairs of the resumed ``runs`` and of ``todo``; they are reported on the pairs of the runs
    made and kept, so that ``--limit`` and ``--resume`` limit them as they limit the agents
    asked for."""
    floors = [] if args.no_floors else missing_floors(agents)
    planned = runs + [{"task_id": task.id, "run_seed": seed} for _spec, task, seed in todo]
    return FloorsAhead(floors, played_pairs(tasks, planned))
