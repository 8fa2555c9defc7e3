"""Write a replayed history (``demo.replay.HistorySimulator``) to the database, in bulk.

The rows are those the live services would have written over the same month: ``Job`` rows in
their final state and placement, their acceptable flavors, ``JobRuntime`` rows, the ``JobEvent``
timeline (built by ``queues.services.events``, as the live services build it), the simulated
cluster's ``SimulatedWorkload`` rows of the work still on it (so the live demo carries on at
``SIMULATION_SPEED``), the queues' decayed usage, a ``CycleRun`` per replayed cycle and the
metric counters. Everything derived from these (ledger, statements, dashboards, budget) is left
to the real code (``demo.history``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model

from demo.replay import HistorySimulator, Moment, Story
from demo.submit import IMAGE, command_of
from demo.workload import JobRequest, estimated_runtime
from gpusched.sim.simulate import SimJob
from queues.clusters.simulated import FAILURE_MESSAGE
from queues.models import (
    Cluster,
    CycleRun,
    Flavor,
    Job,
    JobEvent,
    JobFlavor,
    JobRuntime,
    Queue,
    ServiceClass,
    SimulatedWorkload,
)
from queues.services import counters, events, messages
from queues.services.effects import worker_layout
from queues.services.messages import when
from queues.services.observe import MAX_FAILURES
from queues.services.report import CycleReport
from queues.services.snapshot import queue_key
from queues.services.transitions import job_label

WORKER = "seed_demo --history"
BATCH = 500

# the simulator's job states -> the job's state in the database
ENDED = {"finished": Job.State.SUCCEEDED, "failed": Job.State.FAILED}
HOLDING = {"starting": Job.State.ADMITTED, "running": Job.State.RUNNING}
Kind = JobEvent.Kind


@dataclass
class Lookups:
    """The demo world's rows, by the names the replay uses."""

    users: dict[str, Any]
    queues: dict[str, Queue]
    classes: dict[str, ServiceClass]
    flavors: dict[str, Flavor]
    clusters: dict[str, Cluster]

    @classmethod
    def load(cls) -> Lookups:
        return cls(
            users={u.username: u for u in get_user_model().objects.all()},
            queues={queue_key(q): q for q in Queue.objects.select_related("team", "cohort")},
            classes={c.name: c for c in ServiceClass.objects.all()},
            flavors={f.name: f for f in Flavor.objects.all()},
            clusters={c.name: c for c in Cluster.objects.all()},
        )


class HistoryWriter:
    def __init__(
        self,
        sim: HistorySimulator,
        requests: Sequence[tuple[datetime, JobRequest]],
        now: datetime,
        speed: float,
    ) -> None:
        self.sim = sim
        self.requests = requests
        self.now = now
        self.speed = speed
        self.world = Lookups.load()
        self.jobs: list[Job] = []  # job i of the replay is self.jobs[i]

    def write(self) -> None:
        self._jobs()
        self._flavors()
        self._runtimes()
        self._events()
        self._workloads()
        self._queues()
        self._cycles()

    # -- helpers -------------------------------------------------------------------------------
    def job(self, name: str | None) -> Job | None:
        return self.jobs[int(name)] if name is not None else None

    def label(self, name: str | None) -> str:
        job = self.job(name)
        return job_label(job) if job is not None else "an unknown job"

    def pk(self, name: str | None) -> str | None:
        job = self.job(name)
        return str(job.pk) if job is not None else None

    def state(self, sim_job: SimJob, story: Story) -> str:
        if sim_job.state in ENDED:
            return ENDED[sim_job.state]
        if sim_job.state in HOLDING:
            return HOLDING[sim_job.state]
        if sim_job.state == "stopping":
            stop = story.stop
            return Job.State.PREEMPTED if stop is None or stop.requeue else Job.State.FAILED
        return Job.State.PENDING

    # -- jobs ----------------------------------------------------------------------------------
    def _jobs(self) -> None:
        rows = []
        for index, (at, request) in enumerate(self.requests):
            name = str(index)
            sim_job, story = self.sim.jobs[name], self.sim.stories[name]
            state = self.state(sim_job, story)
            job = Job(
                owner=self.world.users[request.user],
                queue=self.world.queues[f"{request.team}/{request.queue}"],
                service_class=self.world.classes[request.service_class],
                name=request.name,
                image=IMAGE,
                command=command_of(request),
                workers=request.workers,
                gpus_per_worker=request.gpus_per_worker,
                estimated_runtime=estimated_runtime(request),
                duration_hint=request.runtime_seconds,
                state=state,
                submitted_at=at,
                preemption_count=story.requeues,
            )
            if state != Job.State.PENDING and story.admit is not None:
                self._placed(job, story, sim_job, state)
            rows.append(job)
        self.jobs = Job.objects.bulk_create(rows, batch_size=BATCH)

    def _placed(self, job: Job, story: Story, sim_job: SimJob, state: str) -> None:
        """Where and since when the job's latest admission put it (kept once it ended)."""
        admit = story.admit
        assert admit is not None
        admitted = last(story, Kind.ADMITTED)
        started = last(story, Kind.STARTED)
        job.admitted_at = when(admitted.at) if admitted is not None else None
        if started is not None and admitted is not None and started.at >= admitted.at:
            job.started_at = when(started.at)
        job.cluster = self.world.clusters[admit.cluster]
        g = job.gpus_per_worker
        job.placement = {node: units // g for node, units in sorted(story.placement.items())}
        job.current_workers = sum(job.placement.values())
        if state in Job.TERMINAL_STATES:
            job.current_workers = 0
            job.finished_at = when(sim_job.ended_at if sim_job.ended_at is not None else 0.0)

    def _flavors(self) -> None:
        links = [
            JobFlavor(job=job, flavor=self.world.flavors[name], rank=rank)
            for job, (_, request) in zip(self.jobs, self.requests, strict=True)
            for rank, name in enumerate(request.flavors)
        ]
        JobFlavor.objects.bulk_create(links, batch_size=BATCH)

    def _runtimes(self) -> None:
        rows = []
        for index, job in enumerate(self.jobs):
            story = self.sim.stories[str(index)]
            admit = story.admit
            latest = next((m for m in reversed(story.moments) if m.kind != Kind.PENDING), None)
            runtime = JobRuntime(job=job, failures=story.failures)
            if admit is not None:
                runtime.flavor = self.world.flavors[admit.flavor]
                runtime.borrowing = admit.borrowing
                runtime.start_at = when(admit.start_at)
            if job.placement:
                layout = worker_layout([], job.placement)
                runtime.worker_nodes = [list(w) for w in layout]
            if job.state == Job.State.PENDING:
                runtime.worker_nodes = []
                if latest is not None and latest.kind == Kind.REQUEUED and latest.stop is not None:
                    runtime.stop_reason = latest.stop.reason  # requeued at once by the engine
                if story.info is not None:
                    message, estimate = messages.pending(story.info, self.label)
                    runtime.pending_reason = story.info.reason
                    runtime.pending_message = message
                    runtime.estimated_start = estimate
                    runtime.pending_position = story.info.position
                    runtime.pending_within_nominal = story.info.within_nominal
            elif latest is not None and latest.stop is not None:  # stopped by the engine
                stop = latest.stop
                runtime.stop_reason = stop.reason
                runtime.release_at = when(stop.release_at)
                if job.state == Job.State.PREEMPTED:
                    runtime.stop_by = self.job(stop.by)
            rows.append(runtime)
        JobRuntime.objects.bulk_create(rows, batch_size=BATCH)

    # -- the timeline --------------------------------------------------------------------------
    def _events(self) -> None:
        timeline: list[tuple[float, int, JobEvent]] = []
        for index, job in enumerate(self.jobs):
            submitted = self.submitted(job, self.requests[index][1]).row(job, job.submitted_at)
            timeline.append((job.submitted_at.timestamp(), 0, submitted))
            for moment in self.sim.stories[str(index)].moments:
                at = when(moment.at)
                timeline.append((moment.at, moment.order, self.said(job, moment, at).row(job, at)))
        timeline.sort(key=lambda item: item[:2])
        JobEvent.objects.bulk_create([item[2] for item in timeline], batch_size=BATCH)

    def submitted(self, job: Job, request: JobRequest) -> events.Said:
        """The submission, as ``queues.services.submit_job`` writes it."""
        return events.submitted(
            queue=str(job.queue),
            owner=request.user,
            workers=job.workers,
            gpus_per_worker=job.gpus_per_worker,
            flavors=request.flavors,
            service_class=request.service_class,
        )

    def said(self, job: Job, moment: Moment, at: datetime) -> events.Said:
        """The moment's event, as the live service that writes it builds it."""
        if moment.info is not None:
            message = messages.pending(moment.info, self.label)[0]
            return events.pending(reason=moment.info.reason, message=message)
        if moment.admit is not None:
            admit = moment.admit
            return events.admitted(
                cluster=admit.cluster,
                flavor=admit.flavor,
                placement=admit.placement,
                workers=admit.workers,
                queue=queue_key(job.queue),
                borrowing=admit.borrowing,
                cohort=job.queue.cohort.name if job.queue.cohort else None,
                start=when(admit.start_at),
                now=at,
            )
        if moment.kind == Kind.STARTED:
            return events.started(workers=moment.workers, nodes=moment.nodes)
        if moment.kind == Kind.SUCCEEDED:
            return events.succeeded()
        if moment.failures:
            detail = messages.worker_detail(0, moment.failed_node, FAILURE_MESSAGE)
            return events.worker_failed(detail=detail, failures=moment.failures, limit=MAX_FAILURES)
        if moment.stop is not None:
            return self._stopped(job, moment, at)
        if moment.scale is not None:
            scale = moment.scale
            return events.scaled(
                before=moment.workers_before,
                workers=scale.workers,
                by=self.label(scale.by),
                reason=scale.reason,
            )
        return events.back_in_queue(submitted_at=job.submitted_at)  # after its grace period

    def _stopped(self, job: Job, moment: Moment, at: datetime) -> events.Said:
        stop = moment.stop
        assert stop is not None
        preemptor = self.job(stop.by)
        cls = preemptor.service_class if preemptor is not None else None
        return events.stopped(
            moment.kind,
            reason=stop.reason,
            by=self.pk(stop.by),
            by_label=self.label(stop.by),
            now=at,
            release=when(stop.release_at),
            their_queue=queue_key(preemptor.queue) if preemptor is not None else "?",
            mine=queue_key(job.queue),
            preemptor_class=(cls.name, cls.priority) if cls is not None else None,
            service_class=job.service_class.name,
            max_runtime=job.service_class.max_runtime,
        )

    # -- the simulated cluster -----------------------------------------------------------------
    def _workloads(self) -> None:
        """The workers still on the simulated cluster, on the live demo's clock: what remains
        of each run (and of each stop's grace period) still remains, in simulated time."""
        rows = []
        for index, job in enumerate(self.jobs):
            if job.state not in (Job.State.RUNNING, Job.State.PREEMPTED) or not job.placement:
                continue
            story = self.sim.stories[str(index)]
            started = last(story, Kind.STARTED)
            if started is None:
                continue
            row = SimulatedWorkload(
                cluster_id=job.cluster_id,
                job_id=str(job.pk),
                team=job.queue.team.name,
                workers=[list(w) for w in worker_layout([], job.placement)],
                launched_at=self._live(when(started.at)),
                run_seconds=float(job.duration_hint or 0),
            )
            if story.run is not None:
                row.run_seconds, row.fails = story.run.seconds, story.run.fails
            stop = story.stop
            if job.state == Job.State.PREEMPTED and stop is not None:
                stopped = last(story, Kind.PREEMPTED)
                row.stop_requested_at = self._live(when(stopped.at if stopped else stop.release_at))
                row.gone_at = self._live(when(stop.release_at))
            rows.append(row)
        SimulatedWorkload.objects.bulk_create(rows, batch_size=BATCH)

    def _live(self, moment: datetime) -> datetime:
        """``moment`` of the replay's simulated clock on the live demo's (``SIMULATION_SPEED``)."""
        return self.now + (moment - self.now) / self.speed

    # -- queues, cycles, counters --------------------------------------------------------------
    def _queues(self) -> None:
        self.sim.advance(self.now.timestamp())
        for key, queue in self.world.queues.items():
            Queue.objects.filter(pk=queue.pk).update(
                decayed_usage=max(0.0, self.sim.decayed.get(key, 0.0)), decayed_usage_at=self.now
            )

    def _cycles(self) -> None:
        """A ``CycleRun`` per replayed cycle (its duration: the engine's), and the counters of
        what the cycles decided. The cycle-duration histogram is left to live cycles: a replayed
        cycle's time in the engine alone is not a live cycle's duration."""
        runs = []
        for record in self.sim.cycles:
            report = CycleReport(now=when(record.at), counts=record.counts, pending=record.pending)
            start = when(record.at)
            runs.append(
                CycleRun(
                    started_at=start,
                    finished_at=start + timedelta(seconds=record.seconds),
                    worker=WORKER,
                    outcome=report.summary(),
                )
            )
        CycleRun.objects.bulk_create(runs, batch_size=BATCH)
        # the counters the live apply increments: engine stops and shrinks, admissions
        preemptions: Counter[str] = Counter()
        admitted: Counter[str] = Counter()
        for index, job in enumerate(self.jobs):
            for moment in self.sim.stories[str(index)].moments:
                if moment.stop is not None:
                    preemptions[moment.stop.reason] += 1
                elif moment.scale is not None and moment.scale.reason != "grow":
                    preemptions[moment.scale.reason or ""] += 1
                elif moment.admit is not None:
                    admitted[queue_key(job.queue)] += 1
        for reason, count in sorted(preemptions.items()):
            counters.increment("gpuplatform_preemptions_total", count, reason=reason)
        for queue, count in sorted(admitted.items()):
            counters.increment("gpuplatform_admitted_workloads_total", count, queue=queue)


def last(story: Story, kind: str) -> Moment | None:
    """The job's latest moment of ``kind``."""
    return next((m for m in reversed(story.moments) if m.kind == kind), None)
