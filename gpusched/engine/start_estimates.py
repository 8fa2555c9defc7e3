"""Estimated starts of pending jobs (docs/SCHEDULING.md section 4, "Estimated start").

What the explanations tell a waiting job, never a decision: like Slurm's ``squeue --start``, an
estimate from the running jobs' estimated ends (``backfill.release_schedule``):

- held by GPUs (``capacity``, ``topology``): when enough GPUs of its flavor are free;
- held back by the reservation (``behind-reservation``): when enough are free once the reserved
  job has started at the reservation and run its estimated runtime;
- held by the cohort's pool (``cohort-pool``): when the cohort's jobs ending have given back
  enough of the pool, by the quota's own arithmetic (``Quota.add``), and the GPUs are free.

The reserved job's own estimate is the reservation's start (cycle.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusched.engine import explain
from gpusched.engine.backfill import (
    estimated_free_time,
    estimated_start_behind,
    release_schedule,
)
from gpusched.engine.model import PendingJob

if TYPE_CHECKING:
    from gpusched.engine.context import CycleContext

Events = list[tuple[float, int, int, str]]


def estimated_start(
    ctx: CycleContext,
    schedules: dict[str, Events],
    job: PendingJob,
    reason: str,
    flavor: str,
    reserved_end: float | None,
) -> float | None:
    """The estimated start of pending ``job``, blocked for ``reason`` in ``flavor``, or None
    when none can be told. ``schedules`` caches each flavor's release schedule for the cycle."""
    if reason not in (
        explain.CAPACITY, explain.TOPOLOGY, explain.BEHIND_RESERVATION, explain.COHORT_POOL
    ):  # fmt: skip
        return None
    if flavor not in schedules:
        schedules[flavor] = release_schedule(ctx, flavor)
    events = schedules[flavor]
    need = (job.min_workers or job.workers) * job.gpus_per_worker
    free = ctx.cap.free_total(flavor)
    if reason == explain.BEHIND_RESERVATION:
        reservation = ctx.reservation
        if reservation is None or reserved_end is None or reservation.flavor != flavor:
            return None
        return estimated_start_behind(events, free, need, reservation, reserved_end)
    if reason == explain.COHORT_POOL:
        return estimated_pool_time(ctx, events, job.queue, flavor, need, free)
    return estimated_free_time(events, free, need)


def estimated_pool_time(
    ctx: CycleContext, events: Events, queue: str, flavor: str, need: int, free_now: int
) -> float | None:
    """First time at which ``need`` more units of ``flavor`` fit ``queue``'s quota and cohort
    pool as the cohort's running jobs end, with the GPUs free then (ignores packing)."""
    quota = ctx.quota
    cohort = quota.cohort.get(queue)
    if cohort is None:
        return None
    limits = quota.limits(queue, flavor)
    pool_size, pool_used = quota.pool_numbers(queue, flavor)
    used = {queue: quota.used(queue, flavor)}
    free = free_now
    k = 0
    while k < len(events):
        t = events[k][0]
        while k < len(events) and events[k][0] == t:  # every release at one time together
            _, _, units, owner = events[k]
            k += 1
            free += units
            if quota.cohort.get(owner) != cohort:
                continue
            before = used.setdefault(owner, quota.used(owner, flavor))
            after = before - units
            reserved = quota.limits(owner, flavor).reserved
            pool_used += max(0, after - reserved) - max(0, before - reserved)
            used[owner] = after
        own = used[queue]
        if own + need > limits.limit or free < need:
            continue
        borrow = max(0, own + need - limits.reserved) - max(0, own - limits.reserved)
        if borrow <= pool_size - pool_used:
            return t
    return None
