"""Invariants 5 (work conservation) and 7 (reclaim) of docs/SCHEDULING.md, on a replayed report.

After every cycle no pending job may fit both its quota and free, unreserved capacity. The
checker knows a cycle ran at every instant that has a report event, a submission or a node event
(docs/SCENARIOS.md: cycles run at every submit, finish, failure and release). At such an instant,
after all of its events, ``Conservation.check`` looks at every job that waited through that
cycle and reports one that would have fitted.

What a report does not say is read in the engine's favour, so the check never flags a sound
report:
- a preemptor waiting for its victims' grace period holds its future placement's GPUs and
  counts against its queue's quota from the preemption on (rule 7); its placement is the one of
  its next ``admit``;
- the reservations of the last instant with ``reserve`` events (a cycle reports all of its
  reservations whenever they change) are taken to hold while their jobs are still pending (the
  report says when reservations change, not when they lapse): a job that would still run at a
  reservation's start takes none of its nodes, and one of the reserved job's queue is not
  checked;
- a queue with a waiting preemptor of a class that may not borrow must stay within nominal;
- required topology counts only nodes that carry the level's label.
A job fits a flavor when, in one cluster (and one domain of a required level), the schedulable
nodes' free GPUs hold ``min_workers`` (else ``workers``) workers, each on one node.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpusched.check.jobs import EPS, fmt
from gpusched.check.share import lent, pool_of
from gpusched.sim.scenario import JobSpec

if TYPE_CHECKING:
    from gpusched.check.replay import Alloc, Replay

MAX_FRUITLESS = 8  # the engine's bound on fruitless preemption searches per cycle


@dataclass
class Waiting:
    """A preemptor admitted by a cycle that starts once its victims' grace period has passed."""

    flavor: str | None  # None: no later admit tells where it would have run
    placement: dict[str, int]
    # GPUs of its victims without a grace period of their own (shrunk or stopped), held for it
    # until it starts (rule 7), with their quota: (queue, flavor, node) -> GPUs. The report
    # shows them free at once; the engine holds them with the other victims' GPUs.
    shrunk: dict[tuple[str, str, str], int] = field(default_factory=dict)


@dataclass
class Reserved:
    job: str
    start: float
    flavor: str | None
    nodes: frozenset[str]


def reserved_by(event: Mapping[str, Any]) -> Reserved | None:
    """The reservation a ``reserve`` event makes (None when it names no nodes or start)."""
    nodes = event.get("nodes")
    start = event.get("start")
    flavor = event.get("flavor")
    if not isinstance(nodes, Mapping | list) or not isinstance(start, int | float):
        return None
    names = frozenset(str(n) for n in nodes)
    flavor = str(flavor) if flavor is not None else None  # None: whichever it runs on
    return Reserved(str(event.get("job")), float(start), flavor, names)


class Conservation:
    def __init__(self, replay: Replay, events: list[Any]) -> None:
        self.replay = replay
        # every job's admits in time order: (t, flavor, placement)
        self.admits: dict[str, list[tuple[float, str, dict[str, int]]]] = defaultdict(list)
        for event in events:
            if not isinstance(event, Mapping) or event.get("type") != "admit":
                continue
            placement = event.get("placement")
            if isinstance(event.get("job"), str) and isinstance(placement, Mapping):
                clean = {str(n): g for n, g in placement.items() if isinstance(g, int)}
                admit = (float(event["t"]), str(event.get("flavor")), clean)
                self.admits[event["job"]].append(admit)
        self.waiting: dict[str, Waiting] = {}
        self.stopped_now: set[str] = set()  # stopped by the cycle of the current instant
        self.scaled_now: set[str] = set()  # shrunk or grown at the current instant
        self.shrunk_now: dict[tuple[str, str], int] = defaultdict(int)  # (queue, flavor) -> GPUs
        # invariant 7: job -> (when it became owed a reclaim, deadline, the victim that suffices)
        self.owed: dict[str, tuple[float, float, str]] = {}
        self.reserved: list[Reserved] = []  # the last reported set, made at ``reserved_at``
        self.reserved_at: float | None = None
        # node -> its value of each topology level, and the clusters' nodes
        self.clusters: dict[str, list[str]] = defaultdict(list)
        for node, cluster in replay.node_cluster.items():
            self.clusters[cluster].append(node)

    # -- what the replay tells this check ------------------------------------------------------
    def preempted(self, t: float, victim: str, by: str | None) -> None:
        self.stopped_now.add(victim)
        if by is None or by in self.waiting:
            return
        later = [a for a in self.admits.get(by, ()) if a[0] >= t - EPS]
        if later and later[0][0] <= t + EPS:
            return  # starts at once: no wait
        if later:
            self.waiting[by] = Waiting(later[0][1], later[0][2])
        else:
            self.waiting[by] = Waiting(None, {})

    def shrunk(self, by: str, queue: str, flavor: str, removed: Mapping[str, int]) -> None:
        """A victim of ``by`` gave up ``removed`` GPUs per node at once (shrunk, or stopped
        without a grace period)."""
        waiting = self.waiting.get(by)
        if waiting is None:
            return  # its preemptor starts at once
        for node, gpus in removed.items():
            key = (queue, flavor, node)
            waiting.shrunk[key] = waiting.shrunk.get(key, 0) + gpus

    def started(self, job: str) -> None:
        self.waiting.pop(job, None)

    def reserve(self, event: Mapping[str, Any]) -> None:
        reserved = reserved_by(event)
        if reserved is None:
            return
        t = float(event.get("t", 0.0))
        if self.reserved_at is None or abs(t - self.reserved_at) > EPS:
            self.reserved, self.reserved_at = [], t  # a new set
        self.reserved.append(reserved)

    def reserved_for(self, t: float) -> list[Reserved]:
        """The reservations taken to hold at ``t``: those whose jobs are still pending."""
        jobs = self.replay.jobs
        return [res for res in self.reserved if self.is_pending(jobs.get(res.job), t)]

    def new_instant(self) -> None:
        self.stopped_now = set()
        self.scaled_now = set()
        self.shrunk_now = defaultdict(int)

    # -- the check -----------------------------------------------------------------------------
    def check(self, t: float) -> None:
        replay = self.replay
        replay.release_due(t)
        if any(w.flavor is None for w in self.waiting.values()):
            return  # a preemptor lost its place without an event: its hold is unknown
        pending = [job for job in replay.scenario.jobs if self.is_pending(job, t)]
        if not pending:
            return
        used = defaultdict(int, replay.node_used)
        quota_used = defaultdict(int, replay.queue_used)
        nominal_only: set[str] = set()
        held: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for end, alloc in replay.stopping:
            by = replay.held_by.get(alloc.job)
            if end > t + EPS and by in self.waiting:
                for node, gpus in alloc.placement.items():
                    held[by][node] += gpus
        for name, w in self.waiting.items():
            spec = replay.jobs[name]
            flavor = str(w.flavor)
            for node, gpus in w.placement.items():
                used[node, flavor] += max(0, gpus - held[name].get(node, 0))
            quota_used[spec.queue, flavor] += sum(w.placement.values())
            for (queue, shrunk_flavor, node), gpus in w.shrunk.items():
                used[node, shrunk_flavor] += gpus
                quota_used[queue, shrunk_flavor] += gpus
            if not replay.class_of(spec, (flavor,)).can_borrow:
                nominal_only.add(spec.queue)
        reservations = self.reserved_for(t)
        reserved_jobs = {res.job for res in reservations}
        for job in pending:
            if job.name in reserved_jobs:
                continue  # a reserved job itself: it waits for its reservation
            for flavor in job.flavors:
                binding = [
                    res
                    for res in reservations
                    if res.flavor in (flavor, None) and self.long(job, t, res)
                ]
                if any(job.queue == replay.jobs[res.job].queue for res in binding):
                    continue  # the reservation's quota share is not in the report
                if not self.quota_fits(job, flavor, quota_used, job.queue in nominal_only):
                    continue
                skip = frozenset().union(*(res.nodes for res in binding))
                if self.capacity_fits(job, flavor, used, skip):
                    replay.fail(
                        t, f"job {job.name}", f"still pending after the cycle, although its "
                        f"quota and free capacity of {flavor} hold it (work conservation)"
                    )  # fmt: skip
                    break
        if not reservations and sum(len(job.flavors) for job in pending) <= MAX_FRUITLESS:
            for job in pending:
                if job.name not in self.owed:
                    self.owe_reclaim(job, t, used, quota_used)

    # -- invariant 7 -----------------------------------------------------------------------------
    def owe_reclaim(
        self,
        job: JobSpec,
        t: float,
        used: Mapping[tuple[str, str], int],
        quota_used: Mapping[tuple[str, str], int],
    ) -> None:
        """Invariant 7, where one victim is enough: ``job`` is within nominal, and stopping a
        single borrowing job of another queue of its cohort (preemptible, past its
        ``min_runtime``) would let it fit. It must then start within the grace period plus one
        cycle. Only checked while no reservation may hold GPUs and the pending jobs cannot
        spend the engine's bound on fruitless preemption searches before this one."""
        replay = self.replay
        spec = replay.queues[job.queue]
        if spec.cohort is None or replay.tree.nested(job.queue):
            return  # in a cohort tree, invariant 7 has its own tests (docs/SCHEDULING.md 6)
        need = (job.min_workers or job.workers) * job.gpus_per_worker
        for flavor in job.flavors:
            quota = spec.quotas.get(flavor)
            if quota_used.get((job.queue, flavor), 0) + need > (quota.nominal if quota else 0):
                continue
            for victim in self.reclaimable(job, flavor, t, quota_used):
                freed = sum(victim.placement.values())
                after_quota = dict(quota_used)
                after_quota[victim.queue, flavor] -= freed
                after_used = dict(used)
                for node, gpus in victim.placement.items():
                    after_used[node, flavor] -= gpus
                if self.quota_fits(job, flavor, after_quota, False) and self.capacity_fits(
                    job, flavor, after_used, frozenset()
                ):
                    wait = max((c.grace_period for c in replay.classes.values()), default=0.0)
                    deadline = t + wait + replay.scenario.cycle_interval
                    self.owed[job.name] = (t, deadline, victim.job)
                    return

    def reclaimable(
        self, job: JobSpec, flavor: str, t: float, quota_used: Mapping[tuple[str, str], int]
    ) -> list[Alloc]:
        replay = self.replay
        cohort = replay.queues[job.queue].cohort
        out = []
        for alloc in replay.running.values():
            other = replay.queues[alloc.queue]
            if alloc.flavor != flavor or alloc.queue == job.queue or other.cohort != cohort:
                continue
            quota = other.quotas.get(flavor)
            if quota_used.get((alloc.queue, flavor), 0) <= (quota.nominal if quota else 0):
                continue  # its queue does not borrow
            cls = replay.class_of(replay.jobs[alloc.job], (flavor,))
            if not cls.preemptible or alloc.started >= t - EPS:
                continue  # protected, or started by this very cycle
            if t - alloc.started < cls.min_runtime - EPS or alloc.job in self.scaled_now:
                continue
            out.append(alloc)
        return out

    def check_owed(self, last_t: float) -> None:
        """Every within-nominal job owed a reclaim started in time (or was excused)."""
        replay = self.replay
        for name, (t, deadline, victim) in sorted(self.owed.items()):
            if not replay.started_in_time(name, t, deadline, last_t):
                replay.fail(
                    t, f"job {name}", f"within nominal and stopping {victim} alone would make "
                    f"room, but it did not start by t={fmt(deadline)} (invariant 7)"
                )  # fmt: skip
        self.owed.clear()

    def is_pending(self, job: JobSpec | None, t: float) -> bool:
        replay = self.replay
        if job is None or job.submit_at > t + EPS:
            return False
        name = job.name
        history = replay.history.get(name)
        if history is not None and any(
            at is not None for at in (history.finished, history.cancelled, history.failed)
        ):
            return False
        if name in replay.running or name in self.waiting or name in self.stopped_now:
            return False
        return not any(a.job == name and end > t + EPS for end, a in replay.stopping)

    def long(self, job: JobSpec, t: float, res: Reserved) -> bool:
        """Whether ``job`` would still run at ``res``'s start (by its estimate)."""
        estimate = job.estimated_runtime
        if estimate is None:
            limit = self.replay.classes[job.service_class].max_runtime
            estimate = limit if limit is not None else self.replay.scenario.default_runtime
        return t + estimate > res.start

    def quota_fits(
        self,
        job: JobSpec,
        flavor: str,
        quota_used: Mapping[tuple[str, str], int],
        nominal_only: bool,
    ) -> bool:
        replay = self.replay
        spec = replay.queues[job.queue]
        quota = spec.quotas.get(flavor)
        nominal = quota.nominal if quota else 0
        used = quota_used.get((job.queue, flavor), 0)
        after = used + (job.min_workers or job.workers) * job.gpus_per_worker
        if after > nominal:
            if spec.cohort is None or nominal_only:
                return False
            if not replay.class_of(job).can_borrow:
                return False
            limit = quota.borrowing_limit if quota is not None else None
            if limit is not None and after > nominal + limit:
                return False
        if spec.cohort is None:
            return True
        if replay.tree.nested(job.queue):  # every cohort up to the root within its limit
            trial = dict(quota_used)
            trial[job.queue, flavor] = after
            return not replay.tree.over(job.queue, flavor, trial)
        pool, drawn = pool_of(replay, spec.cohort, flavor, quota_used)
        reserved = nominal - lent(quota)
        need = max(0, after - reserved) - max(0, used - reserved)
        return need <= pool - drawn

    def capacity_fits(
        self,
        job: JobSpec,
        flavor: str,
        used: Mapping[tuple[str, str], int],
        skip: frozenset[str],
        *,
        cluster: str | None = None,
        given: Mapping[str, int] | None = None,
    ) -> bool:
        """Whether ``job``'s gang fits on the free GPUs of ``flavor`` (in ``cluster`` only when
        given, plus the GPUs ``given`` back per node), no node of ``skip`` used."""
        replay = self.replay
        g = job.gpus_per_worker
        least = job.min_workers or job.workers
        level = job.topology.level if job.topology and job.topology.required else None
        for name, nodes in self.clusters.items():
            if cluster is not None and name != cluster:
                continue
            workers: dict[str | None, int] = defaultdict(int)
            for node in nodes:
                if node in replay.failed or node in replay.cordoned or node in skip:
                    continue
                free = replay.capacity[node].get(flavor, 0) - used.get((node, flavor), 0)
                if given is not None:
                    free += given.get(node, 0)
                if free < g:
                    continue
                domain = replay.labels[node].get(level) if level is not None else ""
                if domain is None:
                    continue
                workers[domain] += free // g
            if any(count >= least for count in workers.values()):
                return True
        return False
