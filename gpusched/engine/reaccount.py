"""Re-accounting instead of stopping (docs/SCHEDULING.md section 4, "Who borrows in a queue").

A queue's nominal quota is filled by its jobs in priority order: the part of its usage above
nominal is borrowed by its lowest-priority jobs. So a job of a class that may not borrow, whose
queue is over nominal only because lower-priority jobs of the queue run there, is admitted
without stopping them when they may go on running as borrowing: they are preemptible, their
class may borrow, and the queue's borrowing limit and its cohort pool hold the queue's whole
usage. Otherwise rule 4 stops them, as before (stopping is then the only way to make room).
"""

from __future__ import annotations

from gpusched.engine import explain
from gpusched.engine.context import CycleContext
from gpusched.engine.model import PendingJob, ServiceClass


class QuotaAsks:
    """The quota asks of jobs of one queue (``quota_reason``), as far as their answers go:
    with the quotas, ``stamp`` decides them all, so a caller may keep the answers from one
    cycle to the next while the stamp stays the same (``cycle._Cycle.blocks_all``)."""

    __slots__ = ("flavors", "queue", "summed")

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.flavors: list[str] = []  # every flavor asked about
        self.summed: list[tuple[str, int]] = []  # (flavor, priority) whose ``movable`` was read

    def add(self, ctx: CycleContext, job: PendingJob, cls: ServiceClass) -> None:
        """The asks of ``job`` (of this queue, of class ``cls``) in each of its flavors, on
        the cycle's state as it is."""
        self.flavors.extend(f for f in job.flavors if f not in self.flavors)
        if cls.can_borrow:
            return
        units = (job.min_workers or job.workers) * job.gpus_per_worker
        for flavor in job.flavors:
            asked = (flavor, cls.priority)
            if asked not in self.summed and _reads_movable(ctx, self.queue, flavor, units, cls):
                self.summed.append(asked)

    def stamp(self, ctx: CycleContext) -> list[int]:
        """The usage of the queue and its cohorts in the flavors asked, which decides every
        answer but where ``quota_reason`` reads ``movable`` (which that usage decides too),
        and those ``movable``."""
        stamp = ctx.quota.usage_stamp(self.queue, self.flavors)
        for flavor, priority in self.summed:
            stamp.append(movable(ctx, self.queue, flavor, priority))
        return stamp


def movable(ctx: CycleContext, queue: str, flavor: str, priority: int) -> int:
    """Units of ``flavor`` the queue's started jobs could go on using as borrowing for a job
    of ``priority``: preemptible, of a class that may borrow, strictly lower priority, not
    stopping and not waiting for victims."""
    jobs = ctx.victim_pools.get(flavor, {}).get(queue)
    if not jobs:
        return 0
    return sum(
        r.count * r.g
        for r in jobs.values()
        if r.preemptible_now and r.cls.can_borrow and r.cls.priority < priority
    )


def quota_reason(
    ctx: CycleContext, queue: str, flavor: str, units: int, cls: ServiceClass
) -> str | None:
    """Why the queue's quota cannot take ``units`` more of ``flavor`` for a job of ``cls``
    now (an explain reason code), or None when it can, re-accounting included."""
    reason = ctx.quota.blocked_reason(queue, flavor, units, cls.can_borrow)
    if not _needs_movable(ctx, queue, flavor, units, reason):
        return reason
    return None if room_above_nominal(ctx, queue, flavor, cls) >= units else reason


def _needs_movable(
    ctx: CycleContext, queue: str, flavor: str, units: int, reason: str | None
) -> bool:
    """Whether ``quota_reason``, its quota's reason found, sums the queue's running jobs
    (``movable``): only for a class that may not borrow, over nominal; and only while the
    headroom holds the units, as the room is at most the headroom then (mostly it does not)."""
    return reason == explain.CANNOT_BORROW and ctx.quota.headroom(queue, flavor) >= units


def _reads_movable(
    ctx: CycleContext, queue: str, flavor: str, units: int, cls: ServiceClass
) -> bool:
    """Whether ``quota_reason`` reads ``movable`` for this ask on the cycle's state."""
    reason = ctx.quota.blocked_reason(queue, flavor, units, cls.can_borrow)
    return _needs_movable(ctx, queue, flavor, units, reason)


def room_above_nominal(ctx: CycleContext, queue: str, flavor: str, cls: ServiceClass) -> int:
    """Most units a job of ``cls`` (a class that may not borrow) may add to its queue, with
    the queue's lower-priority borrowing jobs re-accounted: its nominal less what the queue's
    other jobs hold, and no more than the queue's borrowing room."""
    quota = ctx.quota
    used = quota.used(queue, flavor)
    own = quota.nominal(queue, flavor) - used
    if quota.cohort.get(queue) is None:
        return own  # without a cohort nothing borrows
    lower = movable(ctx, queue, flavor, cls.priority)
    if lower == 0:
        return own
    return min(own + lower, quota.headroom(queue, flavor))


def admitted_borrowing(ctx: CycleContext, job: PendingJob, flavor: str, units: int) -> bool:
    """Whether ``job``, admitted now with ``units`` of ``flavor``, borrows: its queue goes
    above nominal and its class may borrow (one that may not is within nominal, the queue's
    lower-priority jobs re-accounted as its borrowers)."""
    if not ctx.cls_of(job).can_borrow:
        return False
    return not ctx.quota.within_nominal(job.queue, flavor, units)
