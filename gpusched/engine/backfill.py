"""Backfill (docs/SCHEDULING.md section 4): reserve for the best-ranked blocked jobs.

A reservation is the earliest time at which the job could start as running jobs reach their
estimated ends, and the GPUs it would then use. A later job may take GPUs on the reserved nodes
only if it ends before the reservation starts, or if it leaves the reserved GPUs free then.
Each reservation is planned around those made before it (reservations.py): their GPUs and quota
count as taken from now until their jobs' estimated ends.
"""

from __future__ import annotations

import bisect

from gpusched.engine.context import CycleContext
from gpusched.engine.model import PendingJob
from gpusched.engine.placement import place
from gpusched.engine.reservations import Reservation

MAX_PLACEMENT_ATTEMPTS = 24  # bound on trial placements while looking for the start time


def release_events(ctx: CycleContext, flavor: str) -> list[tuple[float, int, int, str]]:
    """(time, node index, units, queue) at which GPUs of ``flavor`` are expected to come free.

    Sorted by time. Times are not clamped to now (a job past its estimate is expected to end
    any moment), and a change this cycle made to a running job comes as a negative event at the
    same time as its original one, so a reader must take every event up to a time together.
    """
    base = ctx.base_ends.get(flavor, [])
    extra = list(ctx.releases.get(flavor, ()))
    seen: set[int] = set()
    for r, before in ctx.mutated:  # the first entry of a job has its workers from the snapshot
        if r.flavor != flavor or id(r) in seen:
            continue
        seen.add(id(r))
        extra.extend((r.est_end, i, -w * r.g, r.queue) for i, w in before.items())
        extra.extend((r.est_end, i, w * r.g, r.queue) for i, w in r.workers.items())
    for r in ctx.running[ctx.base_running :]:  # admitted by this cycle
        if r.flavor == flavor:
            extra.extend((r.est_end, i, w * r.g, r.queue) for i, w in r.workers.items())
    if not extra:
        return base
    return sorted(base + extra)


def release_schedule(ctx: CycleContext, flavor: str) -> list[tuple[float, int, int, str]]:
    """``release_events`` clamped to now and netted: every event adds GPUs."""
    now = ctx.now
    net: dict[tuple[float, int, str], int] = {}
    for t, i, u, q in release_events(ctx, flavor):
        key = (max(now, t), i, q)
        net[key] = net.get(key, 0) + u
    return sorted((t, i, u, q) for (t, i, q), u in net.items() if u)


def find_reservation(ctx: CycleContext, job: PendingJob, flavors: list[str]) -> Reservation | None:
    """The earliest start for ``job`` over its acceptable flavors (given as quota permits)."""
    best: Reservation | None = None
    least = job.min_workers or job.workers
    g = job.gpus_per_worker
    need = least * g
    quota = ctx.quota
    can_borrow = ctx.cls_of(job).can_borrow
    # only its own queue and its cohort (the whole cohort tree) bear on the job's quota
    bearing = {job.queue, *quota.tree_members(job.queue)}
    attempts = MAX_PLACEMENT_ATTEMPTS
    runtime = ctx.runtime_of(job.estimated_runtime, ctx.cls_of(job))
    for flavor in flavors:
        if quota.never_fits(job.queue, flavor, need, can_borrow):
            continue  # its quota can never hold it here, however many jobs end
        free = dict(ctx.cap.free_of(flavor))
        events = release_events(ctx, flavor)
        # the reservations made before: taken from now until their jobs' estimated ends; what
        # a node does not have free yet it owes, and pays from what is released there first
        before = ctx.reservations.of_flavor(flavor)
        owed: dict[int, int] = {}
        for r in before:
            for i, u in r.units.items():
                if i in free:
                    owed[i] = owed.get(i, 0) + u
            quota.add(r.queue, flavor, sum(r.units.values()))
            events = events + [(r.end, i, u, r.queue) for i, u in r.units.items()]
        for i in list(owed):
            paid = min(free[i], owed[i])
            free[i] -= paid
            owed[i] -= paid
            if not owed[i]:
                del owed[i]
        if before:
            events.sort()
        total = sum(free.values())
        # quota given back on trial: applied (summed per queue) before each quota check, and
        # undone below; usage and pool accounting are additive, so the order does not matter
        releasing: dict[str, int] = {}
        released: dict[str, int] = {}
        pos = 0
        n_events = len(events)
        t = ctx.now
        quota_ok: bool | None = None  # the quota check, kept until quota is given back
        while True:
            if best is not None and t >= best.start:
                break
            while pos < n_events and events[pos][0] <= t:
                _, i, u, q = events[pos]
                if i in owed:
                    left = owed[i] - u
                    if left > 0:
                        owed[i] = left
                    else:
                        del owed[i]
                        free[i] -= left
                        total -= left
                elif i in free:
                    free[i] += u
                    total += u
                if q in bearing:
                    releasing[q] = releasing.get(q, 0) + u
                pos += 1
            if total >= need:
                if releasing:
                    for q, u in releasing.items():
                        quota.add(q, flavor, -u)
                        released[q] = released.get(q, 0) + u
                    releasing.clear()
                    quota_ok = None
                if quota_ok is None:
                    quota_ok = quota.blocked_reason(job.queue, flavor, need, can_borrow) is None
                if quota_ok:
                    attempts -= 1
                    if attempts < 0:
                        break  # too fragmented to find a start cheaply: none this cycle
                    p = place(
                        ctx.cap, flavor, least, least, g, job.topology, free,
                        clusters=job.clusters or None,
                    )  # fmt: skip
                    if p is not None:
                        units = {i: w * g for i, w in p.workers.items()}
                        spare = {i: free[i] - units[i] for i in units}
                        room = quota.headroom(job.queue, flavor) - need
                        best = Reservation(
                            job.name, t, p.cluster, flavor, units, spare, job.queue, room,
                            end=t + runtime,
                        )  # fmt: skip
                        break
            if pos >= n_events:
                break
            t = events[pos][0]
        for q, u in released.items():
            quota.add(q, flavor, u)
        for r in before:
            quota.add(r.queue, flavor, -sum(r.units.values()))
    return best


def estimated_start_behind(
    events: list[tuple[float, int, int, str]],
    free_now: int,
    need: int,
    reservations: list[Reservation],
) -> float | None:
    """First time, not before the first of ``reservations`` (of one flavor) starts, from which
    on ``need`` units of the flavor stay free once each reserved job holds its GPUs from its
    start to its estimated end (ignores packing, as ``estimated_free_time``): the estimated
    start of a job queued behind them, as Slurm's backfill plans the jobs after the first."""
    changes = [(t, u) for t, _i, u, _q in events]
    for r in reservations:
        held = sum(r.units.values())
        changes += [(r.start, -held), (max(r.end, r.start), held)]
    changes.sort()
    first = min(r.start for r in reservations)
    free = free_now
    steps: list[tuple[float, int]] = []  # (time, units free from then on until the next)
    k = 0
    while k < len(changes):
        t = changes[k][0]
        while k < len(changes) and changes[k][0] == t:  # every change at one time together
            free += changes[k][1]
            k += 1
        steps.append((t, free))
    found: float | None = None
    for t, free in reversed(steps):  # a later reservation's start may take them back
        if free < need:
            break
        if t >= first:
            found = t
    return found


def estimated_free_time(
    events: list[tuple[float, int, int, str]], free_now: int, need: int
) -> float | None:
    """First time the flavor's total free units reach ``need`` (ignores packing)."""
    if free_now >= need:
        return None
    cumulative = free_now
    times: list[float] = []
    totals: list[int] = []
    for t, _i, u, _q in events:
        cumulative += u
        times.append(t)
        totals.append(cumulative)
    k = bisect.bisect_left(totals, need)
    return times[k] if k < len(times) else None
