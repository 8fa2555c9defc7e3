"""The explanation pass: a ``PendingInfo`` for every job a cycle leaves pending (explain.py).

It runs after the walk's decisions, on the cycle's final state, which it only reads. Most of
an explanation depends on the job's situation, not on the job: its rank shape (queue, class,
flavors, least units), the reason it waits, the flavor the reason is about and its topology.
In a deep backlog thousands of jobs share one situation (50,000 pending jobs had about 4,500),
so each situation's numbers and estimated start are computed once and shared by its jobs; only
the job's name, place in its queue, blocker and reservation are its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gpusched.engine import explain
from gpusched.engine.explain import PendingInfo
from gpusched.engine.start_estimates import StartEstimates

if TYPE_CHECKING:
    from gpusched.engine.context import CycleContext
    from gpusched.engine.memo import Blocked
    from gpusched.engine.ranking import JobFacts

# a situation's fields of PendingInfo from ``flavor`` to ``topology_level``, its ``can_borrow``
# its estimated start and whether that is overdue (the reserved job's own is the reservation's
# start; start_estimates.py)
_Fields = tuple[str, int, int, int, int | None, str | None, int, int, int, int, str, str]
_Situation = tuple[_Fields, bool, float | None, bool]


def explain_pending(
    ctx: CycleContext,
    ranked: list[JobFacts],
    pending: set[str],
    blocked_reason: Mapping[str, Blocked],
    head_blocker: str | None,
    borrowing_shapes: set[int] | None,
    delays: Mapping[str, str],
) -> dict[str, PendingInfo]:
    """Why each job of ``pending`` still waits, by name, in rank order. ``blocked_reason``: what
    the walk found for the jobs it tried; ``head_blocker``: the job a fifo line waits behind;
    ``borrowing_shapes``: the rank shapes ranked among the borrowing jobs (None: fifo);
    ``delays``: the reserved job each job held back by reservations would delay, as the walk
    found it."""
    infos: dict[str, PendingInfo] = {}
    reservations = ctx.reservations
    estimates = StartEstimates(ctx)
    preemption = ctx.policy.preemption
    position: dict[str, int] = {}
    situations: dict[tuple[object, ...], _Situation] = {}
    capacity = explain.CAPACITY
    if ctx.taken_back:  # admitted, then taken back for a preemptor (takeback.py): pending
        started = {r.name for r in ctx.running[ctx.base_running :]}
        pending = pending | (ctx.taken_back - started)
    for facts in ranked:
        job = facts.job
        name = job.name
        if name not in pending:
            continue
        queue = job.queue
        place_in_queue = position.get(queue, 0) + 1
        position[queue] = place_in_queue
        why = blocked_reason.get(name)
        if why is None:
            reason, flavor = capacity, job.flavors[0] if job.flavors else ""
            blocker = ""
            if head_blocker is not None and name != head_blocker:
                reason, blocker = explain.HEAD_OF_LINE, head_blocker
        else:
            reason, flavor = why
            blocker = ""
        key = (facts.rank_shape, reason, flavor, job.topology)
        known = situations.get(key)
        if known is None:
            known = situations[key] = _situation(ctx, facts, reason, flavor, estimates)
        fields, can_borrow, estimate, overdue = known
        own = reservations.of(name) if reservations else None
        reserved = own is not None
        if reason == explain.BEHIND_RESERVATION:  # it may hold a later reservation of its own
            blocker = delays.get(name, "")
            if blocker == name or reservations.of(blocker) is None:  # given up since
                ahead = [r.job for r in reservations.of_flavor(flavor) if r.job != name]
                blocker = ahead[0] if ahead else ""
        if own is not None:
            estimate, overdue = estimates.overdue_or(own.start, reason)
        infos[name] = PendingInfo(
            name,
            reason,
            queue,
            place_in_queue,
            None if borrowing_shapes is None else facts.rank_shape not in borrowing_shapes,
            *fields,
            blocker,
            estimate,
            reserved,
            preemption,
            can_borrow,
            overdue,
        )
    return infos


def _situation(
    ctx: CycleContext, facts: JobFacts, reason: str, flavor: str, estimates: StartEstimates
) -> _Situation:
    """What every job of ``facts``'s situation shares (see ``_Situation``)."""
    job = facts.job
    quota = ctx.quota
    queue = job.queue
    need = (job.min_workers or job.workers) * job.gpus_per_worker
    cls = ctx.cls_of(job)
    limits = quota.limits(queue, flavor)
    pool_size, pool_used = quota.pool_numbers(queue, flavor)
    free_total, largest = estimates.free_of(flavor)
    fields: _Fields = (
        flavor,
        need,
        quota.used(queue, flavor),
        limits.nominal,
        limits.limit if limits.limit < (1 << 59) else None,
        quota.cohort.get(queue),
        pool_size,
        pool_used,
        free_total,
        largest,
        cls.name,  # a job held to nominal: its held variant's (stop_bound.py)
        job.topology.level if job.topology else "",
    )
    return fields, cls.can_borrow, *estimates.told(queue, need, reason, flavor)
