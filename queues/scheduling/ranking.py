"""Ranking the pending jobs (docs/SCHEDULING.md section 4): the order a cycle considers them in.

Within nominal first, then service-class priority (highest first), fair-share score (lowest
first), submission time, name.

A job that waits is ranked again every cycle, usually in almost the same order, so the ranker
keeps what does not change between cycles: each job's facts (its shapes and tie-breakers) and
the last order, which the next sort starts from (Python's sort is close to linear on a nearly
sorted list). Facts are kept by job object and keep their job alive, so an ``id`` is never
reused while its facts exist; a snapshot of fresh objects only costs building their facts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from queues.scheduling import fairshare
from queues.scheduling.model import PendingJob, Topology

if TYPE_CHECKING:
    from queues.scheduling.context import CycleContext

# (queue, class, flavors, gpus per worker, least workers, workers), topology, long job
WalkKey = tuple[tuple[str, str, tuple[str, ...], int, int, int], Topology | None, bool]


class JobFacts:
    """What the cycle needs of a pending job that stays the same while it waits."""

    __slots__ = ("job", "rank_shape", "stamp", "tail", "walk")

    def __init__(self, job: PendingJob, rank_shape: int) -> None:
        least = job.min_workers or job.workers
        shape = (job.queue, job.service_class, job.flavors, job.gpus_per_worker, least, job.workers)
        self.job = job
        self.rank_shape = rank_shape  # interned (queue, class, flavors, least units)
        self.tail = (job.submitted_at, job.name)
        # the admission memo's key: for a job that ends before the reservation starts, and not
        topology = job.topology
        self.walk: tuple[WalkKey, WalkKey] = ((shape, topology, False), (shape, topology, True))
        self.stamp = -1  # the last cycle that ranked it (the ranker counts from 1)


class Ranker:
    """Ranks a snapshot's pending jobs; kept from one cycle to the next (see the module doc)."""

    def __init__(self) -> None:
        self.facts: dict[int, JobFacts] = {}
        self.order: list[JobFacts] = []  # the last ranking
        self.stamp = 0
        self.shape_ids: dict[tuple[str, str, tuple[str, ...], int], int] = {}
        self.shapes: list[tuple[str, str, tuple[str, ...], int]] = []

    def _facts_of(self, pending: tuple[PendingJob, ...]) -> list[JobFacts]:
        """The last order with the jobs that left removed, then the jobs that came."""
        self.stamp += 1
        stamp = self.stamp
        facts = self.facts
        came: list[JobFacts] = []
        for job in pending:
            f = facts.get(id(job))
            if f is None:
                least_units = (job.min_workers or job.workers) * job.gpus_per_worker
                shape = (job.queue, job.service_class, job.flavors, least_units)
                sid = self.shape_ids.get(shape)
                if sid is None:
                    sid = self.shape_ids[shape] = len(self.shapes)
                    self.shapes.append(shape)
                f = facts[id(job)] = JobFacts(job, sid)
            if f.stamp != stamp - 1:
                came.append(f)
            f.stamp = stamp
        order = [f for f in self.order if f.stamp == stamp]
        order.extend(came)
        if len(facts) > 2 * len(order) + 256:  # forget jobs long gone
            self.facts = {id(f.job): f for f in order}
        return order

    def rank(self, ctx: CycleContext, pending: tuple[PendingJob, ...]) -> list[JobFacts]:
        order = self._facts_of(pending)
        if ctx.policy.fifo_order:
            tails = [f.tail for f in order]
            ranked = [order[i] for i in sorted(range(len(order)), key=tails.__getitem__)]
            self.order = ranked
            return ranked
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
        prio = {c.name: c.priority for c in snap.service_classes}
        used = quota.usage
        value: dict[int, tuple[int, int, float]] = {}
        for sid in {f.rank_shape for f in order}:
            queue, cls, flavors, units = self.shapes[sid]
            # a queue without cohort never borrows: its jobs only wait for its own nominal
            borrowing = 0
            if quota.cohort.get(queue) is not None:
                borrowing = 1
                for fl in flavors:
                    if used.get((queue, fl), 0) + units <= quota.limits(queue, fl).nominal:
                        borrowing = 0
                        break
            value[sid] = (borrowing, -prio.get(cls, 0), scores.get(queue, 0.0))
        dense = {v: i for i, v in enumerate(sorted(set(value.values())))}
        group = {sid: dense[v] for sid, v in value.items()}
        keys = [(group[f.rank_shape], f.tail) for f in order]
        ranked = [order[i] for i in sorted(range(len(order)), key=keys.__getitem__)]
        self.order = ranked
        return ranked
