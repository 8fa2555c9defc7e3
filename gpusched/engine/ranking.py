"""Ranking the pending jobs (docs/SCHEDULING.md section 4): the order a cycle considers them in.

Jobs within their queue's nominal quota first: service-class priority (highest first), the
queue's fair-share score over time (lowest first), submission time, name. Then the borrowing
jobs: each queue's in priority and submission order, interleaved across queues by the share
fair-share preemption compares (fair_order.py), as the walk admits them.

A job that waits is ranked again every cycle, so the ranker keeps what does not change between
cycles: each job's facts (its shapes and tie-breakers) and, per rank shape (queue, class,
flavors, least units), its waiting jobs in submission order (the last tie-breakers). Each cycle
it only brings those lists up to date with the jobs that came and went, orders the shapes by
group (a queue and class's borrowing state, priority and fair-share score), and joins their
lists; shapes of one group are merged by submission order. Facts are kept by job object and keep
their job alive, so an ``id`` is never reused while its facts exist; a snapshot of fresh objects
only costs building their facts.
"""

from __future__ import annotations

from itertools import chain, compress
from operator import attrgetter
from typing import TYPE_CHECKING

from gpusched.engine import fairshare
from gpusched.engine.cohort_tree import CohortTree
from gpusched.engine.model import PendingJob, Snapshot, Topology

if TYPE_CHECKING:
    from gpusched.engine.context import CycleContext
    from gpusched.engine.reaccount import QuotaAsks

# a rank shape's queue, units, minus its class's priority, its (queue, flavors) id where the
# queue is in a cohort (None: it never borrows), whether its quota can never hold it
_ShapeStatics = tuple[str, int, int, int | None, bool]
# (queue, class, flavors, gpus per worker, least workers, workers), topology
WalkShape = tuple[tuple[str, str, tuple[str, ...], int, int, int], Topology | None]
# of a queue's rank shapes asked: the first (by index) its quota lets in, or None; the reasons
# to record, by index
QueueBlocks = tuple[int | None, list[tuple[int, tuple[str, str]]]]


class JobFacts:
    """What the cycle needs of a pending job that stays the same while it waits."""

    __slots__ = ("estimate", "job", "rank_shape", "tail", "walk_key")

    def __init__(self, job: PendingJob, rank_shape: int, walk_shape: int) -> None:
        self.job = job
        self.rank_shape = rank_shape  # interned (queue, class, flavors, least units)
        self.tail = (job.submitted_at, job.name)
        self.estimate = job.estimated_runtime
        # its interned WalkShape, shifted for the walk's admission memo (memo.WalkMemo), which
        # keys it by ``walk_key | level`` (level: how many reservations it outlives, at most
        # MAX_RESERVATIONS)
        self.walk_key = walk_shape << 3


_tail = attrgetter("tail")


class Ranker:
    """Ranks a snapshot's pending jobs; kept from one cycle to the next (see the module doc)."""

    def __init__(self) -> None:
        self.facts: dict[int, JobFacts] = {}  # by id of the job: pending and lately seen jobs
        self.present: dict[int, JobFacts] = {}  # the last snapshot's pending jobs, by id
        self.ids: set[int] = set()  # the same ids as a set, for C set differences
        self.by_shape: dict[int, list[JobFacts]] = {}  # rank shape -> present jobs in order
        self.shape_ids: dict[tuple[str, str, tuple[str, ...], int], int] = {}
        self.shapes: list[tuple[str, str, tuple[str, ...], int]] = []
        self.walk_ids: dict[WalkShape, int] = {}
        self.statics: dict[int, _ShapeStatics] = {}  # rank shape -> see _statics_of
        self.room_ids: dict[tuple[str, tuple[str, ...]], int] = {}  # (queue, flavors) -> id
        self.rooms: list[tuple[str, tuple[str, ...]]] = []
        self.statics_basis: tuple[object, ...] = ()
        # the quotas the facts were made under: they decide which jobs are held to nominal
        # (stop_bound.py), so new quotas make every job's facts anew
        self.facts_quotas: object = None
        # rank shape -> (its queue's usage, share after admitting): the fair order's, kept
        # while the quotas stay the same (fair_order.FairOrder)
        self.shares: dict[int, tuple[object, float | tuple[float, ...]]] = {}
        # queue -> (the rank shapes asked, their quota asks, the asks' stamp, the answer): the
        # cycle's ``blocks_all``, kept while the quotas stay the same (cycle._Cycle.blocks_all)
        self.queue_blocks: dict[str, tuple[list[int], QuotaAsks, list[int], QueueBlocks]] = {}
        # the rank shapes the last ``rank`` placed among the borrowing jobs (not within nominal)
        self.borrowing_shapes: set[int] = set()
        # rank shape -> count of ``_update`` calls when its list last changed; rank shapes ->
        # (those counts, their jobs merged): a merge is kept while its lists stay the same
        self.updates = 0
        self.changed_at: dict[int, int] = {}
        self.merged: dict[tuple[int, ...], tuple[tuple[int, ...], list[JobFacts]]] = {}

    def _new_facts(self, ctx: CycleContext, job: PendingJob) -> JobFacts:
        least = job.min_workers or job.workers
        cls_name = ctx.class_key_of(job)  # a job held to nominal is of its held class
        shape = (job.queue, cls_name, job.flavors, least * job.gpus_per_worker)
        sid = self.shape_ids.get(shape)
        if sid is None:
            sid = self.shape_ids[shape] = len(self.shapes)
            self.shapes.append(shape)
        walk: WalkShape = (
            (job.queue, cls_name, job.flavors, job.gpus_per_worker, least, job.workers),
            job.topology,
        )
        wid = self.walk_ids.setdefault(walk, len(self.walk_ids))
        return JobFacts(job, sid, wid)

    def _statics_of(self, ctx: CycleContext) -> dict[int, _ShapeStatics]:
        """Rank shape -> what ranking needs of it that depends only on the quotas and service
        classes, so it is kept while they stay the same."""
        basis = (ctx.quota.static, ctx.snapshot.service_classes)
        if basis != self.statics_basis:
            self.statics_basis = basis
            self.statics = {}
            self.shares = {}
            self.queue_blocks = {}
        return self.statics

    def _shape_statics(self, ctx: CycleContext, sid: int) -> _ShapeStatics:
        queue, cls_name, flavors, units = self.shapes[sid]
        quota = ctx.quota
        cls = ctx.cls(cls_name)
        # a job its quota can never hold in any of its flavors (QuotaState.never_fits)
        hopeless = all(quota.never_fits(queue, fl, units, cls.can_borrow) for fl in flavors)
        room_id = None
        if quota.cohort.get(queue) is not None:
            room_id = self.room_ids.get((queue, flavors))
            if room_id is None:
                room_id = self.room_ids[(queue, flavors)] = len(self.rooms)
                self.rooms.append((queue, flavors))
        return (queue, units, -cls.priority, room_id, hopeless)

    def _update(self, ctx: CycleContext, pending: tuple[PendingJob, ...]) -> None:
        """Bring the per-shape lists from the last snapshot's pending jobs to these."""
        ids = set(map(id, pending))
        gone = self.ids - ids
        if ctx.quota.static is not self.facts_quotas:  # whom the quotas hold to nominal
            self.facts_quotas = ctx.quota.static
            self.facts = {}
            gone = self.ids
        if len(gone) > len(self.ids) // 2:  # mostly fresh job objects (a live cycle): anew
            self.present, self.by_shape, self.ids = {}, {}, set()
            self.merged = {}
            gone = set()
        present = self.present
        by_shape = self.by_shape
        self.updates += 1
        changed_at = self.changed_at
        for key in gone:
            f = present.pop(key)
            jobs = by_shape[f.rank_shape]
            jobs.remove(f)
            changed_at[f.rank_shape] = self.updates
            if not jobs:
                del by_shape[f.rank_shape]
        came = ids - self.ids
        self.ids = ids
        if not came:
            return
        facts = self.facts
        unsorted: set[int] = set()  # shapes whose list needs sorting again
        for job in compress(pending, map(came.__contains__, map(id, pending))):
            known = facts.get(id(job))
            if known is None:
                known = facts[id(job)] = self._new_facts(ctx, job)
            present[id(job)] = known
            jobs = by_shape.setdefault(known.rank_shape, [])
            if jobs and known.tail < jobs[-1].tail:
                unsorted.add(known.rank_shape)
            jobs.append(known)  # mostly new submissions, which go last
            changed_at[known.rank_shape] = self.updates
        for sid in unsorted:
            by_shape[sid].sort(key=_tail)
        if len(facts) > 2 * len(present) + 256:  # forget jobs long gone
            self.facts = dict(present)
        if len(self.merged) > 2 * len(by_shape) + 256:  # forget merges of shapes long gone
            self.merged = {}

    def rank(
        self, ctx: CycleContext, pending: tuple[PendingJob, ...], drop_hopeless: bool = False
    ) -> Ranking:
        """The pending jobs' facts in rank order. ``drop_hopeless``: leave out the jobs whose
        quota can never hold them in any of their flavors (``QuotaState.never_fits``)."""
        self._update(ctx, pending)
        by_shape = self.by_shape
        if ctx.policy.fifo_order:
            return Ranking(sorted(chain.from_iterable(by_shape.values()), key=_tail), {}, {})
        snap = ctx.snapshot
        quota = ctx.quota
        geq = {f.name: f.gpu_equivalent for f in snap.flavors}
        usage: dict[str, float] = {}
        for (q, fl), units in quota.usage.items():
            usage[q] = usage.get(q, 0.0) + units * geq.get(fl, 1.0)
        scores: dict[str, float] | dict[str, tuple[float, ...]] = {
            q.name: fairshare.score(
                q.decayed_usage, usage.get(q.name, 0.0), q.weight, snap.half_life
            )
            for q in snap.queues
        }
        zero: float | tuple[float, ...] = 0.0
        if quota.tree.hierarchical:
            scores, zero = fair_tree(quota.tree, snap, scores, usage), (0.0,)  # type: ignore[arg-type]
        statics = self._statics_of(ctx)
        used = quota.usage
        # (queue, flavors) id -> most units a job may add and stay within nominal in one of them
        nominal_room: dict[int, int] = {}
        self.borrowing_shapes = borrowing_shapes = set()
        groups: dict[tuple[int, float | tuple[float, ...]], list[int]] = {}
        borrowers: dict[str, dict[int, list[int]]] = {}  # queue -> priority -> rank shapes
        hopeless: list[int] = []  # borrowing shapes whose quota can never hold them
        for sid in by_shape:
            known = statics.get(sid)
            if known is None:
                known = statics[sid] = self._shape_statics(ctx, sid)
            queue, units, neg_prio, room_id, never = known
            if never and drop_hopeless:
                continue
            # a queue without cohort never borrows: its jobs only wait for its own nominal
            borrowing = 0
            if room_id is not None:
                room = nominal_room.get(room_id)
                if room is None:
                    flavors = self.rooms[room_id][1]
                    room = nominal_room[room_id] = max(
                        quota.limits(queue, fl).nominal - used.get((queue, fl), 0) for fl in flavors
                    )
                if units > room:
                    borrowing = 1
                    borrowing_shapes.add(sid)
            if borrowing and never:  # explained only: it changes no decision, so last
                hopeless.append(sid)
            elif borrowing:
                own = borrowers.setdefault(queue, {})
                own.setdefault(neg_prio, []).append(sid)
                continue
            groups.setdefault((neg_prio, scores.get(queue, zero)), []).append(sid)
        ranked: list[JobFacts] = []
        for value in sorted(groups):
            ranked.extend(self._joined(groups[value]))
        queues = {
            queue: self._joined(next(iter(by_prio.values())))
            if len(by_prio) == 1
            else list(chain.from_iterable(self._joined(by_prio[prio]) for prio in sorted(by_prio)))
            for queue, by_prio in borrowers.items()
        }
        return Ranking(ranked, queues, scores, self._joined(hopeless) if hopeless else [])

    def _joined(self, sids: list[int]) -> list[JobFacts]:
        """The jobs of these rank shapes, in submission order (then name). The list is shared
        (the caller must not change it): a merge is kept from one cycle to the next while its
        shapes' lists stay the same, as a waiting backlog's mostly do."""
        by_shape = self.by_shape
        if len(sids) == 1:
            return by_shape[sids[0]]
        key = tuple(sids)
        stamps = tuple(map(self.changed_at.__getitem__, sids))
        known = self.merged.get(key)
        if known is not None and known[0] == stamps:
            return known[1]
        merged = sorted(chain.from_iterable(map(by_shape.__getitem__, sids)), key=_tail)
        self.merged[key] = (stamps, merged)
        return merged


class Ranking:
    """A cycle's order of the pending jobs: ``first``, the jobs within their queue's nominal
    quota in rank order; then the borrowing jobs, each queue's (``borrowing``) in priority and
    submission order, which the walk interleaves by fair share as it admits (fair_order.py)."""

    __slots__ = ("borrowing", "first", "last", "scores")

    def __init__(
        self,
        first: list[JobFacts],
        borrowing: dict[str, list[JobFacts]],
        scores: dict[str, float] | dict[str, tuple[float, ...]],
        last: list[JobFacts] | None = None,
    ) -> None:
        self.first = first
        self.borrowing = borrowing
        self.scores = scores  # queue -> fair-share score over time (a tie-breaker here)
        # borrowing jobs their quota can never hold (ranked only to be explained): walked last,
        # so that they hold no queue's place in the fair-share order
        self.last = last or []


def fair_tree(
    tree: CohortTree, snap: Snapshot, scores: dict[str, float], usage: dict[str, float]
) -> dict[str, tuple[float, ...]]:
    """Fair Tree (docs/SCHEDULING.md sections 4 and 5): a queue's score is compared top-down,
    first its ancestors' just below the root, down to its own. A cohort's score is its
    subtree's ``(H / tau + U)`` over its weight."""
    raw: dict[str, float] = {}  # cohort -> the subtree's H / tau + U
    for q in snap.queues:
        value = fairshare.score(q.decayed_usage, usage.get(q.name, 0.0), 1.0, snap.half_life)
        for cohort in tree.chain.get(q.name, ())[:-1]:
            raw[cohort] = raw.get(cohort, 0.0) + value
    out: dict[str, tuple[float, ...]] = {}
    for name, own in scores.items():
        below_root = tree.chain.get(name, ())[:-1]
        out[name] = (*(raw[c] / tree.weight.get(c, 1.0) for c in reversed(below_root)), own)
    return out
