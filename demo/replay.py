"""The demo's month of history, decided by the pure engine's simulator (no database inside).

``world_of(snapshot)`` takes the platform as the live cycle sees it (flavors, nodes, service
classes, queues with their quotas); ``scenario_of`` adds the drawn job requests; and
``HistorySimulator`` replays the scenario in simulated time through the same engine the live
cycle runs (``gpusched.sim.simulate``), keeping per job the timeline the live services
would have written: submitted, pending (when its reason changes), admitted, started, preempted,
requeued, failed, succeeded, scaled, each with the engine's decision behind it. The simulated
cluster's worker failures are drawn as its live driver draws them
(``queues.clusters.simulated.run_outcome``): a failed run requeues its gang, and the third failure
fails the job (``queues.services.observe.MAX_FAILURES``).

Unlike the live platform, where a started job is seen running at the next cycle, a replayed job
starts the instant it is admitted (and a job requeued may restart in the same instant).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from demo.workload import JobRequest, estimated_runtime
from gpusched.engine.explain import PendingInfo
from gpusched.engine.model import Admit, CycleResult, Scale, Snapshot, Stop
from gpusched.sim.scenario import (
    ClusterSpec,
    CohortSpec,
    EventSpec,
    FlavorSpec,
    JobSpec,
    NodeSpec,
    QueueSpec,
    QuotaSpec,
    Scenario,
    ServiceClassSpec,
)
from gpusched.sim.simulate import FINISH, TICK, SimJob, Simulator
from queues.clusters.simulated import run_outcome
from queues.models import JobEvent
from queues.services.observe import MAX_FAILURES

Kind = JobEvent.Kind

FAIL = TICK + 1  # an event kind of the replay's own: a worker of the run fails
WORKER_FAILURE = "worker-failure"


@dataclass(frozen=True)
class World:
    """What the engine knows of the platform besides the jobs, as scenario specs."""

    flavors: tuple[FlavorSpec, ...]
    clusters: tuple[ClusterSpec, ...]
    service_classes: tuple[ServiceClassSpec, ...]
    queues: tuple[QueueSpec, ...]
    topology_levels: tuple[str, ...]
    half_life: float
    default_runtime: float
    unavailable: tuple[tuple[str, str], ...] = ()  # (node, "fail" or "cordon") from the start
    cohorts: tuple[CohortSpec, ...] = ()  # the cohort tree (docs/SCHEDULING.md section 2a)


def world_of(snapshot: Snapshot, scale: float = 1.0) -> World:
    """The world of a live snapshot (``queues.services.snapshot.build_snapshot``): the replay
    sees the platform exactly as the live cycle does, on the jobs' own clock: the snapshot's
    class durations and default runtime, in wall seconds (``scale`` wall seconds per job
    second, queues/services/clock.py), are turned back into job seconds."""

    def job_seconds(wall: float) -> float:
        return wall / scale

    unavailable = tuple(
        (node.name, "fail" if node.failed else "cordon")
        for cluster in snapshot.clusters
        for node in cluster.nodes
        if node.failed or not node.schedulable
    )
    return World(
        flavors=tuple(FlavorSpec(f.name, f.resource, f.gpu_equivalent) for f in snapshot.flavors),
        clusters=tuple(
            ClusterSpec(c.name, tuple(NodeSpec(n.name, n.capacity, n.labels) for n in c.nodes))
            for c in snapshot.clusters
        ),
        service_classes=tuple(
            ServiceClassSpec(
                name=c.name,
                priority=c.priority,
                preemptible=c.preemptible,
                can_borrow=c.can_borrow,
                min_runtime=job_seconds(c.min_runtime),
                grace_period=job_seconds(c.grace_period),
                max_runtime=None if c.max_runtime is None else job_seconds(c.max_runtime),
                preemption_protection=job_seconds(c.preemption_protection),
            )
            for c in snapshot.service_classes
        ),
        queues=tuple(
            QueueSpec(
                name=q.name,
                team=q.team,
                quotas={
                    f: QuotaSpec(v.nominal, v.borrowing_limit, v.lending_limit)
                    for f, v in q.quotas.items()
                },
                cohort=q.cohort,
                weight=q.weight,
            )
            for q in snapshot.queues
        ),
        topology_levels=snapshot.topology_levels,
        half_life=snapshot.half_life,
        default_runtime=job_seconds(snapshot.default_runtime),
        unavailable=unavailable,
        cohorts=tuple(
            CohortSpec(
                name=c.name,
                parent=c.parent,
                quotas={
                    f: QuotaSpec(v.nominal, v.borrowing_limit, v.lending_limit)
                    for f, v in c.quotas.items()
                },
                weight=c.weight,
            )
            for c in snapshot.cohorts
        ),
    )


@dataclass
class Moment:
    """One entry of a job's timeline: a ``JobEvent`` to be (``kind`` is the event's kind)."""

    at: float
    kind: str
    order: int = 0  # recording order: moments of one instant keep it
    admit: Admit | None = None  # admitted
    stop: Stop | None = None  # preempted, requeued or failed by the engine
    scale: Scale | None = None  # scaled
    workers_before: int = 0  # scaled
    info: PendingInfo | None = None  # pending
    nodes: tuple[str, ...] = ()  # started; failed or requeued after a worker failure
    workers: int = 0  # started
    failures: int = 0  # a worker failure: the job's count of them
    failed_node: str = ""  # a worker failure: the node of worker 0


@dataclass
class Run:
    """The run in progress when the replay ends (for the simulated cluster's workload row)."""

    started: float
    seconds: float  # simulated seconds until it ends
    fails: bool


@dataclass
class Story:
    """Everything the replay learned about one job."""

    moments: list[Moment] = field(default_factory=list)
    requeues: int = 0  # moves to preempted: the live Job.preemption_count, the run's attempt
    failures: int = 0
    reason: str = ""  # the pending reason last recorded
    info: PendingInfo | None = None  # the latest explanation while pending
    admit: Admit | None = None  # the latest admission
    placement: dict[str, int] = field(default_factory=dict)  # units per node, latest
    stop: Stop | None = None  # the latest stop
    run: Run | None = None  # the run on the cluster, until it ends or is stopped


@dataclass
class CycleRecord:
    at: float
    seconds: float  # in the engine
    counts: Counter[str]
    pending: int = 0


def scenario_of(
    world: World,
    requests: list[tuple[float, JobRequest]],
    start: float,
    until: float,
    cycle_interval: float,
) -> Scenario:
    """The replay's scenario from ``start`` to ``until``: job ``i`` is ``requests[i]``,
    submitted at its time."""
    jobs = tuple(
        JobSpec(
            name=str(index),
            queue=f"{request.team}/{request.queue}",
            service_class=request.service_class,
            submit_at=at,
            workers=request.workers,
            gpus_per_worker=request.gpus_per_worker,
            flavors=request.flavors,
            duration=float(request.runtime_seconds),
            estimated_runtime=float(estimated_runtime(request)),
        )
        for index, (at, request) in enumerate(requests)
    )
    return Scenario(
        name="demo history",
        cycle_interval=cycle_interval,
        flavors=world.flavors,
        clusters=world.clusters,
        service_classes=world.service_classes,
        queues=world.queues,
        jobs=jobs,
        events=tuple(EventSpec(start, action, node=node) for node, action in world.unavailable),
        topology_levels=world.topology_levels,
        until=until,
        half_life=world.half_life,
        default_runtime=world.default_runtime,
        cohorts=world.cohorts,
    )


class HistorySimulator(Simulator):
    """The simulator, keeping a ``Story`` per job and a ``CycleRecord`` per cycle."""

    def __init__(self, scenario: Scenario, failure_rate: float) -> None:
        super().__init__(scenario, explain_pending=True)
        self.failure_rate = failure_rate
        self.stories: dict[str, Story] = {job.name: Story() for job in scenario.jobs}
        self.cycles: list[CycleRecord] = []
        self.counts: Counter[str] = Counter()  # what happened since the last cycle
        self.recorded = 0

    def note(self, name: str, moment: Moment) -> None:
        moment.order = self.recorded = self.recorded + 1
        self.stories[name].moments.append(moment)
        if moment.kind != Kind.PENDING:  # a cycle reports how many wait, not their explanations
            self.counts[moment.kind] += 1

    # -- the engine's decisions ------------------------------------------------------------
    def decided(self, result: CycleResult, t: float, seconds: float) -> None:
        for stop in result.stops:
            self._stopped(self.jobs[stop.job], stop, t)
        for scale in result.scales:
            job = self.jobs[scale.job]
            self.stories[scale.job].placement = dict(scale.placement)
            self.note(scale.job, Moment(t, Kind.SCALED, scale=scale, workers_before=job.workers))
        for admit in result.admits:
            story = self.stories[admit.job]
            story.admit, story.reason, story.info = admit, "", None
            story.placement = dict(admit.placement)
            self.note(admit.job, Moment(t, Kind.ADMITTED, admit=admit))
        for name, info in result.pending.items():
            story = self.stories[name]
            story.info = info
            if info.reason != story.reason:
                story.reason = info.reason
                self.note(name, Moment(t, Kind.PENDING, info=info))
        if result.reservations:
            self.counts["reserved"] += len(result.reservations)
        self.cycles.append(CycleRecord(t, seconds, self.counts, len(result.pending)))
        self.counts = Counter()

    def _stopped(self, job: SimJob, stop: Stop, t: float) -> None:
        story = self.stories[stop.job]
        story.stop, story.run = stop, None
        if not stop.requeue:
            kind = Kind.FAILED
        else:
            story.requeues += 1
            stopping = stop.release_at > t and job.state != "starting"
            kind = Kind.PREEMPTED if stopping else Kind.REQUEUED
        self.note(stop.job, Moment(t, kind, stop=stop))

    # -- what the cluster does -------------------------------------------------------------
    def start(self, job: SimJob, t: float) -> None:
        super().start(job, t)
        name = job.spec.name
        story = self.stories[name]
        seconds, fails = run_outcome(
            f"demo-history-{name}", story.requeues, job.remaining or 0.0, self.failure_rate
        )
        story.run = Run(started=t, seconds=seconds, fails=fails)
        nodes = tuple(sorted(job.placement))
        self.note(name, Moment(t, Kind.STARTED, nodes=nodes, workers=job.workers))
        if fails:
            self.push(t + seconds, FAIL, name, job.version)

    def release(self, job: SimJob, t: float) -> None:
        story = self.stories[job.spec.name]
        back = job.state == "stopping" and job.requeue and job.release_at is not None
        if back and story.moments and story.moments[-1].kind == Kind.PREEMPTED:
            self.note(job.spec.name, Moment(t, Kind.REQUEUED))  # its grace period is over
        super().release(job, t)

    def handle(self, kind: int, name: str, version: int, t: float) -> bool:
        if kind in (FAIL, FINISH):
            job = self.jobs[name]
            if version != job.version or job.state != "running":
                return False  # superseded (preempted, restarted, ...)
            if kind == FAIL:
                return self._worker_failed(job, t)
            self.stories[name].run = None
            self.note(name, Moment(t, Kind.SUCCEEDED))
        return super().handle(kind, name, version, t)

    def _worker_failed(self, job: SimJob, t: float) -> bool:
        name = job.spec.name
        story = self.stories[name]
        story.failures += 1
        story.run = None
        node = first_worker_node(job.placement, job.spec.gpus_per_worker)
        requeue = story.failures < MAX_FAILURES
        kind = Kind.REQUEUED if requeue else Kind.FAILED
        if requeue:
            story.requeues += 1
        self.note(name, Moment(t, kind, failures=story.failures, failed_node=node))
        self.stop(job, t, WORKER_FAILURE, None, t, requeue)
        return True


def first_worker_node(placement: dict[str, int], per_worker: int) -> str:
    """The node of worker 0 (the one a failing simulated run reports): the first by name."""
    return min((n for n, units in placement.items() if units >= per_worker), default="")
