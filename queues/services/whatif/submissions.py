"""The last N days of real submissions as the simulator's jobs (read-only).

Each job submitted in the window keeps its submission time, queue, class, size (workers x
gpus_per_worker, elastic minimum and topology), acceptable flavors in their order, and runs for
what it really ran: ``started_at`` to ``finished_at`` of its last run (an earlier run cut short
by a preemption is left aside). A job still pending, admitted, running or preempted runs for its
estimated runtime, else its class's maximum, else the platform's default (the live snapshot's
``default_runtime``), all in wall-clock seconds as the live cycle plans them
(``queues.services.clock``). A job that ended without ever starting (cancelled or failed while
pending) is left out: it used nothing.

Jobs submitted before the window that still held GPUs at its start are *carried in*: submitted at
the window's start with what was left of their run, so the replay does not begin on an empty
cluster. They take GPUs in both runs but their waits are not counted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from gpusched.sim.scenario import JobSpec, TopologySpec
from queues.models import Cluster, Job, JobFlavor, Queue, ServiceClass
from queues.services import clock
from queues.services.snapshot import queue_key

COLUMNS = (
    "pk", "state", "queue_id", "service_class_id", "workers",
    "min_workers", "gpus_per_worker", "topology_level", "topology_mode", "estimated_runtime",
    "submitted_at", "started_at", "finished_at", "cluster_id",
)  # fmt: skip
ENDED = (Job.State.SUCCEEDED, Job.State.FAILED, Job.State.CANCELLED)


@dataclass(frozen=True)
class Submissions:
    jobs: tuple[JobSpec, ...]
    carried: frozenset[str]  # names of the jobs carried in from before the window


def read_submissions(start: datetime, now: datetime, default_runtime: float) -> Submissions:
    """The jobs of ``[start, now)`` (and those carried in at ``start``) as ``JobSpec`` values
    named by their primary key. ``default_runtime`` is in wall seconds (the snapshot's)."""
    window = Q(submitted_at__gte=start, submitted_at__lt=now)
    holding_at_start = Q(submitted_at__lt=start, started_at__lt=start) & (
        Q(finished_at__isnull=True) | Q(finished_at__gt=start)
    )
    rows = list(
        Job.objects.filter(window | holding_at_start).order_by("submitted_at", "pk")
        .values_list(*COLUMNS)
    )  # fmt: skip
    flavors: dict[int, list[str]] = defaultdict(list)
    links = JobFlavor.objects.filter(job_id__in=[row[0] for row in rows]).order_by("job_id", "rank")
    for job_id, name in links.values_list("job_id", "flavor__name"):
        flavors[job_id].append(name)
    classes = {c.pk: c for c in ServiceClass.objects.all()}
    queues = {q.pk: queue_key(q) for q in Queue.objects.select_related("team")}
    drivers = dict(Cluster.objects.values_list("pk", "driver"))
    pending_scale = clock.pending_scale(drivers.values())

    jobs: list[JobSpec] = []
    carried: set[str] = set()
    for (
        pk, state, queue_id, class_id, workers, min_workers, per_worker, level, mode,
        estimate, submitted, started, finished, cluster_id,
    ) in rows:  # fmt: skip
        if state in ENDED and started is None:
            continue  # never ran: it used nothing
        scale = clock.cluster_scale(drivers[cluster_id]) if cluster_id in drivers else pending_scale
        if state in ENDED and finished is not None and started is not None:
            runtime = max(1.0, (finished - started).total_seconds())
        else:
            job_seconds = estimate if estimate is not None else classes[class_id].max_runtime
            runtime = clock.wall_seconds(job_seconds, scale) or default_runtime
        submit_at = submitted.timestamp()
        if submitted < start:
            assert started is not None
            runtime -= (start - started).total_seconds()
            submit_at = start.timestamp()
            carried.add(str(pk))
        jobs.append(
            JobSpec(
                name=str(pk),
                queue=queues[queue_id],
                service_class=classes[class_id].name,
                submit_at=submit_at,
                workers=workers,
                gpus_per_worker=per_worker,
                flavors=tuple(flavors[pk]),
                duration=max(1.0, runtime),
                estimated_runtime=clock.wall_seconds(estimate, scale),
                min_workers=min_workers if min_workers is not None and min_workers < workers
                else None,
                topology=TopologySpec(level, mode == Job.TopologyMode.REQUIRED) if level else None,
            )
        )  # fmt: skip
    return Submissions(jobs=tuple(j for j in jobs if j.flavors), carried=frozenset(carried))
