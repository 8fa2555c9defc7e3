"""The order of the borrowing jobs (docs/SCHEDULING.md section 4): one notion of fair share.

Borrowing jobs are walked queue against queue by the share rule 3 compares: the next job is
the head of the queue whose share *after admitting that job* is lowest (Kueue's dominant
resource share; in a cohort tree the shares at each level, from the root down), then priority,
the fair-share score over time, submission time and name. The walk re-reads a queue's share
as it admits, so a queue that was just given GPUs waits behind one that borrows less; and a
job admitted here could not then be stopped by a preemptor ranked after it under rule 3
(its share after admitting was no higher than the preemptor's), which removes the same-cycle
swap of BENCHMARKS.md.

Each queue's own jobs keep their order (priority, then submission).

Once only admissions are left in the cycle, a queue whose every remaining job its quota blocks
is dropped from the walk whole (``blocks_all``): its jobs would be walked one by one only to be
passed over. Leaving out a whole queue that changes nothing keeps every other queue's jobs in
the same order (the heap picks among the other queues' heads as before).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from gpusched.engine.model import PendingJob

if TYPE_CHECKING:
    from gpusched.engine.context import CycleContext
    from gpusched.engine.ranking import JobFacts, Ranking

ShareKey = float | tuple[float, ...]


def share_after(ctx: CycleContext, job: PendingJob) -> ShareKey:
    """The job's queue's share once the job is admitted, in its flavor that gives the lowest
    (rule 3's ``share``; in a tree the level shares from just below the root down)."""
    quota = ctx.quota
    queue = job.queue
    units = (job.min_workers or job.workers) * job.gpus_per_worker
    if not quota.tree.hierarchical:
        return min(quota.share(queue, f, units) for f in job.flavors)
    chain = quota.tree.chain.get(queue, ())
    nodes = [*reversed(chain[:-1]), queue]  # the queue's side at each level, top down
    parents = [*reversed(chain[1:]), chain[0]] if chain else [None]
    return min(
        tuple(
            quota.level_share(queue, node, at, f, units)
            for node, at in zip(nodes, parents, strict=True)
        )
        for f in job.flavors
    )


class FairOrder:
    """Iterates a ranking's borrowing jobs in fair-share order, re-reading the shares as the
    cycle changes them (call ``refresh`` after a preemption: victims' queues may have lowered)."""

    def __init__(
        self, ctx: CycleContext, ranking: Ranking, kept: dict[int, tuple[object, ShareKey]]
    ) -> None:
        """``kept``: rank shape -> (its queue's usage, share after admitting), which the caller
        keeps from one cycle to the next while the quotas stay the same (ranking.Ranker)."""
        self.ctx = ctx
        # rank shape -> (the quota's change count it was read at, share after admitting)
        self.shares: dict[int, tuple[int, ShareKey]] = {}
        # a queue's share reads its own usage; in a tree, its cohorts' too (any queue's)
        self.own_usage_only = not ctx.quota.tree.hierarchical
        self.kept = kept
        self.flavors = tuple(sorted(ctx.quota.flavors))
        self.usage_of: dict[str, tuple[int, object]] = {}  # queue -> (change count, its usage)
        self.priority: dict[int, int] = {}  # rank shape -> minus its class's priority
        self.queues = ranking.borrowing
        self.scores = ranking.scores
        self.next_of = dict.fromkeys(self.queues, 0)  # queue -> index of its head job
        self.generation = 0  # refreshes so far
        # set by the cycle once only admissions are left: given one job of each rank shape
        # still to come in a queue, the first whose shape its quota lets in, or None when the
        # quota blocks them all (then it has recorded what walking them would record)
        self.blocks_all: Callable[[list[JobFacts]], JobFacts | None] | None = None
        self.last_of: dict[str, dict[int, int]] = {}  # queue -> rank shape -> its last index
        # queue -> (the quota's change count, last index of a shape its quota let in then)
        self.alive: dict[str, tuple[int, int]] = {}
        self.heap: list[tuple[tuple[object, ...], str]] = []
        self.refresh()

    def _key(self, queue: str) -> tuple[object, ...]:
        facts = self.queues[queue][self.next_of[queue]]
        sid = facts.rank_shape  # the same queue, class, flavors and units: the same share
        quota = self.ctx.quota
        at = quota.changes_of.get(queue, 0) if self.own_usage_only else quota.changes
        known = self.shares.get(sid)
        if known is not None and known[0] == at:
            share = known[1]
        elif self.own_usage_only:  # a share depends on its queue's usage alone: kept
            usage = self._usage(queue, at)
            before = self.kept.get(sid)
            if before is not None and before[0] == usage:
                share = before[1]
            else:
                share = share_after(self.ctx, facts.job)
                self.kept[sid] = (usage, share)
            self.shares[sid] = (at, share)
        else:
            share = share_after(self.ctx, facts.job)
            self.shares[sid] = (at, share)
        prio = self.priority.get(sid)
        if prio is None:
            prio = self.priority[sid] = -self.ctx.cls_of(facts.job).priority
        return (share, prio, self.scores.get(queue, 0.0), facts.tail)

    def _usage(self, queue: str, at: int) -> object:
        """The queue's usage in every flavor (with the flavors), read once per change."""
        known = self.usage_of.get(queue)
        if known is not None and known[0] == at:
            return known[1]
        quota = self.ctx.quota
        if len(quota.flavors) != len(self.flavors):  # a first use of a flavor (they only grow)
            self.flavors = tuple(sorted(quota.flavors))
        used = quota.usage
        usage = (self.flavors, tuple([used.get((queue, f), 0) for f in self.flavors]))
        self.usage_of[queue] = (at, usage)
        return usage

    def refresh(self) -> None:
        """Every queue's head again at today's shares."""
        self.generation += 1
        self.heap = [
            (self._key(q), q) for q, jobs in self.queues.items() if self.next_of[q] < len(jobs)
        ]
        heapq.heapify(self.heap)

    def __iter__(self) -> Iterator[JobFacts]:
        quota = self.ctx.quota
        while self.heap:
            key, queue = heapq.heappop(self.heap)
            if self.blocks_all is not None and self._dropped(queue):
                continue
            now = self._key(queue)
            if now != key:  # its share moved since: back in line at today's
                heapq.heappush(self.heap, (now, queue))
                continue
            jobs = self.queues[queue]
            lead = self._clear_lead(now)
            while True:  # its next jobs while they stay first (no heap work per job)
                index = self.next_of[queue]
                self.next_of[queue] = index + 1
                generation, changes = self.generation, quota.changes
                facts = jobs[index]
                yield facts
                if generation != self.generation or index + 1 == len(jobs):
                    break  # refreshed: the queue is back in the heap already; or it is done
                if self.blocks_all is not None and self._dropped(queue):
                    break
                if (
                    lead
                    and quota.changes == changes
                    and jobs[index + 1].rank_shape == (facts.rank_shape)
                ):
                    continue  # nothing changed and the same shape: the same share, still first
                key = self._key(queue)
                if self.heap and self.heap[0][0] < key:
                    heapq.heappush(self.heap, (key, queue))
                    break
                lead = self._clear_lead(key)

    def _dropped(self, queue: str) -> bool:
        """Whether the quota blocks each of the queue's remaining jobs (``blocks_all``): then
        the queue is left out of the rest of this cycle's walk (moved to its end, which
        ``refresh`` keeps), as only admissions are left and they cannot unblock it. A queue
        found to have a shape its quota lets in is asked again once the quota changed or that
        shape's jobs are all walked."""
        blocks_all = self.blocks_all
        if blocks_all is None:
            return False
        index = self.next_of[queue]
        changes = self.ctx.quota.changes
        alive = self.alive.get(queue)
        if alive is not None and alive[0] == changes and index <= alive[1]:
            return False
        jobs = self.queues[queue]
        last = self.last_of.get(queue)
        if last is None:  # once per queue and cycle (a dict keeps a key's first place)
            last = self.last_of[queue] = {facts.rank_shape: i for i, facts in enumerate(jobs)}
        live = blocks_all([jobs[i] for i in last.values() if i >= index])
        if live is None:
            self.next_of[queue] = len(jobs)
            return True
        self.alive[queue] = (changes, last[live.rank_shape])
        return False

    def _clear_lead(self, key: tuple[object, ...]) -> bool:
        """Whether a job of this key goes before the heap's first whatever its submission."""
        return not self.heap or key[:3] < self.heap[0][0][:3]
