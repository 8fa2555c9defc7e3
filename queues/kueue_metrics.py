"""The platform's numbers under Kueue's metric names and labels (sigs.k8s.io/kueue
pkg/metrics/metrics.go), so Grafana dashboards and alerts written for Kueue work unchanged.

A platform queue is Kueue's ClusterQueue: ``cluster_queue`` is ``<team>/<queue>`` (the ``queue``
label of the ``gpuplatform_*`` families), ``cohort`` its cohort ("" without one), ``flavor`` the
flavor's name and ``resource`` its Kubernetes resource (``nvidia.com/gpu``,
``nvidia.com/mig-1g.10gb``). Every family is built from the same reads as the platform's own
(queues/metrics_data.py), so the two always agree:

- ``kueue_pending_workloads{cluster_queue,status}``: status ``active`` (waiting for its turn:
  not yet ranked, behind an earlier job or a reservation, or holding quota for one) plus
  ``inadmissible`` (a cycle found it does not fit yet) = ``gpuplatform_pending_workloads``;
- ``kueue_admitted_active_workloads``, ``kueue_reserving_active_workloads``;
- ``kueue_admitted_workloads_total{cluster_queue}`` = ``gpuplatform_admitted_workloads_total``;
- ``kueue_admission_wait_time_seconds{cluster_queue}``: from submission, or the last requeue,
  to admission (Kueue's buckets); recorded by live cycles (``record_admission_waits``);
- ``kueue_evicted_workloads_total{cluster_queue,reason}`` = ``gpuplatform_preemptions_total``
  with Kueue's reasons: ``Preempted`` (reclaim, fair-share, priority), ``NodeFailures``,
  ``Deactivated`` (maximum runtime); ``cluster_queue`` is the preempted job's queue when the
  counter has it, else "";
- ``kueue_cluster_queue_nominal_quota``, ``_borrowing_limit``, ``_lending_limit`` (+Inf: no
  limit, as Kueue reports a nil limit), ``_resource_usage`` and ``_resource_reservation``
  ``{cohort,cluster_queue,flavor,resource}``;
- ``kueue_cluster_queue_status{cluster_queue,status}``: ``active`` (open) or ``pending``
  (closed to new jobs, as a stopped ClusterQueue).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime

from django.db.models import Max
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from queues import metrics_data as data
from queues.models import JobEvent
from queues.services import counters as db_counters

WAIT = "kueue_admission_wait_time_seconds"
WAIT_BUCKETS = (1.0, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240)
"""Kueue's generateExponentialBuckets(14): 1, then 2.5 doubling."""
EVICTION_REASONS = {
    "reclaim": "Preempted",
    "fair-share": "Preempted",
    "priority": "Preempted",
    "node-failure": "NodeFailures",
    "node-drain": "NodeFailures",  # Kueue's reason for workloads evicted off unusable nodes
    "max-runtime": "Deactivated",
}
CQ_STATUSES = ("pending", "active", "terminating")
RESOURCE_LABELS = ["cohort", "cluster_queue", "flavor", "resource"]


def record_admission_waits(moment: datetime) -> None:
    """Observe, for each job the cycle at ``moment`` admitted, the wait since its submission or
    its last requeue. Called by the live cycle in its apply transaction, after the events."""
    admitted = list(
        JobEvent.objects.filter(kind=JobEvent.Kind.ADMITTED, at=moment).values_list(
            "job_id", "job__submitted_at", "job__queue__team__name", "job__queue__name"
        )
    )
    if not admitted:
        return
    requeued = dict(
        JobEvent.objects.filter(
            job_id__in=[row[0] for row in admitted], kind=JobEvent.Kind.REQUEUED, at__lte=moment
        )
        .values("job_id")
        .annotate(last=Max("at"))
        .values_list("job_id", "last")
    )
    buckets: dict[tuple[str, str], int] = defaultdict(int)
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for job_id, submitted, team, name in admitted:
        since = max(submitted, requeued.get(job_id) or submitted)
        wait = max(0.0, (moment - since).total_seconds())
        queue = f"{team}/{name}"
        for bound in WAIT_BUCKETS:
            if wait <= bound:
                buckets[(queue, f"{bound:g}")] += 1
        buckets[(queue, "+Inf")] += 1
        sums[queue] += wait
        counts[queue] += 1
    for (queue, le), n in sorted(buckets.items()):
        db_counters.increment(f"{WAIT}_bucket", n, cluster_queue=queue, le=le)
    for queue in sorted(counts):
        db_counters.increment(f"{WAIT}_sum", sums[queue], cluster_queue=queue)
        db_counters.increment(f"{WAIT}_count", counts[queue], cluster_queue=queue)


def _limit(value: int | None) -> float:
    return math.inf if value is None else float(value)


class KueueCollector:
    """The ``kueue_*`` families, on each collect()."""

    def collect(self) -> Iterator[Metric]:
        queues = data.queues()
        yield from self._queues(queues)
        yield from self._resources(queues)
        counters = data.counters()
        yield from self._counters(counters)
        yield self._wait(counters, [q.name for q in queues])

    def _queues(self, queues: list[data.QueueInfo]) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "kueue_pending_workloads",
            "The number of pending workloads, per 'cluster_queue' and 'status' (active: waiting "
            "for their turn; inadmissible: a cycle found they do not fit yet).",
            labels=["cluster_queue", "status"],
        )
        admitted = GaugeMetricFamily(
            "kueue_admitted_active_workloads",
            "The number of admitted Workloads that are active (admitted or running), per "
            "'cluster_queue'",
            labels=["cluster_queue"],
        )
        reserving = GaugeMetricFamily(
            "kueue_reserving_active_workloads",
            "The number of Workloads that are reserving quota, per 'cluster_queue'",
            labels=["cluster_queue"],
        )
        status = GaugeMetricFamily(
            "kueue_cluster_queue_status",
            "Reports 'cluster_queue' with its 'status' (pending: closed to new jobs, active).",
            labels=["cluster_queue", "status"],
        )
        counts = data.workloads([q.name for q in queues])
        for queue in queues:
            c = counts[queue.name]
            pending.add_metric([queue.name, "active"], c.pending_active)
            pending.add_metric([queue.name, "inadmissible"], c.pending_inadmissible)
            admitted.add_metric([queue.name], c.admitted + c.running)
            reserving.add_metric([queue.name], c.admitted + c.running)
            current = "active" if queue.is_open else "pending"
            for choice in CQ_STATUSES:
                status.add_metric([queue.name, choice], 1.0 if choice == current else 0.0)
        yield from (pending, admitted, reserving, status)

    def _resources(self, queues: list[data.QueueInfo]) -> Iterator[Metric]:
        def family(name: str, doc: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=RESOURCE_LABELS)

        nominal = family(
            "kueue_cluster_queue_nominal_quota",
            "Reports the cluster_queue's resource nominal quota within all the flavors",
        )
        borrowing = family(
            "kueue_cluster_queue_borrowing_limit",
            "Reports the cluster_queue's resource borrowing limit within all the flavors",
        )
        lending = family(
            "kueue_cluster_queue_lending_limit",
            "Reports the cluster_queue's resource lending limit within all the flavors",
        )
        usage = family(
            "kueue_cluster_queue_resource_usage",
            "Reports the cluster_queue's total resource usage within all the flavors",
        )
        reservation = family(
            "kueue_cluster_queue_resource_reservation",
            "Reports the cluster_queue's total resource reservation within all the flavors",
        )
        cohorts = {q.name: q.cohort for q in queues}
        quotas = data.quotas()
        held, resources = data.usage()
        for key in sorted(set(quotas) | set(held)):
            queue, flavor = key
            quota = quotas.get(key)
            resource = quota.resource if quota else resources.get(flavor, "")
            labels = [cohorts.get(queue, ""), queue, flavor, resource]
            nominal.add_metric(labels, quota.nominal if quota else 0)
            if quota is not None:
                borrowing.add_metric(labels, _limit(quota.borrowing_limit))
                lending.add_metric(labels, _limit(quota.lending_limit))
            usage.add_metric(labels, held.get(key, 0))
            reservation.add_metric(labels, held.get(key, 0))
        yield from (nominal, borrowing, lending, usage, reservation)

    def _counters(self, counters: list[tuple[str, dict[str, str], float]]) -> Iterator[Metric]:
        admitted = CounterMetricFamily(
            "kueue_admitted_workloads",
            "The total number of admitted workloads per 'cluster_queue'",
            labels=["cluster_queue"],
        )
        evicted = CounterMetricFamily(
            "kueue_evicted_workloads",
            "The number of evicted workloads per 'cluster_queue' and 'reason' (Preempted: "
            "reclaim, fair share or priority; NodeFailures; Deactivated: maximum runtime).",
            labels=["cluster_queue", "reason"],
        )
        admissions: dict[str, float] = defaultdict(float)
        evictions: dict[tuple[str, str], float] = defaultdict(float)
        for name, labels, value in counters:
            if name == "gpuplatform_admitted_workloads_total":
                admissions[labels.get("queue", "")] += value
            elif name == "gpuplatform_preemptions_total":
                reason = labels.get("reason", "")
                kueue_reason = EVICTION_REASONS.get(reason, reason or "Preempted")
                evictions[(labels.get("queue", ""), kueue_reason)] += value
        for queue in sorted(admissions):
            admitted.add_metric([queue], admissions[queue])
        for queue_reason in sorted(evictions):
            evicted.add_metric(list(queue_reason), evictions[queue_reason])
        yield from (admitted, evicted)

    def _wait(
        self, counters: list[tuple[str, dict[str, str], float]], names: list[str]
    ) -> HistogramMetricFamily:
        histogram = HistogramMetricFamily(
            WAIT,
            "The time between a workload was created or requeued until admission, per "
            "'cluster_queue'",
            labels=["cluster_queue"],
        )
        bounds = [f"{bound:g}" for bound in WAIT_BUCKETS] + ["+Inf"]
        buckets: dict[str, dict[str, float]] = {n: dict.fromkeys(bounds, 0.0) for n in names}
        sums: dict[str, float] = dict.fromkeys(names, 0.0)
        for name, labels, value in counters:
            queue = labels.get("cluster_queue", "")
            if name == f"{WAIT}_bucket":
                buckets.setdefault(queue, dict.fromkeys(bounds, 0.0))[labels.get("le", "+Inf")] = (
                    value
                )
            elif name == f"{WAIT}_sum":
                sums[queue] = value
        for queue in sorted(buckets):
            histogram.add_metric(
                [queue], buckets=list(buckets[queue].items()), sum_value=sums.get(queue, 0.0)
            )
        return histogram
