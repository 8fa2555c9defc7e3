"""Second half of a cycle: write the engine's decisions to the database.

Runs inside the cycle's transaction. Every change is a conditional update on the state the
snapshot saw (an admit applies only to a job still pending, a stop only to one still holding
GPUs), so applying the same decisions twice changes nothing the second time. Each transition
gets a ``JobEvent`` that says why; a pending job's explanation is stored on its runtime row only
when it changes, with an event only when its reason changes.
"""

from __future__ import annotations

from datetime import datetime

from gpusched.engine import model as engine
from gpusched.engine.explain import PendingInfo
from gpusched.engine.fairshare import decay_usage
from queues.models import Cluster, Job, JobEvent, JobRuntime, Queue, ServiceClass
from queues.services import counters, events, messages, rows
from queues.services import effects as fx
from queues.services.messages import clock, when
from queues.services.report import CycleReport
from queues.services.snapshot import LiveSnapshot, queue_key
from queues.services.transitions import move, set_runtime

RUNTIME_FIELDS_ON_PENDING = [
    "pending_reason",
    "pending_message",
    "estimated_start",
    "pending_position",
    "pending_within_nominal",
]

# what an admission writes on the job's runtime row (created if the job has none)
ADMITTED_RUNTIME_FIELDS = [
    "flavor",
    "borrowing",
    "start_at",
    "stop_reason",
    "stop_by",
    "release_at",
    "worker_nodes",
    "repair_attempts",
    "requeue_after",
    *RUNTIME_FIELDS_ON_PENDING,
]


class Applier:
    def __init__(self, live: LiveSnapshot, result: engine.CycleResult, report: CycleReport) -> None:
        self.live = live
        self.now = live.now
        self.report = report
        self.events: list[JobEvent] = []
        self.effects: list[fx.Effect] = []
        self.admits: list[tuple[Job, engine.Admit]] = []
        decided = {d.job for d in (*result.admits, *result.stops, *result.scales)}
        # the jobs decisions change, as model instances (their current rows)
        self.jobs: dict[str, Job] = {
            str(pk): job
            for pk, job in Job.objects.select_related("runtime")
            .in_bulk([int(name) for name in decided])
            .items()
        }
        rows.share_related(
            list(self.jobs.values()),
            queue=Queue.objects.select_related("team", "cohort"),
            service_class=ServiceClass.objects.all(),
            cluster=Cluster.objects.all(),
        )

    def label(self, name: str | None) -> str:
        if name is None:
            return "an unknown job"
        row = self.live.jobs.get(name)
        return row.label if row is not None else f"#{name}"

    # -- stops ---------------------------------------------------------------------------------
    def stop(self, decision: engine.Stop) -> None:
        job = self.jobs.get(decision.job)
        if job is None or job.state not in (Job.State.ADMITTED, Job.State.RUNNING):
            return
        cluster_id = job.cluster_id
        release = when(decision.release_at)
        grace = max(0.0, (release - self.now).total_seconds())
        if not decision.requeue:
            kind = JobEvent.Kind.FAILED
        elif release > self.now:
            kind = JobEvent.Kind.PREEMPTED  # stopping; back in the queue after the grace period
        else:
            kind = JobEvent.Kind.REQUEUED
        said = self._stopped(kind, job, decision, release)  # (before the move clears placement)
        if kind == JobEvent.Kind.FAILED:
            if not move(job, Job.State.FAILED, self.now):
                return
            set_runtime(job.pk, stop_reason=decision.reason, release_at=release)
        else:
            if not move(job, Job.State.PREEMPTED, self.now):
                return
            stop_by = int(decision.by) if decision.by is not None else None
            if kind == JobEvent.Kind.REQUEUED:
                move(job, Job.State.PENDING, self.now)
                set_runtime(
                    job.pk,
                    stop_reason=decision.reason,
                    stop_by=None,
                    release_at=None,
                    worker_nodes=[],
                )
            else:
                set_runtime(
                    job.pk, stop_reason=decision.reason, stop_by_id=stop_by, release_at=release
                )
        counters.increment("gpuplatform_preemptions_total", reason=decision.reason)
        self.effects.append(fx.stop(job, grace, cluster_id))
        self._record(job, said)

    def _stopped(
        self, kind: str, job: Job, decision: engine.Stop, release: datetime
    ) -> events.Said:
        preemptor = self.jobs.get(decision.by or "")
        cls = preemptor.service_class if preemptor is not None else None
        return events.stopped(
            kind,
            reason=decision.reason,
            by=decision.by,
            by_label=self.label(decision.by),
            now=self.now,
            release=release,
            their_queue=queue_key(preemptor.queue) if preemptor is not None else "?",
            mine=queue_key(job.queue),
            preemptor_class=(cls.name, cls.priority) if cls is not None else None,
            failed_nodes=self._lost_nodes(job, decision.reason),
            service_class=job.service_class.name,
            max_runtime=job.service_class.max_runtime,
        )

    def _lost_nodes(self, job: Job, reason: str) -> list[str]:
        """The job's nodes that failed (``node-failure``) or are drained (``node-drain``)."""
        if reason not in ("node-failure", "node-drain"):
            return []
        cluster = job.cluster.name if job.cluster is not None else ""
        lost = {
            n.name
            for c in self.live.snapshot.clusters
            if c.name == cluster
            for n in c.nodes
            if (n.failed if reason == "node-failure" else n.draining)
        }
        return sorted(set(job.placement) & lost)

    # -- scales --------------------------------------------------------------------------------
    def scale(self, decision: engine.Scale) -> None:
        job = self.jobs.get(decision.job)
        if job is None or job.state not in (Job.State.ADMITTED, Job.State.RUNNING):
            return
        g = job.gpus_per_worker
        placement = {node: units // g for node, units in decision.placement.items() if units}
        before = sum(int(c) for c in job.placement.values())
        updated = Job.objects.filter(
            pk=job.pk, state=job.state, current_workers=job.current_workers
        ).update(placement=placement, current_workers=decision.workers)
        if not updated:
            return
        runtime = self._runtime(job)
        previous = [(int(i), str(n)) for i, n in (runtime.worker_nodes if runtime else [])]
        set_runtime(job.pk, worker_nodes=[list(w) for w in fx.worker_layout(previous, placement)])
        job.placement, job.current_workers = placement, decision.workers
        said = events.scaled(
            before=before,
            workers=decision.workers,
            by=self.label(decision.by),
            reason=decision.reason,
        )
        if decision.reason != "grow":
            counters.increment("gpuplatform_preemptions_total", reason=decision.reason or "")
        self.effects.append(fx.scale(job))
        self._record(job, said)

    # -- admissions ----------------------------------------------------------------------------
    def admit(self, decision: engine.Admit) -> None:
        """Note an admission; ``write_admits`` writes them all at once."""
        job = self.jobs.get(decision.job)
        if job is None or job.state != Job.State.PENDING:
            return
        self.admits.append((job, decision))

    def write_admits(self) -> None:
        """Every admission of the cycle in a constant number of queries, whatever their number:
        the jobs still pending are locked and read (one query; a job cancelled meanwhile is
        left out), moved to admitted in two UPDATEs per 500 (queues/services/rows.py), their
        runtime rows written in one upsert per 500, and each queue's admission counter
        incremented once."""
        if not self.admits:
            return
        pending = set(
            Job.objects.select_for_update()
            .filter(pk__in=[job.pk for job, _ in self.admits], state=Job.State.PENDING)
            .order_by("pk")  # locked in one order: no deadlock with another locking writer
            .values_list("pk", flat=True)
        )
        moved: list[Job] = []
        runtimes: list[JobRuntime] = []
        per_queue: dict[str, int] = {}
        fields: set[str] = {"cluster", "placement", "current_workers"}
        for job, decision in self.admits:
            if job.pk not in pending:
                continue
            cluster = self.live.clusters[decision.cluster]
            flavor = self.live.flavors[decision.flavor]
            g = job.gpus_per_worker
            placement = {node: units // g for node, units in sorted(decision.placement.items())}
            fields.update(job.transition_to(Job.State.ADMITTED, now=self.now))
            job.cluster, job.placement = cluster, placement
            job.current_workers = decision.workers
            moved.append(job)
            start = when(decision.start_at)
            layout = fx.worker_layout([], placement)
            runtimes.append(
                JobRuntime(
                    job_id=job.pk,
                    flavor=flavor,
                    borrowing=decision.borrowing,
                    start_at=start,
                    stop_reason="",
                    stop_by=None,
                    release_at=None,
                    worker_nodes=[list(w) for w in layout],
                    repair_attempts=0,  # this launch's own retries (queues/services/gang.py)
                    requeue_after=None,
                    pending_reason="",
                    pending_message="",
                    estimated_start=None,
                    pending_position=None,
                    pending_within_nominal=None,
                )
            )
            queue = queue_key(job.queue)
            said = events.admitted(
                cluster=cluster.name,
                flavor=flavor.name,
                placement=decision.placement,
                workers=decision.workers,
                queue=queue,
                borrowing=decision.borrowing,
                cohort=job.queue.cohort.name if job.queue.cohort else None,
                start=start,
                now=self.now,
            )
            if start <= self.now:
                self.effects.append(fx.launch(job))
            per_queue[queue] = per_queue.get(queue, 0) + 1
            self._record(job, said)
        rows.update_rows(moved, sorted(fields))
        JobRuntime.objects.bulk_create(
            runtimes,
            batch_size=500,
            update_conflicts=True,
            unique_fields=["job"],
            update_fields=ADMITTED_RUNTIME_FIELDS,
        )
        for queue, count in sorted(per_queue.items()):
            counters.increment("gpuplatform_admitted_workloads_total", count, queue=queue)

    def _record(self, job: Job, said: events.Said) -> None:
        self.events.append(events.recorded(job, said, self.now, self.report))

    # -- pending explanations ------------------------------------------------------------------
    def explain(self, result: engine.CycleResult) -> None:
        """Store why each pending job waits and the engine's rank of it in its queue (position,
        within nominal), writing only the rows whose explanation or rank changed."""
        candidates: dict[int, tuple[PendingInfo, str, datetime | None]] = {}
        for name, info in result.pending.items():
            row = self.live.jobs.get(name)
            if row is None or row.state != Job.State.PENDING:
                continue
            message, estimate = messages.pending(info, self.label)
            stored = (
                row.pending_reason or "",
                row.pending_message or "",
                row.pending_position,
                row.pending_within_nominal,
            )
            if stored != (info.reason, message, info.position, info.within_nominal):
                candidates[row.pk] = (info, message, estimate)
        # what the rows hold now (another run may have written the same explanation already)
        current = {
            pk: (reason, message, position, within)
            for pk, reason, message, position, within in JobRuntime.objects.filter(
                job_id__in=list(candidates)
            ).values_list(
                "job_id",
                "pending_reason",
                "pending_message",
                "pending_position",
                "pending_within_nominal",
            )
        }
        changed: list[JobRuntime] = []
        for pk, (info, message, estimate) in candidates.items():
            old_reason, old_message, old_position, old_within = current.get(
                pk, ("", "", None, None)
            )
            if (old_reason, old_message, old_position, old_within) == (
                info.reason,
                message,
                info.position,
                info.within_nominal,
            ):
                continue
            changed.append(
                JobRuntime(
                    job_id=pk,
                    pending_reason=info.reason,
                    pending_message=message,
                    estimated_start=estimate,
                    pending_position=info.position,
                    pending_within_nominal=info.within_nominal,
                )
            )
            if old_reason != info.reason:
                said = events.pending(reason=info.reason, message=message)
                self.events.append(said.row(pk, self.now))
        if changed:
            JobRuntime.objects.bulk_create(
                changed,
                batch_size=500,
                update_conflicts=True,
                unique_fields=["job"],
                update_fields=RUNTIME_FIELDS_ON_PENDING,
            )
        self.report.pending = len(result.pending)

    def reservation(self, reserve: engine.Reserve) -> None:
        nodes = ", ".join(f"{n} ({u})" for n, u in sorted(reserve.nodes.items()))
        self.report.add(
            "reserved",
            f"{self.label(reserve.job)}: {reserve.flavor} on {reserve.cluster} {nodes} from "
            f"{clock(when(reserve.start))} (backfill may use them only for jobs ending earlier)",
        )

    def _runtime(self, job: Job) -> JobRuntime | None:
        try:
            return job.runtime
        except JobRuntime.DoesNotExist:
            return None


def apply_result(
    live: LiveSnapshot, result: engine.CycleResult, report: CycleReport
) -> list[fx.Effect]:
    """Write ``result`` to the database; returns the cluster effects to run after commit."""
    applier = Applier(live, result, report)
    for stop in result.stops:
        applier.stop(stop)
    for scale in result.scales:
        applier.scale(scale)
    for admit in result.admits:
        applier.admit(admit)
    applier.write_admits()
    applier.explain(result)
    for reserve in result.reservations:
        applier.reservation(reserve)
    JobEvent.objects.bulk_create(applier.events, batch_size=500)
    update_decayed_usage(live)
    return applier.effects


def update_decayed_usage(live: LiveSnapshot) -> None:
    """Fold what ran since each queue's last update into its decayed usage ``H(q)``.

    The rate is the queue's GPU-equivalents in use at the snapshot. Conditional on the previous
    update time, so a re-run at the same moment adds nothing.
    """
    snap = live.snapshot
    geq = {f.name: f.gpu_equivalent for f in snap.flavors}
    rate: dict[str, float] = {}
    for job in snap.admitted:
        units = sum(job.placement.values())
        rate[job.queue] = rate.get(job.queue, 0.0) + units * geq.get(job.flavor, 1.0)
    for key, queue in live.queues.items():
        previous = queue.decayed_usage_at
        if previous is None:
            Queue.objects.filter(pk=queue.pk, decayed_usage_at__isnull=True).update(
                decayed_usage_at=live.now
            )
            continue
        elapsed = (live.now - previous).total_seconds()
        if elapsed <= 0:
            continue
        value = decay_usage(queue.decayed_usage, rate.get(key, 0.0), elapsed, snap.half_life)
        Queue.objects.filter(pk=queue.pk, decayed_usage_at=previous).update(
            decayed_usage=max(0.0, value), decayed_usage_at=live.now
        )
