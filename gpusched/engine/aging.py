"""Aging of borrowing jobs (docs/SCHEDULING.md section 4, Aging): a bound on how long a job that
can only borrow waits for its first start.

The walk reaches the borrowing jobs after every within-nominal job, and the backfill
reservations go to the first jobs it finds blocked, so a gang larger than its queue's nominal
quota rarely holds one, and when it does, the borrowing jobs walked before it (by fair share)
take its GPUs again in the next cycle. Once a borrowing job that never ran has waited
``AGE_BOUND`` seconds since its submission, one of the cycle's reservations goes to the
longest-waiting such job, made when the walk reaches the borrowing jobs (unless within-nominal
jobs took them all first), so that every borrowing job walked leaves it its GPUs, as the jobs
walked after a reserved job do. The aged job keeps its place in the walk and its preemption
rights; when the walk reaches it, it may take its reserved GPUs. Once it starts, its
reservation passes to the next such job (or, with none, to the next blocked job).

A job stopped and requeued does not age: its wait ended at its first start, and holding the
reservation at once it would take back, in each cycle, the GPUs a reclaim had just freed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from gpusched.engine.model import PendingJob
from gpusched.engine.ranking import JobFacts, Ranking

if TYPE_CHECKING:
    from gpusched.engine.cycle import _Cycle

AGE_BOUND = 6 * 3600.0  # seconds since submission after which a borrowing job ages

ADMITTED, PREEMPTED, BLOCKED = 1, 2, 0  # what ``AgedReservation.walk`` did


def oldest_aged(ranking: Ranking, now: float, skip: set[str]) -> PendingJob | None:
    """The borrowing job that has waited longest (earliest submission, then name), once past
    ``AGE_BOUND``, never stopped before and not in ``skip``; None when there is none. Jobs
    their quota can never hold (``ranking.last``) are left out: waiting never starts them."""
    limit = now - AGE_BOUND
    best: tuple[float, str] | None = None
    found: PendingJob | None = None
    for jobs in ranking.borrowing.values():
        for facts in jobs:
            tail = facts.tail
            if tail[0] > limit or (best is not None and tail >= best):
                continue
            if facts.job.stops or tail[1] in skip:
                continue
            best, found = tail, facts.job
    return found


class AgedReservation:
    """One cycle's aged reservation: which job holds it, and the walk's part in it."""

    __slots__ = ("cycle", "done", "job", "ranking")

    def __init__(self, cycle: _Cycle, ranking: Ranking) -> None:
        self.cycle = cycle
        self.ranking = ranking
        self.job: PendingJob | None = None  # the aged job holding the reservation
        self.done: set[str] = set()  # aged jobs started this cycle

    def reserve(self) -> None:
        """A reservation for the longest-waiting aged job, when there is one and one can be
        found (it counts among the cycle's reservations while it holds it)."""
        cycle = self.cycle
        self.job = None
        job = oldest_aged(self.ranking, cycle.ctx.now, self.done)
        if job is None:
            return
        cycle.reserve(job)
        if cycle.ctx.reservations.of(job.name) is not None:
            cycle.reserves_left -= 1
            self.job = job

    def gate(self) -> Iterator[JobFacts]:
        """Walked between the within-nominal jobs and the borrowing ones: unless the former
        took every reservation (or one blocks the line), the aged job takes one here."""
        cycle = self.cycle
        if cycle.reserves_left and cycle.head_blocker is None:
            self.reserve()
        yield from ()

    def walk(self, facts: JobFacts) -> int:
        """The walk reached the aged job: it may take its own reserved GPUs, or stop jobs as any
        job of its rank may (its reservation does not restrict that search; the others bind it
        as any job). Started, it hands its reservation on."""
        cycle = self.cycle
        ctx = cycle.ctx
        job = facts.job
        reservations = ctx.reservations
        own = reservations.remove(job.name)
        cycle.memo.reservations_changed()
        outcome = BLOCKED
        if cycle.try_admit(facts, reservations.level(ctx.est_end_of(job))):
            outcome = ADMITTED
        elif cycle.may_preempt() and cycle.try_preempt(job):
            outcome = PREEMPTED
        if outcome == BLOCKED:
            if own is not None:
                reservations.add(own)
            cycle.memo.reservations_changed()
        else:
            cycle.reserves_left += 1
            cycle.memo.state_changed()
            self.done.add(job.name)
            self.reserve()
        return outcome
