"""Elastic growth (docs/SCHEDULING.md section 4): after admission, elastic jobs below their
``workers`` grow into capacity that no pending job can use and no reservation holds.

Quota counts as well as GPUs: while a job of the cohort waits for the cohort pool's quota in a
flavor, an elastic job grows there only within the part of its queue's nominal quota that is
never lent.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from gpusched.engine.context import CycleContext
from gpusched.engine.model import Scale
from gpusched.engine.placement import Workers, capped, place_in_cluster
from gpusched.engine.reservations import quota_room_of, spare_of, take
from gpusched.engine.running import RunningJob


def grow(
    ctx: CycleContext, wanted_flavors: Set[str], wanted_pools: Set[tuple[str, str]]
) -> list[Scale]:
    """Grow the elastic jobs, best class first, then the longest running. ``wanted_flavors``:
    flavors some pending job waits for GPUs of (no growth there); ``wanted_pools``: (cohort,
    flavor) pools some pending job waits for quota of."""
    scales: list[Scale] = []
    quota = ctx.quota
    elastic = [
        job
        for job in ctx.running
        if job.min_workers is not None
        and job.preemptible_now
        and job.workers
        and job.count < job.max_workers
        and job.flavor not in wanted_flavors
    ]
    elastic.sort(key=lambda job: (-job.cls.priority, job.started_at or 0.0, job.name))
    for job in elastic:
        queue, flavor, gpus = job.queue, job.flavor, job.g
        room = quota.headroom(queue, flavor)
        if not job.cls.can_borrow or queue in ctx.nominal_only:
            room = min(room, quota.nominal(queue, flavor) - quota.used(queue, flavor))
        cohort = quota.root_of(queue)  # pools are keyed by the tree's root
        if cohort is not None and (cohort, flavor) in wanted_pools:
            # a pending job waits for the cohort pool's quota: growing must not take it,
            # or the grown job's share invites a fair-share preemption that stops it whole,
            # and it comes back smaller to preempt its preemptor in turn (a livelock)
            never_lent = quota.limits(queue, flavor).reserved
            room = min(room, never_lent - quota.used(queue, flavor))
        # grown workers may run past every reservation's start: as a long job admitted past
        # them, they take only the GPUs and (in a reserved job's queue) the quota the
        # reservations leave, and leave less for the next job grown
        binding = ctx.reservations.of_flavor(flavor)
        quota_room = quota_room_of(binding, queue)
        if quota_room is not None:
            room = min(room, quota_room)
        extra = min(job.max_workers - job.count, room // gpus)
        if extra <= 0:
            continue
        free = ctx.cap.free_of(flavor)
        spare = spare_of([r.spare for r in binding])
        if spare is not None:
            free = capped(free, spare)
        added = _grow_on(ctx, job, extra, free)
        if not added:
            continue
        units = {node: count * gpus for node, count in added.items()}
        take(binding, units, queue)
        ctx.mutated.append((job, dict(job.workers)))
        ctx.cap.take(flavor, units)
        quota.add(queue, flavor, sum(units.values()))
        for node, count in added.items():
            job.workers[node] = job.workers.get(node, 0) + count
        placement = ctx.cap.by_name({node: n * gpus for node, n in job.workers.items()})
        scales.append(Scale(job.name, job.count, placement, reason="grow"))
    return scales


def _grow_on(ctx: CycleContext, job: RunningJob, extra: int, free: Mapping[int, int]) -> Workers:
    """Up to ``extra`` more workers: first on nodes it already uses, then anywhere in its
    cluster (and, for a required topology, its domains)."""
    gpus = job.g
    added: Workers = {}
    for node in sorted(job.workers):
        take = min(extra, free.get(node, 0) // gpus)
        if take > 0:
            added[node] = take
            extra -= take
    if extra > 0:
        rest = {node: units - added.get(node, 0) * gpus for node, units in free.items()}
        topology = job.topology
        cap = ctx.cap
        if topology is not None and topology.required and topology.level in cap.domain:
            domain = cap.domain[topology.level]
            mine = {domain[node] for node in job.workers}
            rest = {node: units for node, units in rest.items() if domain[node] in mine}
        more = place_in_cluster(cap, job.cluster, job.flavor, extra, 1, gpus, None, rest)
        for node, count in (more or {}).items():
            added[node] = added.get(node, 0) + count
    return added
