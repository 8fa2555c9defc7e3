"""The mutable state of one cycle, built from a snapshot: free capacity, quota usage, running jobs.

Every engine module (admission, preemption, backfill, growth) reads and updates this one object,
so that each decision sees what the cycle has already admitted, stopped and reserved.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING

from gpusched.engine.model import (
    AdmittedJob,
    PendingJob,
    Queue,
    ServiceClass,
    Snapshot,
    Stop,
    Topology,
)
from gpusched.engine.placement import Capacity, Layout, Workers
from gpusched.engine.policies import Policy
from gpusched.engine.quota import QuotaState, QuotaStatics

if TYPE_CHECKING:
    from gpusched.engine.state import EngineState

DEFAULT_CLASS = ServiceClass(name="", priority=0)
_held_for = attrgetter("held_for")  # a job's name, never empty


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
    # flavor -> queue -> started jobs of preemptible classes (rule 1's time test is left to
    # the caller); shared with the incremental state: read only
    victim_pools: dict[str, dict[str, dict[int, RunningJob]]] = field(default_factory=dict)
    # flavor -> estimated ends of the admitted jobs as the snapshot has them: (time, node, units,
    # queue), sorted, times not clamped to now; shared with the incremental state: read only
    base_ends: dict[str, list[tuple[float, int, int, str]]] = field(default_factory=dict)
    base_running: int = 0  # ctx.running[base_running:] were admitted by this cycle
    # running jobs changed by this cycle (shrunk, grown, stopped), with their workers before
    mutated: list[tuple[RunningJob, Workers]] = field(default_factory=list)
    # queues with an admitted, not yet started job that may not borrow: they must stay within
    # nominal until it starts, or it would start borrowing
    nominal_only: set[str] = field(default_factory=set)
    # releases decided by building the context (node failures, overruns) and GPUs of victims
    # beyond what their preemptor takes: flavor -> [(time, node, units, queue)]
    releases: dict[str, list[tuple[float, int, int, str]]] = field(default_factory=dict)
    # (cohort, flavor) -> queue -> pending jobs that could ever run there; built on first use
    waiting_by_pool: dict[tuple[str, str], dict[str, list[str]]] | None = None

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


def _workers_of(cap: Layout, job: AdmittedJob) -> Workers:
    out: Workers = {}
    g = max(1, job.gpus_per_worker)
    for node, units in job.placement.items():
        i = cap.index.get((job.cluster, node))
        if i is not None and units > 0:
            out[i] = out.get(i, 0) + max(1, units // g)
    return out


class _Entry:
    """One admitted job as counted in the incremental state."""

    __slots__ = ("job", "pristine", "running", "total", "units")

    def __init__(self, job: AdmittedJob, workers: Workers, running: RunningJob | None) -> None:
        self.job = job
        self.pristine = workers
        self.units = {i: w * job.gpus_per_worker for i, w in workers.items()}
        self.total = job.workers * job.gpus_per_worker
        self.running = running


class Bookkeeping:
    """What the admitted jobs add up to, updated by difference: free capacity, quota usage (with
    the cohort pools), running jobs, victim pools and estimated release times.

    Successive snapshots (the simulator's, cycle after cycle) share most ``AdmittedJob``
    objects; only the jobs that appeared or disappeared are counted again. Entries keep their
    job object alive, so an ``id`` can never be reused while its entry exists. The result is
    exactly what counting every job from scratch gives (a test replays a scenario both ways).
    A cycle's own changes to running jobs are recorded in ``mutated`` and undone before the
    next cycle.
    """

    def __init__(self, layout: Layout, classes: tuple[ServiceClass, ...], default_runtime: float):
        self.layout = layout
        self.classes_key = classes
        self.default_runtime = default_runtime
        self.classes = {c.name: c for c in classes}
        self.entries: dict[int, _Entry] = {}
        self.ids: set[int] = set()  # the entries' keys as a set, for C set differences
        self.free: dict[str, dict[int, int]] = {f: dict(v) for f, v in layout.base_free.items()}
        self.usage: dict[tuple[str, str], int] = {}
        self.waiting: dict[str, _Entry] = {}
        self.mutated: list[tuple[RunningJob, Workers]] = []
        self.on_node: dict[int, set[int]] = {}  # node index -> entries with a worker there
        self.running: dict[int, RunningJob] = {}  # entries that are not stopping
        self.pools: dict[str, dict[str, dict[int, RunningJob]]] = {}  # see CycleContext
        self.ends: dict[str, list[tuple[float, int, int, str]]] = {}  # see CycleContext
        self.quota: QuotaState | None = None  # usage over the last snapshot's quotas

    def quota_for(self, queues: tuple[Queue, ...], static: QuotaStatics) -> QuotaState:
        """The admitted jobs' usage over these queues' quotas (a copy the caller may change)."""
        if self.quota is None or self.quota.static is not static:
            self.quota = QuotaState(queues, self.usage, static)
        return self.quota.copy()

    def _ends_of(self, entry: _Entry) -> list[tuple[float, int, int, str]]:
        job = entry.job
        if entry.running is not None:
            end = entry.running.est_end
        else:  # stopping: its GPUs come back at the end of its grace period
            end = job.release_at if job.release_at is not None else -math.inf
        return [(end, i, u, job.queue) for i, u in entry.units.items()]

    def runtime(self, job: AdmittedJob, cls: ServiceClass) -> float:
        if job.estimated_runtime is not None:
            return job.estimated_runtime
        if cls.max_runtime is not None:
            return cls.max_runtime
        return self.default_runtime

    def add(self, key: int, job: AdmittedJob, sort: bool = True) -> None:
        """Count ``job`` in; ``sort=False`` appends its ends unsorted (call ``sort_ends`` after)."""
        workers = _workers_of(self.layout, job)
        running: RunningJob | None = None
        if not job.stopping:
            cls = self.classes.get(job.service_class, DEFAULT_CLASS)
            start = job.started_at if job.started_at is not None else (job.start_at or 0.0)
            running = RunningJob(
                name=job.name,
                queue=job.queue,
                cls=cls,
                cluster=job.cluster,
                flavor=job.flavor,
                g=job.gpus_per_worker,
                workers=dict(workers),
                started_at=job.started_at,
                est_end=start + self.runtime(job, cls),
                min_workers=job.min_workers,
                max_workers=job.max_workers,
                topology=job.topology,
                preemptible_now=job.started_at is not None,
            )
        entry = _Entry(job, workers, running)
        self.entries[key] = entry
        self.ids.add(key)
        if running is not None:
            self.running[key] = running
            if job.started_at is not None and running.cls.preemptible:
                by_queue = self.pools.setdefault(job.flavor, {})
                by_queue.setdefault(job.queue, {})[key] = running
        ends = self.ends.setdefault(job.flavor, [])
        if sort:
            for event in self._ends_of(entry):
                bisect.insort(ends, event)
        else:
            ends.extend(self._ends_of(entry))
        free = self.free.get(job.flavor)
        if free is not None:
            for i, u in entry.units.items():
                if i in free:
                    free[i] -= u
        ukey = (job.queue, job.flavor)
        self.usage[ukey] = self.usage.get(ukey, 0) + entry.total
        if self.quota is not None:
            self.quota.add(job.queue, job.flavor, entry.total)
        for i in entry.units:
            self.on_node.setdefault(i, set()).add(key)
        if not job.stopping and job.started_at is None:
            self.waiting[job.name] = entry

    def sort_ends(self) -> None:
        for ends in self.ends.values():
            ends.sort()

    def remove(self, key: int) -> None:
        entry = self.entries.pop(key)
        self.ids.discard(key)
        job = entry.job
        if entry.running is not None:
            del self.running[key]
            self.pools.get(job.flavor, {}).get(job.queue, {}).pop(key, None)
        ends = self.ends[job.flavor]
        for event in self._ends_of(entry):
            del ends[bisect.bisect_left(ends, event)]
        free = self.free.get(job.flavor)
        if free is not None:
            for i, u in entry.units.items():
                if i in free:
                    free[i] += u
        self.usage[(job.queue, job.flavor)] -= entry.total
        if self.quota is not None:
            self.quota.add(job.queue, job.flavor, -entry.total)
        for i in entry.units:
            self.on_node[i].discard(key)
        if self.waiting.get(job.name) is entry:
            del self.waiting[job.name]


def _bookkeeping(snapshot: Snapshot, layout: Layout, state: EngineState) -> Bookkeeping:
    """The state's bookkeeping with the last cycle's own changes undone, if it still fits."""
    book = state.bookkeeping
    if (
        book is not None
        and book.layout is layout
        and book.classes_key is snapshot.service_classes
        and book.default_runtime == snapshot.default_runtime
    ):
        for r, workers in reversed(book.mutated):  # undo last cycle's shrink/grow/stop
            r.workers = dict(workers)
            r.preemptible_now = r.started_at is not None
        book.mutated = []
        return book
    book = Bookkeeping(layout, snapshot.service_classes, snapshot.default_runtime)
    state.bookkeeping = book
    return book


def build_context(snapshot: Snapshot, policy: Policy, state: EngineState) -> CycleContext:
    """Free capacity and quota usage after every admitted job; failures and overruns stopped."""
    layout = state.layout_of(snapshot)
    inc = _bookkeeping(snapshot, layout, state)
    admitted = snapshot.admitted
    # stopping jobs whose GPUs may be held for a preemptor
    victims = [job for job in compress(admitted, map(_held_for, admitted)) if job.stopping]
    present = set(map(id, admitted))
    if victims:
        present.difference_update(map(id, victims))
    # the jobs that came or went since the last snapshot (usually few)
    gone = inc.ids - present
    if len(gone) > len(inc.entries) // 2:  # fresh job objects (a live cycle): count anew
        inc = Bookkeeping(layout, snapshot.service_classes, snapshot.default_runtime)
        state.bookkeeping = inc
    else:
        for key in gone:
            inc.remove(key)
    entries = inc.entries
    came = present - inc.ids
    bulk = not entries  # append every release event, then sort once
    if came:
        for job in compress(admitted, map(came.__contains__, map(id, admitted))):
            inc.add(id(job), job, sort=not bulk)
    if bulk:
        inc.sort_ends()
    held: dict[str, list[AdmittedJob]] = {}
    for job in victims:
        if job.held_for in inc.waiting:
            held.setdefault(job.held_for or "", []).append(job)
        else:  # its preemptor is gone or started: an ordinary stopping job
            inc.add(id(job), job)
    cap = Capacity(layout, inc.free)
    now = snapshot.now
    quota = inc.quota_for(snapshot.queues, state.quota_statics(snapshot.queues))
    for job in victims:
        if job.held_for in inc.waiting:  # counted against its queue until released
            quota.add(job.queue, job.flavor, job.workers * job.gpus_per_worker)
    ctx = CycleContext(snapshot, policy, cap, quota, dict(inc.classes), [])
    ctx.mutated = inc.mutated
    ctx.victim_pools = inc.pools
    ctx.base_ends = inc.ends
    for entry in inc.waiting.values():
        if not ctx.cls(entry.job.service_class).can_borrow:
            ctx.nominal_only.add(entry.job.queue)
    stopped: list[RunningJob] = []
    timed = {c.name for c in snapshot.service_classes if c.max_runtime is not None}
    suspects: set[int] = set()
    for i in cap.failed:
        suspects.update(inc.on_node.get(i, ()))
    if timed:
        suspects.update(entries)
    for key in sorted(suspects):
        entry = entries[key]
        job = entry.job
        if job.stopping or job.started_at is None:
            continue  # stopping already, or a preemptor still waiting (see below)
        cls = ctx.cls(job.service_class)
        reason = None
        if cap.failed and not cap.failed.isdisjoint(entry.units):
            reason = "node-failure"
        elif (
            job.service_class in timed
            and cls.max_runtime is not None
            and job.started_at is not None
            and now - job.started_at >= cls.max_runtime
        ):
            reason = "max-runtime"
        if reason is not None and entry.running is not None:
            # stopped whole; its GPUs stay busy (and counted) through its grace period, and
            # without one they are free for this very cycle
            release = now + cls.grace_period
            ctx.stops.append(Stop(job.name, reason, None, release, reason == "node-failure"))
            stopped.append(entry.running)
            if release > now:
                rel = ctx.releases.setdefault(job.flavor, [])
                rel.extend((release, i, u, job.queue) for i, u in entry.units.items())
            else:
                cap.give(job.flavor, entry.units)
                quota.add(job.queue, job.flavor, -entry.total)
    # a preemptor still waiting for its victims does not start on a node lost meanwhile
    for name, entry in sorted(inc.waiting.items()):
        usable = layout.base_free.get(entry.job.flavor, {})
        if entry.running is not None and any(i not in usable for i in entry.units):
            ctx.stops.append(Stop(name, "node-failure", None, now, True))
            stopped.append(entry.running)
    ctx.stops.sort(key=lambda stop: stop.job)
    for r in stopped:  # no longer running for this cycle (undone before the next)
        inc.mutated.append((r, dict(r.workers)))
        r.workers = {}
        r.preemptible_now = False
    ctx.running = list(inc.running.values())
    if stopped:
        out = {id(r) for r in stopped}
        ctx.running = [r for r in ctx.running if id(r) not in out]
    ctx.base_running = len(ctx.running)
    # victims still in their grace period: quota counted; capacity shared with the preemptor
    for name, victims in sorted(held.items()):
        pre = inc.waiting.get(name)
        p_units: dict[tuple[str, int], int] = {}
        if pre is not None:
            for i, u in pre.units.items():
                p_units[(pre.job.flavor, i)] = u
        v_units: dict[tuple[str, int], int] = {}
        for v in victims:
            for i, w in _workers_of(layout, v).items():
                vkey = (v.flavor, i)
                v_units[vkey] = v_units.get(vkey, 0) + w * v.gpus_per_worker
        release = max((v.release_at or now) for v in victims)
        for (f, i), u in sorted(v_units.items()):
            extra = u - p_units.get((f, i), 0)
            if extra > 0:
                cap.take(f, {i: extra})
                ctx.releases.setdefault(f, []).append((release, i, extra, ""))
    return ctx
