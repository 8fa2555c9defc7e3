"""What ``/metrics`` reports, read from the database at scrape time; both the platform's own
families (queues/metrics.py) and the Kueue-named ones (queues/kueue_metrics.py) are built from
these same reads, so the two carry the same numbers by construction."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from gpusched.engine.explain import BEHIND_RESERVATION, HEAD_OF_LINE, QUOTA_HELD
from queues.models import Job, JobRuntime, MetricCounter, Queue, Quota

_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

# Pending jobs waiting only for their turn (Kueue's "active": in the admission queue); every
# other pending job was tried by a cycle and does not fit yet (Kueue's "inadmissible").
WAITING_THEIR_TURN = frozenset({"", HEAD_OF_LINE, BEHIND_RESERVATION, QUOTA_HELD})


def labels_of(text: str) -> dict[str, str]:
    """``queue="a/b",reason="x"`` as a dict (MetricCounter.labels)."""
    return {
        key: value.replace('\\"', '"').replace("\\\\", "\\") for key, value in _LABEL.findall(text)
    }


def queue_name(queue: Queue) -> str:
    return f"{queue.team.name}/{queue.name}"


@dataclass(frozen=True)
class QueueInfo:
    name: str  # "<team>/<queue>": the label of both families
    cohort: str  # "" without one (as Kueue reports a ClusterQueue without cohort)
    is_open: bool
    decayed_usage: float


@dataclass(frozen=True)
class QuotaInfo:
    queue: str
    flavor: str
    resource: str  # the flavor's Kubernetes resource, e.g. nvidia.com/gpu
    nominal: int
    borrowing_limit: int | None  # None: no limit
    lending_limit: int | None


def queues() -> list[QueueInfo]:
    return [
        QueueInfo(queue_name(q), q.cohort.name if q.cohort else "", q.is_open, q.decayed_usage)
        for q in Queue.objects.select_related("team", "cohort").order_by("team__name", "name")
    ]


def quotas() -> dict[tuple[str, str], QuotaInfo]:
    """(queue, flavor) -> its quota."""
    out = {}
    for quota in Quota.objects.select_related("queue__team", "flavor"):
        name = queue_name(quota.queue)
        out[(name, quota.flavor.name)] = QuotaInfo(
            name,
            quota.flavor.name,
            quota.flavor.resource,
            quota.nominal,
            quota.borrowing_limit,
            quota.lending_limit,
        )
    return out


def usage() -> tuple[dict[tuple[str, str], int], dict[str, str]]:
    """(queue, flavor) -> units held by admitted, running and stopping jobs; and the resource of
    each flavor seen."""
    held: dict[tuple[str, str], int] = defaultdict(int)
    resources: dict[str, str] = {}
    releasing = JobRuntime.objects.filter(release_at__gt=timezone.now()).values("job_id")
    holding = Job.objects.filter(
        Q(state__in=["admitted", "running", "preempted"]) | Q(pk__in=releasing)
    ).select_related("queue__team", "runtime__flavor")
    for job in holding:
        flavor = getattr(getattr(job, "runtime", None), "flavor", None)
        if flavor is None:
            continue
        workers = sum(int(c) for c in job.placement.values())
        held[(queue_name(job.queue), flavor.name)] += workers * job.gpus_per_worker
        resources[flavor.name] = flavor.resource
    return dict(held), resources


@dataclass
class Workloads:
    pending_active: int = 0  # waiting for their turn
    pending_inadmissible: int = 0  # tried, do not fit yet
    admitted: int = 0
    running: int = 0

    @property
    def pending(self) -> int:
        return self.pending_active + self.pending_inadmissible


def workloads(names: list[str]) -> dict[str, Workloads]:
    """Per queue (every one of ``names``, with zeros): pending, admitted and running jobs."""
    out = {name: Workloads() for name in names}
    rows = (
        Job.objects.filter(state__in=["pending", "admitted", "running"])
        .values("queue__team__name", "queue__name", "state", "runtime__pending_reason")
        .annotate(n=Count("pk"))
    )
    for row in rows:
        counts = out.setdefault(f"{row['queue__team__name']}/{row['queue__name']}", Workloads())
        if row["state"] == "pending":
            if (row["runtime__pending_reason"] or "") in WAITING_THEIR_TURN:
                counts.pending_active += row["n"]
            else:
                counts.pending_inadmissible += row["n"]
        elif row["state"] == "admitted":
            counts.admitted += row["n"]
        else:
            counts.running += row["n"]
    return out


def counters() -> list[tuple[str, dict[str, str], float]]:
    """Every ``MetricCounter``: (name, labels, value)."""
    return [(row.name, labels_of(row.labels), row.value) for row in MetricCounter.objects.all()]
