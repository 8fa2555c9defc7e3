"""The bookkeeping the engine keeps between cycles: what the admitted jobs add up to.

Free capacity per node, quota usage per queue and flavor (with the cohort pools), the running
jobs as the cycle sees them, the victim pools and the estimated release times: ``Bookkeeping``
keeps them for the admitted jobs of the last snapshot, and ``bring_up_to_date`` counts in only
the jobs that came and counts out those that went. It is part of the caller's ``EngineState``
(state.py); the rules that act on it before any decision (failures, victims held for their
preemptor) are applied by ``context.build_context``.
"""

from __future__ import annotations

import bisect
import math
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING

from gpusched.engine.model import AdmittedJob, Queue, ServiceClass, Snapshot
from gpusched.engine.placement import Layout, Workers
from gpusched.engine.quota import QuotaState, QuotaStatics
from gpusched.engine.running import DEFAULT_CLASS, RunningJob
from gpusched.engine.stop_bound import held_class, held_to_nominal

if TYPE_CHECKING:
    from gpusched.engine.state import EngineState

_held_for = attrgetter("held_for")  # a job's name, never empty


def workers_of(layout: Layout, job: AdmittedJob) -> Workers:
    """The job's placement as workers per node index (nodes the layout lacks left out)."""
    out: Workers = {}
    g = max(1, job.gpus_per_worker)
    for node, units in job.placement.items():
        i = layout.index.get((job.cluster, node))
        if i is not None and units > 0:
            out[i] = out.get(i, 0) + max(1, units // g)
    return out


class Entry:
    """One admitted job as counted in the bookkeeping."""

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

    def __init__(
        self,
        layout: Layout,
        classes: tuple[ServiceClass, ...],
        default_runtime: float,
        statics: QuotaStatics,
    ) -> None:
        self.layout = layout
        self.classes_key = classes
        self.default_runtime = default_runtime
        self.classes = {c.name: c for c in classes}
        # the quotas' statics: a job stopped often enough is held to its queue's nominal
        self.statics = statics
        self.entries: dict[int, Entry] = {}
        self.ids: set[int] = set()  # the entries' keys as a set, for C set differences
        self.free: dict[str, dict[int, int]] = {f: dict(v) for f, v in layout.base_free.items()}
        self.usage: dict[tuple[str, str], int] = {}
        self.waiting: dict[str, Entry] = {}
        self.mutated: list[tuple[RunningJob, Workers]] = []
        self.on_node: dict[int, set[int]] = {}  # node index -> entries with a worker there
        self.running: dict[int, RunningJob] = {}  # entries that are not stopping
        self.pools: dict[str, dict[str, dict[int, RunningJob]]] = {}  # see context.CycleContext
        self.ends: dict[str, list[tuple[float, int, int, str]]] = {}  # see context.CycleContext
        self.quota: QuotaState | None = None  # usage over the last snapshot's quotas

    def quota_for(self, queues: tuple[Queue, ...], static: QuotaStatics) -> QuotaState:
        """The admitted jobs' usage over these queues' quotas (a copy the caller may change)."""
        if self.quota is None or self.quota.static is not static:
            self.quota = QuotaState(queues, self.usage, static)
        return self.quota.copy()

    def _ends_of(self, entry: Entry) -> list[tuple[float, int, int, str]]:
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
        workers = workers_of(self.layout, job)
        running: RunningJob | None = None
        if not job.stopping:
            cls = self.classes.get(job.service_class, DEFAULT_CLASS)
            least = (job.min_workers or job.workers) * job.gpus_per_worker
            if held_to_nominal(job.stops, cls, job.queue, (job.flavor,), least, self._nominal):
                cls = held_class(cls, self.classes)  # rule 1: no stop reaches it (stop_bound)
            start = job.started_at if job.started_at is not None else (job.start_at or 0.0)
            estimated = job.estimated_runtime is not None or cls.max_runtime is not None
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
                stops=job.stops,
                checkpoint_interval=job.checkpoint_interval,
                known_end=start + self.runtime(job, cls) if estimated else None,
            )
        entry = Entry(job, workers, running)
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

    def _nominal(self, queue: str, flavor: str) -> int:
        limits = self.statics.limits.get((queue, flavor))
        return limits.nominal if limits is not None else 0

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


def _kept(
    snapshot: Snapshot, layout: Layout, statics: QuotaStatics, state: EngineState
) -> Bookkeeping:
    """The state's bookkeeping with the last cycle's own changes undone, if it still fits."""
    book = state.bookkeeping
    if (
        book is not None
        and book.layout is layout
        and book.classes_key is snapshot.service_classes
        and book.default_runtime == snapshot.default_runtime
        and book.statics is statics
    ):
        for r, workers in reversed(book.mutated):  # undo last cycle's shrink/grow/stop
            r.workers = dict(workers)
            r.preemptible_now = r.started_at is not None
        book.mutated = []
        return book
    book = Bookkeeping(layout, snapshot.service_classes, snapshot.default_runtime, statics)
    state.bookkeeping = book
    return book


def bring_up_to_date(
    snapshot: Snapshot, layout: Layout, statics: QuotaStatics, state: EngineState
) -> tuple[Bookkeeping, list[AdmittedJob]]:
    """The state's bookkeeping brought to the snapshot's admitted jobs, and the stopping jobs
    left out of it because their GPUs are held for a preemptor that still waits (in snapshot
    order); a stopping job whose preemptor is gone or started is counted as any other."""
    book = _kept(snapshot, layout, statics, state)
    admitted = snapshot.admitted
    # stopping jobs whose GPUs may be held for a preemptor
    victims = [job for job in compress(admitted, map(_held_for, admitted)) if job.stopping]
    present = set(map(id, admitted))
    if victims:
        present.difference_update(map(id, victims))
    # the jobs that came or went since the last snapshot (usually few)
    gone = book.ids - present
    if len(gone) > len(book.entries) // 2:  # fresh job objects (a live cycle): count anew
        book = Bookkeeping(layout, snapshot.service_classes, snapshot.default_runtime, statics)
        state.bookkeeping = book
    else:
        for key in gone:
            book.remove(key)
    came = present - book.ids
    bulk = not book.entries  # append every release event, then sort once
    if came:
        for job in compress(admitted, map(came.__contains__, map(id, admitted))):
            book.add(id(job), job, sort=not bulk)
    if bulk:
        book.sort_ends()
    held: list[AdmittedJob] = []
    for job in victims:
        if job.held_for in book.waiting:
            held.append(job)
        else:  # its preemptor is gone or started: an ordinary stopping job
            book.add(id(job), job)
    return book, held
