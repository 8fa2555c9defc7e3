"""The replay behind ``checker.check_report``: a report's events applied in time order to the
scenario's nodes and queues, with the rules checked as each event lands (the preemption rules in
``victims.py``, work conservation in ``conservation.py``, the job table in ``jobs.py``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpusched.check.conservation import Conservation
from gpusched.check.jobs import EPS, JobHistory, fmt
from gpusched.check.swaps import Swaps
from gpusched.check.tree import Tree
from gpusched.check.victims import STOP_BOUND, check_promises, check_victim
from gpusched.sim.scenario import JobSpec, QueueSpec, Scenario, ServiceClassSpec

STOP_REASONS = (
    "reclaim", "fair-share", "priority", "node-failure", "node-drain", "max-runtime"
)  # fmt: skip
PROTECTED_REASONS = ("reclaim", "fair-share", "priority")
"""Reasons that must respect non-preemptible classes and ``min_runtime``."""
EVENT_TYPES = (
    "admit",
    "scale",
    "preempt",
    "finish",
    "fail",
    "cancel",
    "requeue",
    "reserve",
    "node",
)
INFORMATIONAL = ("reserve", "node")
"""Event types that change no allocation: node state comes from the scenario's own events."""


@dataclass
class Alloc:
    job: str
    queue: str
    cluster: str
    flavor: str
    workers: int
    placement: dict[str, int]
    started: float


class Replay:
    """The report's events replayed in time order: who holds which GPUs, each job's history,
    and every broken rule in ``violations`` (see ``checker``)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.violations: list[str] = []
        self.flavors = [f.name for f in scenario.flavors]
        self.jobs: dict[str, JobSpec] = {j.name: j for j in scenario.jobs}
        self.classes: dict[str, ServiceClassSpec] = {c.name: c for c in scenario.service_classes}
        self.queues: dict[str, QueueSpec] = {q.name: q for q in scenario.queues}
        self.tree = Tree(scenario)  # the cohort tree (section 2a)
        self.node_cluster: dict[str, str] = {}
        self.capacity: dict[str, Mapping[str, int]] = {}
        self.labels: dict[str, Mapping[str, str]] = {}
        for cluster in scenario.clusters:
            for node in cluster.nodes:
                self.node_cluster[node.name] = cluster.name
                self.capacity[node.name] = node.gpus
                self.labels[node.name] = node.labels
        self.failed: set[str] = set()
        self.cordoned: set[str] = set()
        self.draining: set[str] = set()
        self.running: dict[str, Alloc] = {}
        self.stopping: list[tuple[float, Alloc]] = []
        self.history: dict[str, JobHistory] = defaultdict(JobHistory)
        self.preempt_count = 0
        self.stranded: set[tuple[str, str]] = set()  # (job, node) already reported
        self.promises: dict[str, tuple[float, float, str]] = {}  # preemptor: (t, deadline, what)
        self.held_by: dict[str, str] = {}  # stopped job -> the preemptor its GPUs are held for
        self.node_changed_at: dict[str, float] = {}  # node -> its last scenario event
        self.conservation = Conservation(self, [])
        self.swaps = Swaps(self)  # rule 8: no same-cycle swap
        self.conserving = True  # check work conservation (invariant 5)
        self.reclaiming = True  # check that a reclaim one victim allows happens (invariant 7)
        self.last_t = 0.0
        # GPUs held by running and stopping jobs, kept up to date by take() and give()
        self.node_used: dict[tuple[str, str], int] = defaultdict(int)
        self.queue_used: dict[tuple[str, str], int] = defaultdict(int)
        # this instant: GPUs its admits are still to take, and GPUs taken by borrowing classes
        self.coming: dict[tuple[str, str], int] = defaultdict(int)
        self.lent_now: dict[tuple[str, str], int] = defaultdict(int)

    # -- helpers ----------------------------------------------------------------------------

    def fail(self, t: float, what: str, problem: str) -> None:
        self.violations.append(f"t={fmt(t)}: {what}: {problem}")

    def take(self, alloc: Alloc) -> None:
        self.count(alloc, 1)

    def give(self, alloc: Alloc) -> None:
        self.count(alloc, -1)

    def count(self, alloc: Alloc, sign: int) -> None:
        for node, gpus in alloc.placement.items():
            self.node_used[node, alloc.flavor] += sign * gpus
            self.queue_used[alloc.queue, alloc.flavor] += sign * gpus

    def release_due(self, t: float) -> None:
        keep = []
        for end, alloc in self.stopping:
            if end > t + EPS:
                keep.append((end, alloc))
            else:
                self.give(alloc)
        self.stopping = keep

    def class_of(self, job: JobSpec, flavors: tuple[str, ...] | None = None) -> ServiceClassSpec:
        """The class the rules treat ``job`` as of, in ``flavors`` (its own if None): rule 1's
        stop bound holds a job stopped and requeued ``STOP_BOUND`` times to its queue's nominal
        when that nominal could hold its least workers in one of them: it may then not borrow,
        and it is not preemptible (docs/SCHEDULING.md section 4, rule 1)."""
        cls = self.classes[job.service_class]
        if (
            self.history[job.name].requeues < STOP_BOUND
            or not cls.can_borrow
            or not cls.preemptible
        ):
            return cls
        least = (job.min_workers or job.workers) * job.gpus_per_worker
        quotas = self.queues[job.queue].quotas
        for flavor in job.flavors if flavors is None else flavors:
            quota = quotas.get(flavor)
            if quota is not None and least <= quota.nominal:
                return replace(cls, name=f"{cls.name} (held to nominal)", can_borrow=False,
                               preemptible=False)  # fmt: skip
        return cls

    def grace(self, job: JobSpec) -> float:
        return self.classes[job.service_class].grace_period

    def node_usage(self, node: str, flavor: str) -> int:
        return self.node_used.get((node, flavor), 0)

    def queue_usage(self, queue: str, flavor: str) -> int:
        return self.queue_used.get((queue, flavor), 0)

    # -- replay -----------------------------------------------------------------------------

    def run(self, events: list[Any]) -> None:
        timeline: list[tuple[float, int, int, Any]] = []
        for index, node_event in enumerate(self.scenario.events):
            if node_event.node is not None:
                timeline.append((node_event.at, 0, index, node_event))
        last = float("-inf")
        for index, event in enumerate(events):
            if not isinstance(event, Mapping) or not isinstance(event.get("t"), int | float):
                self.violations.append(f"events[{index}]: not an event with a numeric 't'")
                continue
            t = float(event["t"])
            if t < last - EPS:
                self.fail(t, f"events[{index}] ({event.get('type')})", "events out of time order")
            last = max(last, t)
            timeline.append((t, 1, index, event))
        self.conservation = Conservation(self, events)
        # a cycle ran at every submission too (until the scenario's end): its instant is checked
        cancelled = {e.job: e.at for e in self.scenario.events if e.job is not None}
        until = self.scenario.until
        for index, job in enumerate(self.scenario.jobs):
            if (until is None or job.submit_at <= until) and cancelled.get(
                job.name, math.inf
            ) > job.submit_at:
                timeline.append((job.submit_at, 0, -1 - index, None))
        timeline.sort(key=lambda item: (item[0], item[1], item[2]))
        instants: dict[float, list[Mapping[str, Any]]] = defaultdict(list)
        for at, kind, _, item in timeline:
            if kind == 1:
                instants[at].append(item)
        current: float | None = None
        for t, kind, _, item in timeline:
            if current is None or t > current + EPS:
                if current is not None:
                    self.check_failed_nodes(current)
                    if self.conserving:
                        self.conservation.check(current)
                self.new_instant(instants.get(t, []))
            current = t
            if kind == 0 and item is not None:
                self.node_event(item.node, item.action)
                self.node_changed_at[item.node] = t
            elif kind == 0:
                pass  # a submission: nothing to apply
            else:
                self.event(t, item)
        if current is not None:
            self.check_failed_nodes(current)
            if self.conserving:
                self.conservation.check(current)
        self.last_t = last
        if self.reclaiming:
            self.conservation.check_owed(last)
        check_promises(self)

    def new_instant(self, events: list[Mapping[str, Any]]) -> None:
        """Decisions of one instant may be listed in any order; rule checks that depend on
        their order give the engine the benefit of the doubt (see ``borrowing``)."""
        self.coming = defaultdict(int)
        self.lent_now = defaultdict(int)
        self.conservation.new_instant()
        self.swaps.new_instant(events)
        for event in events:
            name, placement = event.get("job"), event.get("placement")
            job = self.jobs.get(name) if isinstance(name, str) else None
            if event.get("type") == "admit" and job and isinstance(placement, Mapping):
                gpus = sum(g for g in placement.values() if isinstance(g, int))
                self.coming[job.queue, str(event.get("flavor"))] += gpus

    def node_event(self, node: str, action: str) -> None:
        if action == "fail":
            self.failed.add(node)
        elif action == "recover":
            self.failed.discard(node)
        elif action == "cordon":
            self.cordoned.add(node)
        elif action == "drain":
            self.cordoned.add(node)
            self.draining.add(node)
        elif action == "uncordon":
            self.cordoned.discard(node)
            self.draining.discard(node)

    def check_failed_nodes(self, t: float) -> None:
        """No job goes on running on a failed node, nor on a node being drained."""
        for alloc in self.running.values():
            for node in alloc.placement:
                if (alloc.job, node) in self.stranded:
                    continue
                if node in self.failed or node in self.draining:
                    self.stranded.add((alloc.job, node))
                    state = "failed" if node in self.failed else "draining"
                    self.fail(t, f"job {alloc.job}", f"still running on {state} node {node}")

    def event(self, t: float, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind not in EVENT_TYPES:
            self.fail(t, f"event {kind!r}", "unknown event type")
            return
        if kind == "reserve":
            self.conservation.reserve(event)
        if kind in INFORMATIONAL:
            return
        name = event.get("job")
        job = self.jobs.get(name) if isinstance(name, str) else None
        if job is None:
            self.fail(t, f"{kind} {name!r}", "names no job of the scenario")
            return
        what = f"{kind} {job.name}"
        if kind == "admit":
            self.admit(t, job, event, what)
        elif kind == "scale":
            self.scale(t, job, event, what)
        elif kind == "preempt":
            self.preempt(t, job, event, what)
        elif kind == "finish":
            self.finish(t, job, what)
        elif kind in ("fail", "cancel"):
            self.end(t, job, kind)
        elif kind == "requeue":  # pending again; any allocation was released by its stop
            self.history[job.name].requeues += 1

    # -- admit and scale --------------------------------------------------------------------

    def admit(self, t: float, job: JobSpec, event: Mapping[str, Any], what: str) -> None:
        self.release_due(t)
        history = self.history[job.name]
        if job.name in self.running:
            self.fail(t, what, "job is already running")
            return
        if any(at is not None for at in (history.finished, history.cancelled, history.failed)):
            self.fail(t, what, "job has already ended")
        if t < job.submit_at - EPS:
            self.fail(t, what, f"admitted before its submission at {fmt(job.submit_at)}")
        if event.get("queue", job.queue) != job.queue:
            self.fail(t, what, f"queue {event.get('queue')!r} is not the job's queue {job.queue}")
        alloc = self.placement(t, job, event, what, started=t)
        if alloc is None:
            return
        self.check_gang(t, job, alloc.workers, what)
        # a preemptor whose victims' grace ends now starts before the instant's node events
        # (docs/SCENARIOS.md): a node cordoned or failed at this very instant is no fault
        starting = job.name in self.conservation.waiting
        self.swaps.admitted(t, job, alloc, starting)
        self.running[job.name] = alloc
        self.conservation.started(job.name)
        self.take(alloc)
        self.coming[job.queue, alloc.flavor] -= sum(alloc.placement.values())
        added = set(alloc.placement)
        if starting:
            added = {n for n in added if abs(self.node_changed_at.get(n, -1.0) - t) > EPS}
        self.check_nodes(t, alloc, added, what)
        self.check_quota(t, job, alloc, sum(alloc.placement.values()), what)
        history.first_admit = t if history.first_admit is None else history.first_admit
        history.admits.append(t)
        history.last_admit = t

    def scale(self, t: float, job: JobSpec, event: Mapping[str, Any], what: str) -> None:
        self.release_due(t)
        old = self.running.get(job.name)
        if old is None:
            self.fail(t, what, "job is not running")
            return
        if job.min_workers is None:
            self.fail(t, what, "only an elastic job (with min_workers) may scale")
        new = self.placement(t, job, {**event, "cluster": old.cluster, "flavor": old.flavor},
                             what, started=old.started)  # fmt: skip
        if new is None:
            return
        self.check_gang(t, job, new.workers, what)
        reason = event.get("reason")
        self.swaps.scaled(event.get("by") if new.workers < old.workers else None)
        if new.workers < old.workers and reason in PROTECTED_REASONS:
            check_victim(self, t, job, old, event, str(reason), what)
            by = event.get("by")
            if isinstance(by, str):
                self.conservation.preempted(t, job.name, by)
                removed = {
                    node: gpus - new.placement.get(node, 0)
                    for node, gpus in old.placement.items()
                    if gpus > new.placement.get(node, 0)
                }
                self.conservation.shrunk(by, job.queue, old.flavor, removed)
        self.conservation.scaled_now.add(job.name)
        if new.workers < old.workers:
            shrunk = sum(old.placement.values()) - sum(new.placement.values())
            self.conservation.shrunk_now[job.queue, old.flavor] += shrunk
        grown = {n for n, g in new.placement.items() if g > old.placement.get(n, 0)}
        self.running[job.name] = new
        self.give(old)
        self.take(new)
        self.check_nodes(t, new, grown, what)
        if new.workers > old.workers:
            added = sum(new.placement.values()) - sum(old.placement.values())
            self.check_quota(t, job, new, added, what)

    def placement(
        self, t: float, job: JobSpec, event: Mapping[str, Any], what: str, started: float
    ) -> Alloc | None:
        cluster, flavor = event.get("cluster"), event.get("flavor")
        workers, placement = event.get("workers"), event.get("placement")
        if flavor not in job.flavors:
            self.fail(t, what, f"flavor {flavor!r} is not one the job accepts {list(job.flavors)}")
            return None
        if not isinstance(workers, int) or isinstance(workers, bool):
            self.fail(t, what, f"'workers' must be an integer, got {workers!r}")
            return None
        if not isinstance(placement, Mapping) or not placement:
            self.fail(t, what, "'placement' must map nodes to GPU counts")
            return None
        clean: dict[str, int] = {}
        for node, gpus in placement.items():
            if node not in self.capacity:
                self.fail(t, what, f"placement names unknown node {node!r}")
                return None
            if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus <= 0:
                self.fail(t, what, f"placement on {node} must be a positive integer, got {gpus!r}")
                return None
            if gpus % job.gpus_per_worker:
                self.fail(
                    t, what, f"{gpus} GPUs on {node} is not a whole number of workers "
                    f"of {job.gpus_per_worker} GPUs (a worker must sit on one node)"
                )  # fmt: skip
            if self.node_cluster[node] != cluster:
                self.fail(t, what, f"node {node} is not in cluster {cluster!r}")
            clean[node] = gpus
        total = sum(clean.values())
        if total != workers * job.gpus_per_worker:
            self.fail(
                t, what, f"placement holds {total} GPUs but {workers} workers x "
                f"{job.gpus_per_worker} need {workers * job.gpus_per_worker}"
            )  # fmt: skip
        return Alloc(job.name, job.queue, str(cluster), str(flavor), workers, clean, started)

    def check_gang(self, t: float, job: JobSpec, workers: int, what: str) -> None:
        if job.min_workers is None:
            if workers != job.workers:
                self.fail(t, what, f"gang of {job.workers} workers started with {workers}")
        elif not job.min_workers <= workers <= job.workers:
            self.fail(
                t, what, f"elastic job runs {workers} workers, outside "
                f"{job.min_workers}..{job.workers}"
            )  # fmt: skip

    def check_nodes(self, t: float, alloc: Alloc, added: set[str], what: str) -> None:
        for node in sorted(added):
            if node in self.failed:
                self.stranded.add((alloc.job, node))  # reported here, not again as stranded
                self.fail(t, what, f"placed on failed node {node}")
            if node in self.cordoned:
                self.fail(t, what, f"placed on cordoned node {node}")
            capacity = self.capacity[node].get(alloc.flavor, 0)
            if capacity == 0:
                self.fail(t, what, f"node {node} does not expose flavor {alloc.flavor}")
        for node in sorted(alloc.placement):
            capacity = self.capacity[node].get(alloc.flavor, 0)
            used = self.node_usage(node, alloc.flavor)
            if capacity and used > capacity:
                self.fail(
                    t, what, f"node {node} over capacity: {used} of {capacity} {alloc.flavor}"
                )
        spec = self.jobs[alloc.job].topology
        if spec is not None and spec.required:
            domains = {self.labels[n].get(spec.level) for n in alloc.placement}
            if len(domains) != 1 or None in domains:
                self.fail(
                    t, what, f"topology required {spec.level}, but placed across "
                    f"{sorted(str(d) for d in domains)}"
                )  # fmt: skip

    # -- quota ------------------------------------------------------------------------------

    def check_quota(self, t: float, job: JobSpec, alloc: Alloc, added: int, what: str) -> None:
        queue = self.queues[job.queue]
        flavor = alloc.flavor
        quota = queue.quotas.get(flavor)
        nominal = quota.nominal if quota else 0
        used = self.queue_usage(queue.name, flavor)
        if queue.cohort is None:
            limit: int | None = nominal
        elif quota is not None and quota.borrowing_limit is not None:
            limit = nominal + quota.borrowing_limit
        else:
            limit = None
        if limit is not None and used > limit:
            self.fail(t, what, f"queue {queue.name} uses {used} {flavor}, above its limit {limit}")
        service_class = self.class_of(job, (flavor,))
        if service_class.can_borrow:
            self.lent_now[queue.name, flavor] += added
        # a borrowing class's admits of this instant may have been decided after this one;
        # the queue's lower-priority jobs that may borrow count as its borrowers (re-accounted)
        elif (
            used
            - self.lent_now.get((queue.name, flavor), 0)
            - self.borrowers_below(t, queue.name, flavor, service_class.priority)
            > nominal
        ):
            self.fail(
                t, what, f"class {service_class.name} cannot borrow, but queue {queue.name} "
                f"now uses {used} {flavor} above its nominal {nominal}, more than its "
                "lower-priority jobs that may borrow hold"
            )  # fmt: skip
        if queue.cohort is not None:
            self.check_cohorts(t, queue.name, flavor, what)

    def borrowers_below(self, t: float, queue: str, flavor: str, priority: int) -> int:
        """GPUs of ``flavor`` held by the queue's jobs started before ``t`` that may run as its
        borrowers for a job of ``priority``: preemptible, of a class that may borrow, lower
        priority (SCHEDULING.md section 4, who borrows in a queue)."""
        held = 0
        for alloc in self.running.values():
            if alloc.queue != queue or alloc.flavor != flavor or alloc.started > t - EPS:
                continue
            cls = self.class_of(self.jobs[alloc.job], (flavor,))
            if cls.preemptible and cls.can_borrow and cls.priority < priority:
                held += sum(alloc.placement.values())
        return held

    def check_cohorts(self, t: float, queue: str, flavor: str, what: str) -> None:
        """Every cohort from the queue's up to the root within its limit (section 2a)."""
        for level in self.tree.levels(queue, flavor, self.queue_used):
            if level.limit is None or level.used <= level.limit:
                continue
            if level.limit == level.capacity:
                problem = f"pool of {flavor} exceeded: {level.used} used of {level.capacity}"
            else:
                problem = (
                    f"of {flavor} uses {level.used}, above its capacity {level.capacity} plus "
                    f"its borrowing limit ({level.limit})"
                )
            self.fail(t, what, f"cohort {level.cohort} {problem}")

    # -- stops ------------------------------------------------------------------------------

    def stop(self, t: float, job: JobSpec) -> Alloc | None:
        alloc = self.running.pop(job.name, None)
        if alloc is not None:
            self.stopping.append((t + self.grace(job), alloc))
        return alloc

    def preempt(self, t: float, job: JobSpec, event: Mapping[str, Any], what: str) -> None:
        reason = event.get("reason")
        alloc = self.running.get(job.name)
        if reason in PROTECTED_REASONS:  # the report counts the scheduler's own preemptions
            self.history[job.name].preemptions += 1
            self.preempt_count += 1
        if alloc is None:
            self.fail(t, what, "job is not running")
            return
        if reason not in STOP_REASONS:
            self.fail(t, what, f"unknown reason {reason!r}")
        self.check_runtime(t, job, alloc, what)
        if reason in PROTECTED_REASONS:
            check_victim(self, t, job, alloc, event, str(reason), what)
        by = event.get("by")
        if isinstance(by, str):
            self.held_by[job.name] = by
        self.swaps.stopped(job, alloc, str(reason), by if isinstance(by, str) else None)
        self.conservation.preempted(t, job.name, by if isinstance(by, str) else None)
        if isinstance(by, str) and self.grace(job) <= 0:
            # free at once in the report, but held for a preemptor that waits for others
            self.conservation.shrunk(by, job.queue, alloc.flavor, alloc.placement)
        self.stop(t, job)

    def started_in_time(self, name: str, t: float, deadline: float, last_t: float) -> bool:
        """Whether ``name`` started between ``t`` and ``deadline``, or is excused: cancelled by
        then, the replay ended first, or a node failed or was cordoned meanwhile (which may take
        the room away)."""
        history = self.history[name]
        started = any(t - EPS <= at <= deadline + EPS for at in history.admits)
        cancelled = history.cancelled is not None and history.cancelled <= deadline + EPS
        ended = last_t < deadline or (
            self.scenario.until is not None and self.scenario.until < deadline
        )
        disturbed = any(
            t - EPS <= e.at <= deadline + EPS and e.action in ("fail", "cordon", "drain")
            for e in self.scenario.events
        )
        return started or cancelled or ended or disturbed

    def check_runtime(self, t: float, job: JobSpec, alloc: Alloc, what: str) -> None:
        limit = self.classes[job.service_class].max_runtime
        if limit is not None and t - alloc.started > limit + self.scenario.cycle_interval + EPS:
            self.fail(
                t, what, f"ran {fmt(t - alloc.started)} s, past its class max_runtime "
                f"of {fmt(limit)} s"
            )  # fmt: skip

    def finish(self, t: float, job: JobSpec, what: str) -> None:
        alloc = self.running.pop(job.name, None)
        if alloc is not None:
            self.give(alloc)
        history = self.history[job.name]
        if history.finished is not None:
            self.fail(t, what, "job finished twice")
        history.finished = t
        if alloc is None:
            self.fail(t, what, "job is not running")
            return
        self.check_runtime(t, job, alloc, what)
        simple = job.min_workers is None and job.checkpoint_interval is None
        if simple and job.duration is not None and history.last_admit is not None:
            ran = t - history.last_admit
            if abs(ran - job.duration) > EPS:
                self.fail(t, what, f"ran {fmt(ran)} s, but its duration is {fmt(job.duration)}")

    def end(self, t: float, job: JobSpec, kind: str) -> None:
        history = self.history[job.name]
        if kind == "fail":
            history.failed = t
        else:
            history.cancelled = t
            self.conservation.started(job.name)  # a waiting preemptor no longer holds anything
        self.stop(t, job)
