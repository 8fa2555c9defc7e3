"""Take back a same-cycle admission instead of stopping a running job (docs/SCHEDULING.md
section 4, rule 8; issue 21).

A preemption plan may stop running jobs of another queue Q for a preemptor P, while the same
cycle has already admitted, without any preemption, a job X of Q in P's flavor: the cycle
would then swap a running job of Q for a new one of Q, and only lose work (BENCHMARKS.md,
"Swaps inside one cycle"). Before such a plan is committed, ``take_back`` looks at this
cycle's plain admissions of the victims' queues, newest first, and takes the first X back
(X never started, so nothing is lost) when:

- X's class is preemptible and Q stays at or above its nominal without X (X held borrowed
  quota: an admission within nominal is never taken back);
- P then fits its quota and, on the GPUs free now plus X's, a placement (a preemptor that
  would still run at reservations' starts only on what they leave spare).

P is then admitted on those GPUs and nothing is stopped. X goes back to pending; the cycle
tries it once more after the walk (``freed_at_once``), like the jobs passed before a
preemption that freed GPUs at once, so it starts elsewhere if it fits there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusched.engine import reaccount
from gpusched.engine.placement import Placement, place
from gpusched.engine.reservations import Reservation, spare_of

if TYPE_CHECKING:
    from gpusched.engine.cycle import _Cycle
    from gpusched.engine.model import PendingJob
    from gpusched.engine.preemption import PreemptionPlan
    from gpusched.engine.running import RunningJob


def take_back(cycle: _Cycle, job: PendingJob, flavor: str, plan: PreemptionPlan) -> bool:
    """Admit ``job`` by taking back one admission of a victim's queue made earlier in this
    cycle, instead of committing ``plan``; False (nothing changed) when none serves."""
    ctx = cycle.ctx
    queues = {v.job.queue for v in plan.victims if v.job.queue != job.queue}
    if not queues:
        return False
    now = ctx.now
    preemptors = {stop.by for stop in ctx.stops}
    preemptors.update(scale.by for scale in cycle.scales if scale.by is not None)
    mine = {r.name: r for r in ctx.running[ctx.base_running :]}  # admitted by this cycle
    quota = ctx.quota
    need = (job.min_workers or job.workers) * job.gpus_per_worker
    free = ctx.cap.free_total(flavor)
    for index in range(len(cycle.admits) - 1, -1, -1):
        admit = cycle.admits[index]
        if admit.flavor != flavor or admit.start_at > now or admit.job in preemptors:
            continue
        if job.clusters and admit.cluster not in job.clusters:
            continue
        taken = mine.get(admit.job)
        if taken is None or taken.queue not in queues or not taken.cls.preemptible:
            continue
        units = taken.units()
        total = sum(units.values())
        if free + total < need:
            continue  # not enough GPUs even with it
        if quota.used(taken.queue, flavor) - total < quota.nominal(taken.queue, flavor):
            continue  # it holds some of its queue's nominal quota
        reservations = ctx.reservations
        # it would have held these GPUs (and its queue's quota) at the starts of those it
        # outlives: what each reservation leaves once it is taken back
        given: dict[int, tuple[dict[int, int], int]] = {
            id(r): (
                {i: s + units.get(i, 0) for i, s in r.spare.items()},
                r.quota_room + (total if r.queue == taken.queue else 0),
            )
            for r in reservations.of_flavor(flavor)
            if taken.est_end > r.start
        }
        level = reservations.level(ctx.est_end_of(job)) if reservations else 0
        binding = reservations.binding(flavor, level) if level else []
        placement = _fits_without(cycle, job, flavor, taken, units, total, binding, given)
        if placement is None:
            continue
        for r in reservations.of_flavor(flavor):
            if id(r) in given:
                r.spare, r.quota_room = given[id(r)]
        del cycle.admits[index]
        ctx.running.remove(taken)
        ctx.taken_back.add(taken.name)
        ctx.cap.give(flavor, units)
        quota.add(taken.queue, flavor, -total)
        cycle.memo.capacity_freed(flavor)
        cycle.commit_admit(job, flavor, placement, now, level)
        cycle.freed_at_once = True  # the taken-back job (and any passed before) may fit elsewhere
        return True
    return False


def _fits_without(
    cycle: _Cycle,
    job: PendingJob,
    flavor: str,
    taken: RunningJob,
    units: dict[int, int],
    total: int,
    binding: list[Reservation],
    given: dict[int, tuple[dict[int, int], int]],
) -> Placement | None:
    """Where ``job`` would go, quota and placement, with ``taken``'s admission undone (and the
    ``binding`` reservations' spare and quota room as ``given`` would then make them); the
    cycle's state is as before on return."""
    ctx = cycle.ctx
    quota = ctx.quota
    cls = ctx.cls_of(job)
    g = job.gpus_per_worker
    least = job.min_workers or job.workers
    need = least * g
    views = [given.get(id(r), (r.spare, r.quota_room)) for r in binding]
    rooms = [room for r, (_, room) in zip(binding, views, strict=True) if r.queue == job.queue]
    if rooms and need > min(rooms):
        return None
    ctx.cap.give(flavor, units)
    quota.add(taken.queue, flavor, -total)
    try:
        if reaccount.quota_reason(ctx, job.queue, flavor, need, cls) is not None:
            return None
        left = quota.nominal(job.queue, flavor) - quota.used(job.queue, flavor)
        if job.queue in ctx.nominal_only and need > left:
            return None
        spare = spare_of([left for left, _ in views])
        only = job.clusters or None
        first_fit = ctx.policy.first_fit
        return place(ctx.cap, flavor, least, least, g, job.topology, None, first_fit, only, spare)
    finally:
        quota.add(taken.queue, flavor, total)
        ctx.cap.take(flavor, units)
