"""Task sets: the canonical 40 and fresh variants on demand (docs/environment.md §6.15).

Every task of a set fills a slot of the matrix: an easy or medium slot, or a control, with its own
row, a hard fault slot with an incident drawn from the space (§6.20); each is placed in a world
drawn from the set's seed, and a world in which the incident does not pass
:func:`srez_env.generator.verify.problems` is refused and the next one is drawn. A set is
reproducible from (:data:`GENERATOR`, seed): the canonical set is the one of
:data:`CANONICAL_SEED`, and a held-out set is any set generated from a seed that is not
disclosed.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Final

from srez_env.baselines.memorised import Snapshot
from srez_env.baselines.ranges import Ranges, summarise
from srez_env.generator import footprints, matrix, space
from srez_env.generator.expand import build
from srez_env.generator.place import place
from srez_env.generator.unusual import DECOYS
from srez_env.generator.verify import RANGE_PROBLEM, SLO_PROBLEM, fault_spares_slo, problems
from srez_env.generator.worlds import GENERATOR, draw_world
from srez_env.task import DecoyLog, Task, derive_seed

CANONICAL_SEED: Final = 20250314
"""The seed of the public set (the 40 task files shipped in ``srez_env/tasks``)."""
MAX_SEED: Final = 2**53 - 1
"""The largest set seed: run.json records it, and a browser reads JSON numbers as doubles, exact
up to here."""
MAX_ATTEMPTS: Final = 40
"""Worlds drawn for one task before the generator gives up on it."""
RANGE_ATTEMPTS: Final = 10
"""Valid worlds refused only because range calibrators pass them, before the generator keeps
the one the fewest of them pass. Some faults cannot hide among healthy values (a retention that fills
the disk, a timeout far below any dependency's latency): their hard tasks stay exposed, and the
card reports the calibrator's share of the hard tier."""


OFF_AIM: Final = "the incident shows another footprint than the slot aims for"


class GenerationError(ValueError):
    """No world in :data:`MAX_ATTEMPTS` draws (in either pass of :func:`realise`) gave a valid
    task."""


def _world_seed(set_seed: int, task_id: str, attempt: int) -> int:
    digest = hashlib.sha256(f"{GENERATOR}:{set_seed}:{task_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


@functools.cache
def _typical_of(row_id: str) -> Task:
    # The `why` overrides quote the typical world's numbers, so placed tasks use the playbook's.
    # Cached: a generated set places the same row in many worlds.
    row = next(r for r in matrix.load().rows if r.id == row_id)
    return build(replace(row, why={}))


def _typical(row: matrix.Row) -> Task:
    if row in matrix.load().rows:
        return _typical_of(row.id)
    # a row the incident space made (§6.20) has no design table: it records what it gives;
    # cached, since every set tries the same (donor, slot) pairs in worlds of its own
    key = repr(row)
    if key not in _VARIANTS:
        _VARIANTS[key] = build(replace(row, why={}), table=False)
    return _VARIANTS[key]


_VARIANTS: dict[str, Task] = {}


def realise(
    row: matrix.Row,
    set_seed: int,
    task_id: str | None = None,
    attempts: int = MAX_ATTEMPTS,
    *,
    exposed_ok: bool = True,
    worlds: str | None = None,
    accept: Callable[[Task], bool] | None = None,
) -> Task:
    """The row placed in the first of ``attempts`` worlds of ``set_seed`` in which it verifies.
    A world only range calibrators pass is kept, the least exposed of them, when no world is
    clean and ``exposed_ok``; otherwise it counts as failing. The worlds are drawn for the
    task's id, or for ``worlds`` when given (a donor of the incident space draws worlds of its
    own, :func:`_drawn`). With ``accept``, a world whose task it refuses is passed over before
    the dear checks (a donor aimed at a footprint, :func:`_drawn`).

    The worlds are tried twice. First with every injected limit at its drawn share: a world in
    which the fault leaves the gateway SLO holding is refused by that check alone, before the
    dearer ones. If none verifies, the same worlds again with the limits placed deeper where the
    world's headroom absorbs the drawn share (:func:`place` with ``deepen``). Deepening only in
    the second pass keeps every task a row's first pass yields the same as before it existed, so
    sets generated earlier (the canonical one among them) are reproduced byte for byte.

    Raises:
        GenerationError: when no world verified in either pass.
    """
    typical = _typical(row)
    variant = row not in matrix.load().rows
    if task_id is not None and task_id != typical.id:
        typical = _renamed(typical, task_id)
    extra: dict[str, set[str]] = defaultdict(set)
    for spec in typical.injection.versions:
        extra[spec.service].add(spec.version)
    last: list[str] = []
    exposed: list[tuple[int, int, Task]] = []  # valid, but passed by range calibrators
    spared: set[int] = set()  # the worlds whose fault left the SLO holding at its drawn share
    for deepen in (False, True):
        for attempt in range(attempts):
            if deepen and attempt not in spared:
                continue  # refused for something a deeper limit does not change
            # keyed by the task's id: a row the set takes twice is placed in other worlds
            seed = _world_seed(set_seed, worlds or typical.id, attempt)
            draw = draw_world(seed, typical.incident.start, extra, DECOYS[typical.difficulty])
            world = draw.spec.model_copy(update={"set_seed": set_seed})
            placed = place(typical, replace(draw, spec=world), deepen)
            if variant:  # a drawn incident's backfill takes the share of this world's cache
                placed = space.fit_backfill(placed)
            if fault_spares_slo(placed):  # what problems() refuses first, at a fraction of its cost
                spared.add(attempt)
                last = [SLO_PROBLEM]
                continue
            noisy = _with_drawn_noise(placed, seed)
            if accept is not None and not accept(noisy):
                last = [OFF_AIM]
                continue
            task = _recalibrated(noisy, drawn=variant)
            ranges = reference_ranges() if len(exposed) < RANGE_ATTEMPTS else ()
            last = problems(task, ranges=ranges)
            if not last:
                return _least_exposed(exposed) if exposed and exposed_ok else task
            if all(RANGE_PROBLEM in p for p in last):
                exposed.append((len(last), attempt, task))
        if exposed and exposed_ok:
            return _least_exposed(exposed)
    msg = (
        f"{typical.id} (row {row.id}, {typical.fault_kind}): no world of seed {set_seed} in "
        f"{attempts} draws gave a valid task (last problem: {last[0]})"
    )
    raise GenerationError(msg)


REFERENCE_SEEDS: Final = tuple(range(101, 111))
"""The sets whose healthy worlds the generator's range calibrators learn from (public seeds)."""
SINGLE_SET_LEARNERS: Final = 4
"""How many of the reference sets also get a learner of their own."""


@functools.cache
def reference_ranges() -> tuple[Ranges, ...]:
    """What range calibrators learn from the healthy worlds of the :data:`REFERENCE_SEEDS` sets:
    each row's first world, observed at T0 before its incident (what a published set's
    configurations show, with the injected keys left out). The generator refuses a hard task any
    of them passes, so no hard task is solved by putting unusual values back in range. Several
    learners, because each learns other extremes: one over all ten sets (400 worlds: a learner
    that grows with its data is the strong one) and one for each of the first four; learning from
    worlds rather than from verified tasks keeps the references free of the check they feed.

    Every set meets the same learners. Not the shipped canonical set's as well: its hard tier is
    drawn by this very gate, so a learner of its files is one more learner of one set, and
    gating on it made the canonical files an input of the footprint table they are drawn by."""
    per_set = [_observed_worlds(seed) for seed in REFERENCE_SEEDS]
    union = [pair for pairs in per_set for pair in pairs]
    return tuple(summarise(pairs) for pairs in (*per_set[:SINGLE_SET_LEARNERS], union))


def _observed_worlds(set_seed: int) -> list[tuple[Snapshot, Task]]:
    pairs = []
    for row in matrix.load().rows:
        typical = _typical(row)
        seed = _world_seed(set_seed, typical.id, 0)
        draw = draw_world(seed, typical.incident.start, {}, DECOYS[typical.difficulty])
        files = draw.spec.base_world(typical.incident.start).files
        snapshot = Snapshot(configs={s: dict(f.values) for s, f in files.items()}, versions={})
        pairs.append((snapshot, typical))
    return pairs


@functools.cache
def decoy_log_pool() -> tuple[DecoyLog, ...]:
    """Every benign log stream a row of the matrix names: the harmless warnings a hard task's
    logs draw theirs from."""
    seen: dict[str, DecoyLog] = {}
    for row in matrix.load().rows:
        for spec in row.decoy_logs:
            stream = DecoyLog.model_validate(spec)
            seen.setdefault(stream.model_dump_json(), stream)
    return tuple(seen[key] for key in sorted(seen))


def _with_drawn_noise(task: Task, world_seed: int) -> Task:
    """On the hard tier, the harmless warnings are drawn from the pool for each world, as many
    as the row names (at least two): a row's own warnings would be a fingerprint that names its
    incident in every set."""
    if task.difficulty != "hard":
        return task
    pool = list(decoy_log_pool())
    count = max(2, len(task.noise.decoy_logs))
    random.Random(world_seed).shuffle(pool)
    noise = task.noise.model_copy(update={"decoy_logs": pool[:count]})
    return task.model_copy(update={"noise": noise})


def _least_exposed(exposed: list[tuple[int, int, Task]]) -> Task:
    """The valid task the fewest range calibrators pass (the earliest on a tie)."""
    return min(exposed, key=lambda item: item[:2])[2]


def _recalibrated(task: Task, *, drawn: bool = False) -> Task:
    """Below the hard tier, the loudest anomaly is a description, not a requirement: its blame
    moves with the render noise (seeded by the task id), so the block records what it is. On the
    hard tier the declared victim stays a requirement (:func:`problems` checks it), except for an
    incident ``drawn`` from the space, which has no design table and whose backfill is sized to
    its world: it records the blame too, and :func:`problems` still refuses it unless the blame
    is robustly a victim's."""
    if task.difficulty == "hard" and not drawn:
        return task
    from srez_env.baselines.loudest import loudest

    blame = loudest(task).blame
    calibration = task.calibration.model_copy(update={"loudest_expected": blame})
    return task.model_copy(update={"calibration": calibration})


def _renamed(task: Task, task_id: str) -> Task:
    return task.model_copy(update={"id": task_id, "seed": derive_seed(task_id)})


def canonical(rows: Sequence[matrix.Row] | None = None, seed: int = CANONICAL_SEED) -> list[Task]:
    """The public set: every slot of the matrix (or ``rows``) in the matrix's order, each task
    named by its slot (``sre-NNN``). Like any set's, its hard fault tasks are drawn from the
    space (:func:`realise_slot`), so a hard task's id, title and position name no answer; the
    other slots hold their own row."""
    chosen = matrix.load().rows if rows is None else rows
    return [realise_slot(row, chosen, seed, row.id) for row in chosen]


def set_tag(seed: int) -> str:
    """Six hex digits naming a generated set in its task ids (``sre-<tag>-NNN``)."""
    return hashlib.sha256(f"{GENERATOR}:set:{seed}".encode()).hexdigest()[:6]


def select_rows(
    kinds: Iterable[str] | None = None, difficulties: Iterable[str] | None = None
) -> list[matrix.Row]:
    """Rows of the matrix whose fault kind and tier are among those given (all when None).

    Raises:
        ValueError: an unknown kind or difficulty, or a filter no row matches.
    """
    tiers = {"easy": "E", "medium": "M", "hard": "H"}
    wanted_kinds = None if kinds is None else set(kinds)
    wanted_tiers = None if difficulties is None else set(difficulties)
    kind_names = matrix.load().kind_name
    if wanted_kinds is not None:
        allowed = list(kind_names.values())
        unknown = sorted(wanted_kinds - set(allowed))
        if unknown:
            msg = f"unknown fault kind {unknown[0]!r} (allowed: {', '.join(allowed)})"
            raise ValueError(msg)
    if wanted_tiers is not None:
        unknown = sorted(wanted_tiers - set(tiers))
        if unknown:
            msg = f"unknown difficulty {unknown[0]!r} (allowed: easy, medium, hard)"
            raise ValueError(msg)
    rows = [
        row
        for row in matrix.load().rows
        if (wanted_kinds is None or kind_names[row.kind] in wanted_kinds)
        and (wanted_tiers is None or row.tier in {tiers[t] for t in wanted_tiers})
    ]
    if not rows:
        msg = "no task of the matrix has that fault kind and difficulty"
        raise ValueError(msg)
    return rows


def generate(
    seed: int,
    count: int,
    kinds: Iterable[str] | None = None,
    difficulties: Iterable[str] | None = None,
) -> list[Task]:
    """``count`` fresh tasks: the selected rows in a shuffled order, each in its own world of
    ``seed``.

    Raises:
        ValueError: a bad seed, count or filter.
        GenerationError: a row with no valid world.
    """
    if not 0 <= seed <= MAX_SEED:
        msg = f"seed must be from 0 to {MAX_SEED}, got {seed}"
        raise ValueError(msg)
    if not 1 <= count <= 999:
        msg = f"count must be from 1 to 999, got {count}"
        raise ValueError(msg)
    rows = select_rows(kinds, difficulties)
    return [member(rows, seed, n) for n in range(count)]


def member_id(seed: int, n: int) -> str:
    """The id of the ``n``-th task (from 0) of the set of ``seed``: ``sre-<tag>-NNN``."""
    return f"sre-{set_tag(seed)}-{n + 1:03d}"


def member(rows: Sequence[matrix.Row], seed: int, n: int) -> Task:
    """The ``n``-th task (from 0) of the set of ``seed`` over ``rows``, realised alone: the same
    task :func:`generate` makes at that position, without realising the others.

    The rows are taken in an order shuffled by the set's seed (each pass over them in an order
    of its own), so a task's position, and with it its id, says nothing of which incident it is.

    Raises:
        GenerationError: the row has no valid world.
    """
    order = shuffled_order(seed, n // len(rows), len(rows))
    return realise_slot(rows[order[n % len(rows)]], rows, seed, member_id(seed, n), n // len(rows))


def realise_slot(
    slot: matrix.Row, rows: Sequence[matrix.Row], seed: int, task_id: str, turn: int = 0
) -> Task:
    """The task in ``slot`` of the set of ``seed``, on the ``turn``-th pass over ``rows``: on
    the hard tier of a generated set, an incident drawn from the space of ``rows``' faults
    (§6.20); elsewhere the slot's own row.

    Raises:
        GenerationError: the slot's own row has no valid world either.
    """
    if slot.tier == "H" and slot.kind != "K00":
        drawn = _drawn(slot, rows, seed, task_id, turn)
        if drawn is not None:
            return drawn
    return realise(slot, seed, task_id)


def _drawn(
    slot: matrix.Row, rows: Sequence[matrix.Row], seed: int, task_id: str, turn: int
) -> Task | None:
    """A hard task for ``slot`` that shows the shared footprint the set's plan aims it at
    (:meth:`srez_env.generator.footprints.Table.plan`): the aimed answer tried in worlds of its
    own until one shows it, then the footprint's other answers in the slot's order. None when
    the set's kinds share no footprint, or after :data:`space.DONORS_TRIED` tries."""
    hard = [r for r in rows if r.tier == "H" and r.kind != "K00"]
    aims = footprints.table().plan(seed, len(hard) * (turn + 1), {r.kind for r in rows})
    if not aims:
        return None
    aim, target = aims[turn * len(hard) + hard.index(slot)]
    donors = {
        footprints.answer_key(*answer): mine
        for answer, mine in space.answers(slot, _fault_rows(rows), seed).items()
    }
    others = [a for a in footprints.table().answers[aim] if a != target and a in donors]
    space.draws(seed, slot.id).shuffle(others)
    tried = 0
    for answer in (target, *others):
        if answer not in donors:
            continue  # the slot's own row is the answer's only row: the fallback has it
        for lap in range(space.LAPS):
            if tried == space.DONORS_TRIED:
                return None
            tried += 1
            mine = donors[answer]  # the tries go round the answer's rows
            try:
                return donor_task(mine[lap % len(mine)], slot, seed, task_id, lap, aim)
            except (GenerationError, ValueError):  # not in its worlds, or no hard task at all
                continue
    return None


def donor_task(
    donor: matrix.Row,
    slot: matrix.Row,
    seed: int,
    task_id: str,
    lap: int,
    aim: footprints.Footprint | None = None,
) -> Task:
    """``donor``'s incident in hard ``slot`` of the set of ``seed``, in the worlds of its
    ``lap``-th try there (worlds of its own, so that donors tried on one slot are independent
    samples): the first valid one, or with ``aim`` the first valid one that shows that
    footprint (a world that shows another is passed over before it is verified, which is most
    of a try's cost). A donor only range calibrators pass is refused: another answer will hide.

    Raises:
        GenerationError: no valid hard task in :data:`space.DONOR_WORLDS` worlds.
        ValueError: the incident has no task at all on the hard tier.
    """
    made = space.variant(donor, slot)
    worlds = f"{task_id}>{donor.id}>{lap}"
    accept = None if aim is None else (lambda task: footprints.footprint(task) == aim)
    return realise(
        made, seed, task_id, space.DONOR_WORLDS, exposed_ok=False, worlds=worlds, accept=accept
    )


def _fault_rows(rows: Sequence[matrix.Row]) -> list[matrix.Row]:
    """Every row of the matrix whose fault kind is among ``rows``' kinds."""
    kinds = {row.kind for row in rows}
    return [row for row in matrix.load().rows if row.kind in kinds]


@functools.lru_cache(maxsize=64)
def shuffled_order(seed: int, lap: int, size: int) -> tuple[int, ...]:
    """The row order of pass ``lap`` over ``size`` rows in the set of ``seed``."""
    digest = hashlib.sha256(f"{GENERATOR}:order:{seed}:{lap}".encode()).digest()
    order = list(range(size))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return tuple(order)
