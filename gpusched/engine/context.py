"""The mutable state of one cycle, built from a snapshot: free capacity, quota usage, running jobs.

Every engine module (admission, preemption, backfill, growth) reads and updates this one object,
so that each decision sees what the cycle has already admitted, stopped and reserved.

``build_context`` starts it from the bookkeeping kept between cycles (bookkeeping.py: what the
admitted jobs add up to), then applies the rules that act before any decision: victims in their
grace period stay counted and their GPUs stay held for their preemptor (rule 7, here), and jobs
on failed nodes or past their max runtime are stopped (failures.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpusched.engine.bookkeeping import Bookkeeping, bring_up_to_date, workers_of
from gpusched.engine.failures import stop_failed_and_overrun
from gpusched.engine.model import AdmittedJob, PendingJob, ServiceClass, Snapshot, Stop
from gpusched.engine.placement import Capacity, Workers
from gpusched.engine.policies import Policy
from gpusched.engine.quota import QuotaState
from gpusched.engine.reservations import Reservations
from gpusched.engine.running import DEFAULT_CLASS, RunningJob
from gpusched.engine.stop_bound import (
    HELD_SUFFIX,
    STOP_BOUND,
    held_class,
    held_to_nominal,
    own_class_name,
)

if TYPE_CHECKING:
    from gpusched.engine.state import EngineState


@dataclass(slots=True)
class CycleContext:
    snapshot: Snapshot
    policy: Policy
    cap: Capacity
    quota: QuotaState
    classes: dict[str, ServiceClass]
    running: list[RunningJob]
    stops: list[Stop] = field(default_factory=list)
    # backfill's reservations in force (reservations.py)
    reservations: Reservations = field(default_factory=Reservations)
    # flavor -> queue -> started jobs of preemptible classes (rule 1's time test is left to
    # the caller); shared with the bookkeeping: read only
    victim_pools: dict[str, dict[str, dict[int, RunningJob]]] = field(default_factory=dict)
    # flavor -> estimated ends of the admitted jobs as the snapshot has them: (time, node, units,
    # queue), sorted, times not clamped to now; shared with the bookkeeping: read only
    base_ends: dict[str, list[tuple[float, int, int, str]]] = field(default_factory=dict)
    base_running: int = 0  # ctx.running[base_running:] were admitted by this cycle
    # running jobs changed by this cycle (shrunk, grown, stopped), with their workers before
    mutated: list[tuple[RunningJob, Workers]] = field(default_factory=list)
    # queues with an admitted, not yet started job that may not borrow: they must stay within
    # nominal until it starts, or it would start borrowing
    nominal_only: set[str] = field(default_factory=set)
    # jobs whose admission this cycle was taken back for a preemptor (takeback.py)
    taken_back: set[str] = field(default_factory=set)
    # releases decided by building the context (node failures, overruns) and GPUs of victims
    # beyond what their preemptor takes: flavor -> [(time, node, units, queue)]
    releases: dict[str, list[tuple[float, int, int, str]]] = field(default_factory=dict)

    @property
    def now(self) -> float:
        return self.snapshot.now

    def cls(self, name: str) -> ServiceClass:
        known = self.classes.get(name)
        if known is not None:
            return known
        own = self.classes.get(own_class_name(name))  # a held variant not asked for yet
        return DEFAULT_CLASS if own is None else held_class(own, self.classes)

    def cls_of(self, job: PendingJob) -> ServiceClass:
        """The class the rules apply to a pending job: its own, or its held variant once it is
        held to its queue's nominal (stop_bound.py)."""
        cls = self.classes.get(job.service_class, DEFAULT_CLASS)
        if job.stops < STOP_BOUND:
            return cls
        least = (job.min_workers or job.workers) * job.gpus_per_worker
        if held_to_nominal(job.stops, cls, job.queue, job.flavors, least, self.quota.nominal):
            return held_class(cls, self.classes)
        return cls

    def class_key_of(self, job: PendingJob) -> str:
        """The class name the memos know a pending job by: its held variant's once it is held
        (so it never shares an answer with its class's other jobs), else its own."""
        if job.stops < STOP_BOUND:
            return job.service_class
        cls = self.cls_of(job)
        return cls.name if cls.name.endswith(HELD_SUFFIX) else job.service_class

    def runtime_of(self, estimated: float | None, cls: ServiceClass) -> float:
        if estimated is not None:
            return estimated
        if cls.max_runtime is not None:
            return cls.max_runtime
        return self.snapshot.default_runtime

    def est_end_of(self, job: PendingJob) -> float:
        return self.now + self.runtime_of(job.estimated_runtime, self.cls_of(job))


def build_context(snapshot: Snapshot, policy: Policy, state: EngineState) -> CycleContext:
    """The cycle's starting state: free capacity and quota usage after every admitted job,
    victims in their grace period held for their preemptor, failures and overruns stopped."""
    layout = state.layout_of(snapshot)
    statics = state.quota_statics(snapshot.queues, snapshot.cohorts)
    book, held = bring_up_to_date(snapshot, layout, statics, state)
    cap = Capacity(layout, book.free)
    quota = book.quota_for(snapshot.queues, statics)
    for job in held:  # counted against its queue until released
        quota.add(job.queue, job.flavor, job.workers * job.gpus_per_worker)
    ctx = CycleContext(snapshot, policy, cap, quota, dict(book.classes), [])
    ctx.mutated = book.mutated
    ctx.victim_pools = book.pools
    ctx.base_ends = book.ends
    for entry in book.waiting.values():
        if entry.running is not None and not entry.running.cls.can_borrow:
            ctx.nominal_only.add(entry.job.queue)
    stopped = stop_failed_and_overrun(ctx, book)
    ctx.running = list(book.running.values())
    if stopped:
        out = {id(r) for r in stopped}
        ctx.running = [r for r in ctx.running if id(r) not in out]
    ctx.base_running = len(ctx.running)
    _hold_for_preemptors(ctx, book, held)
    return ctx


def _hold_for_preemptors(ctx: CycleContext, book: Bookkeeping, held: list[AdmittedJob]) -> None:
    """Rule 7: the GPUs of victims still in their grace period are held for their preemptor;
    those it will not use stay taken until the victims release them (their quota is counted
    by the caller)."""
    by_preemptor: dict[str, list[AdmittedJob]] = {}
    for job in held:
        by_preemptor.setdefault(job.held_for or "", []).append(job)
    now = ctx.now
    for name, victims in sorted(by_preemptor.items()):
        preemptor = book.waiting.get(name)
        taken: dict[tuple[str, int], int] = {}  # (flavor, node) -> units the preemptor uses
        if preemptor is not None:
            for node, units in preemptor.units.items():
                taken[(preemptor.job.flavor, node)] = units
        freed: dict[tuple[str, int], int] = {}  # (flavor, node) -> units the victims hold
        for victim in victims:
            for node, count in workers_of(book.layout, victim).items():
                key = (victim.flavor, node)
                freed[key] = freed.get(key, 0) + count * victim.gpus_per_worker
        release = max((victim.release_at or now) for victim in victims)
        for (flavor, node), units in sorted(freed.items()):
            extra = units - taken.get((flavor, node), 0)
            if extra > 0:
                ctx.cap.take(flavor, {node: extra})
                ctx.releases.setdefault(flavor, []).append((release, node, extra, ""))
