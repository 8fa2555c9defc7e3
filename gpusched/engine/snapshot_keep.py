"""What a worker process keeps from one live cycle to the next, so the engine redoes less.

The engine keeps what it learned in an ``EngineState`` (gpusched/engine/state.py): each waiting
job's ranking facts, the node layout, the quotas' static part, the admitted jobs' bookkeeping.
It finds them again by the *identity* of the snapshot's objects, and the state never changes a
decision. A live snapshot is read anew from the database every cycle
(queues/services/snapshot.py), so every object in it is new and a kept state would find nothing.
``SnapshotKeep`` closes that gap: it holds the process's ``EngineState`` and the last
snapshot's objects, and hands the engine, for every part of a new snapshot *equal* to the last
one's (a job, the clusters with their nodes, the flavors, the service classes, a queue's
quotas, the cohort tree), the last one's object. A job whose row changed (admitted, started,
stopped, its quota or class edited) compares unequal and is new to the engine, so nothing stale
is ever reused; equal objects are interchangeable. The snapshot reader may also ask the keep for
the object it made last cycle from the same inputs (``made``), and skip building it.

The Celery worker keeps one per process beside its cluster drivers (queues/tasks.py). A keep
serves one cycle at a time; a second caller meanwhile (which the scheduling lease already
rules out) gets a fresh state, and a cycle that fails drops what was kept.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar, cast

from gpusched.engine import model as engine
from gpusched.engine.state import EngineState

T = TypeVar("T")
J = TypeVar("J", engine.PendingJob, engine.AdmittedJob)


class SnapshotKeep:
    """The engine state and last snapshot one worker process keeps between its cycles."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = EngineState()
        self._last: engine.Snapshot | None = None
        self._jobs: dict[str, engine.PendingJob | engine.AdmittedJob] = {}
        self._quotas: dict[str, Mapping[str, engine.Quota]] = {}
        # name -> (inputs, object): made by the last cycle's snapshot reader, by this cycle's
        self._made: dict[str, tuple[tuple[object, ...], object]] = {}
        self._making: dict[str, tuple[tuple[object, ...], object]] = {}

    def made(self, name: str, inputs: tuple[object, ...], make: Callable[[], T]) -> T:
        """``make()``, or the object the last cycle's snapshot reader made under this name from
        equal ``inputs``: so a reader skips building what did not change. ``inputs`` must hold
        everything the object is made from."""
        found = self._made.get(name)
        thing = cast(T, found[1]) if found is not None and found[0] == inputs else make()
        self._making[name] = (inputs, thing)
        return thing

    @contextmanager
    def use(self, snapshot: engine.Snapshot) -> Iterator[tuple[engine.Snapshot, EngineState]]:
        """``with keep.use(snapshot) as (same, state)``: the snapshot with the last one's equal
        objects in it, and the state to decide it with. A failure inside drops what was kept."""
        if not self._lock.acquire(blocking=False):
            yield snapshot, EngineState()  # another cycle in this process: decide from scratch
            return
        try:
            same = self._same_objects(snapshot)
            try:
                yield same, self._state
            except BaseException:
                self._forget()
                raise
            self._last = same
            self._made, self._making = self._making, {}
        finally:
            self._lock.release()

    def _forget(self) -> None:
        self._state = EngineState()
        self._last = None
        self._jobs = {}
        self._quotas = {}
        self._made = {}
        self._making = {}

    def _same_objects(self, snapshot: engine.Snapshot) -> engine.Snapshot:
        last = self._last
        kept_jobs = self._jobs
        jobs: dict[str, engine.PendingJob | engine.AdmittedJob] = {}
        pending = tuple(_kept(kept_jobs, jobs, job) for job in snapshot.pending)
        admitted = tuple(_kept(kept_jobs, jobs, job) for job in snapshot.admitted)
        self._jobs = jobs
        queues = tuple(self._queue(q) for q in snapshot.queues)
        self._quotas = {q.name: q.quotas for q in queues}
        if last is None:
            return dataclasses.replace(snapshot, pending=pending, admitted=admitted, queues=queues)
        return dataclasses.replace(
            snapshot,
            pending=pending,
            admitted=admitted,
            queues=queues,
            flavors=_same(last.flavors, snapshot.flavors),
            clusters=_same(last.clusters, snapshot.clusters),
            service_classes=_same(last.service_classes, snapshot.service_classes),
            cohorts=_same(last.cohorts, snapshot.cohorts),
            topology_levels=_same(last.topology_levels, snapshot.topology_levels),
        )

    def _queue(self, queue: engine.Queue) -> engine.Queue:
        """The queue with the last cycle's quota objects when they are equal (its decayed usage
        moves every cycle; the quotas' static part is kept by the quota objects)."""
        quotas = self._quotas.get(queue.name)
        if quotas is None or quotas is queue.quotas or quotas != queue.quotas:
            return queue
        return dataclasses.replace(queue, quotas=quotas)


def _same(last: T, new: T) -> T:
    return last if last == new else new


def _kept(
    kept: dict[str, engine.PendingJob | engine.AdmittedJob],
    into: dict[str, engine.PendingJob | engine.AdmittedJob],
    job: J,
) -> J:
    """The last cycle's object for this job when it is equal (a pending job and an admitted
    one never are), else the new one; noted for the next cycle either way."""
    old = kept.get(job.name)
    if old is not None and (old is job or old == job):
        job = old
    into[job.name] = job
    return job
