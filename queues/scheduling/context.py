"""The mutable state of one cycle, built from a snapshot: free capacity, quota usage, running jobs.

Every engine module (admission, preemption, backfill, growth) reads and updates this one object,
so that each decision sees what the cycle has already admitted, stopped and reserved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from queues.scheduling.model import (
    AdmittedJob,
    PendingJob,
    ServiceClass,
    Snapshot,
    Stop,
    Topology,
)
from queues.scheduling.placement import Capacity, Workers
from queues.scheduling.policies import Policy
from queues.scheduling.quota import QuotaState

DEFAULT_CLASS = ServiceClass(name="", priority=0)


@dataclass(slots=True)
class RunningJob:
    """An admitted job as the cycle sees it (workers per node index, mutable by shrink/grow)."""

    name: str
    queue: str
    cls: ServiceClass
    cluster: str
    flavor: str
    g: int
    workers: Workers
    started_at: float | None
    est_end: float
    min_workers: int | None
    max_workers: int
    topology: Topology | None
    preemptible_now: bool  # started, not stopping, not waiting for victims

    @property
    def count(self) -> int:
        return sum(self.workers.values())

    def units(self) -> dict[int, int]:
        return {i: w * self.g for i, w in self.workers.items()}


@dataclass(slots=True)
class Reservation:
    job: str
    start: float
    cluster: str
    flavor: str
    units: dict[int, int]  # node index -> units reserved at start
    spare: dict[int, int]  # node index -> units a long job may still take there
    queue: str = ""
    quota_room: int = 0  # units of the flavor a long job of the same queue may still take


@dataclass(slots=True)
class CycleContext:
    snapshot: Snapshot
    policy: Policy
    cap: Capacity
    quota: QuotaState
    classes: dict[str, ServiceClass]
    running: list[RunningJob]
    stops: list[Stop] = field(default_factory=list)
    reservation: Reservation | None = None
    victim_pools: dict[str, list[RunningJob]] = field(default_factory=dict)
    # known releases (stopping jobs): flavor -> [(time, node, units, queue)]
    releases: dict[str, list[tuple[float, int, int, str]]] = field(default_factory=dict)

    @property
    def now(self) -> float:
        return self.snapshot.now

    def cls(self, name: str) -> ServiceClass:
        return self.classes.get(name, DEFAULT_CLASS)

    def runtime_of(self, estimated: float | None, cls: ServiceClass) -> float:
        if estimated is not None:
            return estimated
        if cls.max_runtime is not None:
            return cls.max_runtime
        return self.snapshot.default_runtime

    def est_end_of(self, job: PendingJob) -> float:
        return self.now + self.runtime_of(job.estimated_runtime, self.cls(job.service_class))


def _workers_of(cap: Capacity, job: AdmittedJob) -> Workers:
    out: Workers = {}
    g = max(1, job.gpus_per_worker)
    for node, units in job.placement.items():
        i = cap.index.get((job.cluster, node))
        if i is not None and units > 0:
            out[i] = out.get(i, 0) + max(1, units // g)
    return out


_workers_cache: dict[int, tuple[AdmittedJob, object, Workers]] = {}


def _cached_workers(
    cap: Capacity, job: AdmittedJob, fresh: dict[int, tuple[AdmittedJob, object, Workers]]
) -> Workers:
    """``_workers_of``, remembered per (immutable) job object and node numbering."""
    hit = _workers_cache.get(id(job))
    if hit is not None and hit[0] is job and hit[1] is cap.index:
        workers = hit[2]
    else:
        workers = _workers_of(cap, job)
    fresh[id(job)] = (job, cap.index, workers)
    return dict(workers)


def build_context(snapshot: Snapshot, policy: Policy) -> CycleContext:
    """Free capacity and quota usage after every admitted job; failures and overruns stopped."""
    cap = Capacity(snapshot)
    quota = QuotaState(snapshot.queues)
    classes = {c.name: c for c in snapshot.service_classes}
    ctx = CycleContext(snapshot, policy, cap, quota, classes, [])
    now = snapshot.now
    waiting = {j.name for j in snapshot.admitted if j.started_at is None and not j.stopping}
    held: dict[str, list[AdmittedJob]] = {}
    preemptors: dict[str, AdmittedJob] = {}
    fresh: dict[int, tuple[AdmittedJob, object, Workers]] = {}
    usage: dict[tuple[str, str], int] = {}
    for job in sorted(snapshot.admitted, key=lambda j: j.name):
        cls = ctx.cls(job.service_class)
        workers = _cached_workers(cap, job, fresh)
        units = {i: w * job.gpus_per_worker for i, w in workers.items()}
        if job.stopping:
            if job.held_for is not None and job.held_for in waiting:
                held.setdefault(job.held_for, []).append(job)
                continue
            cap.take(job.flavor, units)
            key = (job.queue, job.flavor)
            usage[key] = usage.get(key, 0) + job.workers * job.gpus_per_worker
            release = job.release_at if job.release_at is not None else now
            rel = ctx.releases.setdefault(job.flavor, [])
            rel.extend((release, i, u, job.queue) for i, u in units.items())
            continue
        if any(i in cap.failed for i in workers):
            ctx.stops.append(Stop(job.name, "node-failure", None, now))
            continue
        if (
            cls.max_runtime is not None
            and job.started_at is not None
            and now - job.started_at >= cls.max_runtime
        ):
            ctx.stops.append(Stop(job.name, "max-runtime", None, now, requeue=False))
            continue
        cap.take(job.flavor, units)
        key = (job.queue, job.flavor)
        usage[key] = usage.get(key, 0) + job.workers * job.gpus_per_worker
        if job.started_at is None:
            preemptors[job.name] = job
        start = job.started_at if job.started_at is not None else (job.start_at or now)
        runtime = ctx.runtime_of(job.estimated_runtime, cls)
        ctx.running.append(
            RunningJob(
                name=job.name,
                queue=job.queue,
                cls=cls,
                cluster=job.cluster,
                flavor=job.flavor,
                g=job.gpus_per_worker,
                workers=workers,
                started_at=job.started_at,
                est_end=max(now, start + runtime),
                min_workers=job.min_workers,
                max_workers=job.max_workers,
                topology=job.topology,
                preemptible_now=job.started_at is not None,
            )
        )
    _workers_cache.clear()
    _workers_cache.update(fresh)
    for (q, f), total in sorted(usage.items()):
        quota.add(q, f, total)
    # victims still in their grace period: only what exceeds the preemptor's share is extra
    for name, victims in held.items():
        pre = preemptors.get(name)
        p_units: dict[tuple[str, int], int] = {}
        if pre is not None:
            for i, w in _workers_of(cap, pre).items():
                p_units[(pre.flavor, i)] = w * pre.gpus_per_worker
        v_units: dict[tuple[str, int], int] = {}
        for v in victims:
            for i, w in _workers_of(cap, v).items():
                vkey = (v.flavor, i)
                v_units[vkey] = v_units.get(vkey, 0) + w * v.gpus_per_worker
        for (f, i), u in v_units.items():
            extra = u - p_units.get((f, i), 0)
            if extra > 0:
                cap.take(f, {i: extra})
                release = max((v.release_at or now) for v in victims)
                ctx.releases.setdefault(f, []).append((release, i, extra, ""))
    return ctx
