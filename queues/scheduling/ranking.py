"""Ranking the pending jobs (docs/SCHEDULING.md section 4): the order a cycle considers them in.

Within nominal first, then service-class priority (highest first), fair-share score (lowest
first), submission time, name.

A job that waits is ranked again every cycle, so the ranker keeps what does not change between
cycles: each job's facts (its shapes and tie-breakers) and the waiting jobs in submission order
(the last tie-breakers). Each cycle then only orders the few rank groups (a queue and class's
borrowing state, priority and fair-share score) and sorts the jobs by group alone: the sort is
stable, so within a group they stay in submission order. Facts are kept by job object and keep
their job alive, so an ``id`` is never reused while its facts exist; a snapshot of fresh objects
only costs building their facts.
"""

from __future__ import annotations

import bisect
from operator import attrgetter
from typing import TYPE_CHECKING

from queues.scheduling import fairshare
from queues.scheduling.model import PendingJob, Topology

if TYPE_CHECKING:
    from queues.scheduling.context import CycleContext

# a rank shape's queue, flavors, units, minus its class's priority, whether its queue is in a
# cohort, whether its quota can never hold it
_ShapeStatics = tuple[str, tuple[str, ...], int, int, bool, bool]
# (queue, class, flavors, gpus per worker, least workers, workers), topology
WalkShape = tuple[tuple[str, str, tuple[str, ...], int, int, int], Topology | None]


class JobFacts:
    """What the cycle needs of a pending job that stays the same while it waits."""

    __slots__ = ("estimate", "job", "rank_shape", "stamp", "tail", "walk")

    def __init__(self, job: PendingJob, rank_shape: int, walk_shape: int) -> None:
        self.job = job
        self.rank_shape = rank_shape  # interned (queue, class, flavors, least units)
        self.tail = (job.submitted_at, job.name)
        self.estimate = job.estimated_runtime
        # the admission memo's key (an interned WalkShape): for a job that ends before the
        # reservation starts, and for one that does not
        self.walk = (2 * walk_shape, 2 * walk_shape + 1)
        self.stamp = -1  # the last cycle that ranked it (the ranker counts from 1)


_tail = attrgetter("tail")
_rank_shape = attrgetter("rank_shape")


class Ranker:
    """Ranks a snapshot's pending jobs; kept from one cycle to the next (see the module doc)."""

    def __init__(self) -> None:
        self.facts: dict[int, JobFacts] = {}
        self.by_tail: list[JobFacts] = []  # the last cycle's jobs in submission order
        self.stamp = 0
        self.shape_ids: dict[tuple[str, str, tuple[str, ...], int], int] = {}
        self.shapes: list[tuple[str, str, tuple[str, ...], int]] = []
        self.walk_ids: dict[WalkShape, int] = {}
        self.statics: dict[int, _ShapeStatics] = {}  # rank shape -> see _statics_of
        self.statics_basis: tuple[object, ...] = ()

    def _new_facts(self, job: PendingJob) -> JobFacts:
        least = job.min_workers or job.workers
        shape = (job.queue, job.service_class, job.flavors, least * job.gpus_per_worker)
        sid = self.shape_ids.get(shape)
        if sid is None:
            sid = self.shape_ids[shape] = len(self.shapes)
            self.shapes.append(shape)
        walk: WalkShape = (
            (job.queue, job.service_class, job.flavors, job.gpus_per_worker, least, job.workers),
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
        return self.statics

    def _shape_statics(self, ctx: CycleContext, sid: int) -> _ShapeStatics:
        queue, cls_name, flavors, units = self.shapes[sid]
        quota = ctx.quota
        cls = ctx.cls(cls_name)
        # a job its quota can never hold in any of its flavors (QuotaState.never_fits)
        hopeless = all(quota.never_fits(queue, fl, units, cls.can_borrow) for fl in flavors)
        in_cohort = quota.cohort.get(queue) is not None
        return (queue, flavors, units, -cls.priority, in_cohort, hopeless)

    def _facts_of(self, pending: tuple[PendingJob, ...]) -> list[JobFacts]:
        """The pending jobs' facts in submission order: the last cycle's without the jobs that
        left, with the jobs that came merged in."""
        self.stamp += 1
        stamp = self.stamp
        facts = self.facts
        came: list[JobFacts] = []
        for job in pending:
            f = facts.get(id(job))
            if f is None:
                f = facts[id(job)] = self._new_facts(job)
            if f.stamp != stamp - 1:
                came.append(f)
            f.stamp = stamp
        by_tail = [f for f in self.by_tail if f.stamp == stamp]
        came.sort(key=_tail)
        for f in came:  # mostly new submissions, which go last
            if by_tail and f.tail < by_tail[-1].tail:
                bisect.insort(by_tail, f, key=_tail)
            else:
                by_tail.append(f)
        self.by_tail = by_tail
        if len(facts) > 2 * len(by_tail) + 256:  # forget jobs long gone
            self.facts = {id(f.job): f for f in by_tail}
        return by_tail

    def rank(
        self, ctx: CycleContext, pending: tuple[PendingJob, ...], drop_hopeless: bool = False
    ) -> list[JobFacts]:
        """The pending jobs' facts in rank order. ``drop_hopeless``: leave out the jobs whose
        quota can never hold them in any of their flavors (``QuotaState.never_fits``)."""
        by_tail = self._facts_of(pending)
        if ctx.policy.fifo_order:
            return list(by_tail)
        snap = ctx.snapshot
        quota = ctx.quota
        geq = {f.name: f.gpu_equivalent for f in snap.flavors}
        usage: dict[str, float] = {}
        for (q, fl), units in quota.usage.items():
            usage[q] = usage.get(q, 0.0) + units * geq.get(fl, 1.0)
        scores = {
            q.name: fairshare.score(
                q.decayed_usage, usage.get(q.name, 0.0), q.weight, snap.half_life
            )
            for q in snap.queues
        }
        statics = self._statics_of(ctx)
        used = quota.usage
        # (queue, flavors) -> most units a job may add and stay within nominal in one of them
        nominal_room: dict[tuple[str, tuple[str, ...]], int] = {}
        value: dict[int, tuple[int, int, float]] = {}
        hopeless: list[int] = []
        for sid in set(map(_rank_shape, by_tail)):
            known = statics.get(sid)
            if known is None:
                known = statics[sid] = self._shape_statics(ctx, sid)
            queue, flavors, units, neg_prio, in_cohort, never = known
            if never and drop_hopeless:
                hopeless.append(sid)
                continue
            # a queue without cohort never borrows: its jobs only wait for its own nominal
            borrowing = 0
            if in_cohort:
                room = nominal_room.get((queue, flavors))
                if room is None:
                    room = max(
                        quota.limits(queue, fl).nominal - used.get((queue, fl), 0) for fl in flavors
                    )
                    nominal_room[(queue, flavors)] = room
                borrowing = 1 if units > room else 0
            value[sid] = (borrowing, neg_prio, scores.get(queue, 0.0))
        dense = {v: i for i, v in enumerate(sorted(set(value.values())))}
        group = [0] * len(self.shapes)
        for sid, v in value.items():
            group[sid] = dense[v]
        last = len(dense)  # after every group: the hopeless jobs, left out below
        for sid in hopeless:
            group[sid] = last
        keys = list(map(group.__getitem__, map(_rank_shape, by_tail)))
        # stable: within a group the jobs keep their submission order (then name)
        order = sorted(range(len(by_tail)), key=keys.__getitem__)
        if hopeless:
            del order[len(order) - keys.count(last) :]
        return list(map(by_tail.__getitem__, order))
