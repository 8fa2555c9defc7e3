"""Prometheus ``/metrics``, named after Kueue's metrics so existing dashboards translate.

Everything is read from the database at scrape time (gauges from the current rows, counters and
the cycle-duration histogram from ``MetricCounter``), so any web process gives the same answer
whichever worker ran the cycles. Set ``METRICS_TOKEN`` to require ``Authorization: Bearer``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from gpuplatform import lockout
from queues.models import Cluster, Job, JobRuntime, MetricCounter, Node, Queue, Quota
from queues.services.cycle import DURATION_BUCKETS

_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
COUNTERS = {
    "gpuplatform_admitted_workloads_total": (
        "Jobs admitted by the scheduling cycle, per queue.",
        ["queue"],
    ),
    "gpuplatform_preemptions_total": (
        "Jobs stopped or shrunk by the cycle, per reason (reclaim, fair-share, priority, "
        "node-failure, max-runtime).",
        ["reason"],
    ),
    "gpuplatform_cluster_sync_errors_total": (
        "Failed attempts to read or act on a cluster, per cluster.",
        ["cluster"],
    ),
}
DURATION = "gpuplatform_cycle_duration_seconds"


def _labels(text: str) -> dict[str, str]:
    return {
        key: value.replace('\\"', '"').replace("\\\\", "\\") for key, value in _LABEL.findall(text)
    }


def _queue_name(queue: Queue) -> str:
    return f"{queue.team.name}/{queue.name}"


class DatabaseCollector:
    """Builds every metric family from the database on each collect()."""

    def collect(self) -> Iterator[Metric]:
        yield from self._quota_and_usage()
        yield from self._workloads()
        yield from self._clusters()
        yield from self._counters()

    def _quota_and_usage(self) -> Iterator[Metric]:
        nominal = GaugeMetricFamily(
            "gpuplatform_cluster_queue_nominal_quota",
            "Nominal (guaranteed) quota of a queue in a flavor, in units of the flavor.",
            labels=["queue", "flavor"],
        )
        usage_family = GaugeMetricFamily(
            "gpuplatform_cluster_queue_resource_usage",
            "Units of a flavor held by a queue's admitted, running and stopping jobs.",
            labels=["queue", "flavor"],
        )
        borrowed = GaugeMetricFamily(
            "gpuplatform_cluster_queue_borrowed",
            "Units a queue uses above its nominal quota (borrowed from its cohort).",
            labels=["queue", "flavor"],
        )
        decayed = GaugeMetricFamily(
            "gpuplatform_cluster_queue_decayed_usage",
            "Fair-share history H(q): GPU-equivalent-seconds, decayed with the half-life.",
            labels=["queue"],
        )
        quotas: dict[tuple[str, str], int] = {}
        for quota in Quota.objects.select_related("queue__team", "flavor"):
            quotas[(_queue_name(quota.queue), quota.flavor.name)] = quota.nominal
        for queue in Queue.objects.select_related("team"):
            decayed.add_metric([_queue_name(queue)], queue.decayed_usage)
        usage: dict[tuple[str, str], int] = defaultdict(int)
        releasing = JobRuntime.objects.filter(release_at__gt=timezone.now()).values("job_id")
        holding = Job.objects.filter(
            Q(state__in=["admitted", "running", "preempted"]) | Q(pk__in=releasing)
        ).select_related("queue__team", "runtime__flavor")
        for job in holding:
            flavor = getattr(getattr(job, "runtime", None), "flavor", None)
            if flavor is None:
                continue
            workers = sum(int(c) for c in job.placement.values())
            usage[(_queue_name(job.queue), flavor.name)] += workers * job.gpus_per_worker
        for key in sorted(set(quotas) | set(usage)):
            used = usage.get(key, 0)
            nominal.add_metric(list(key), quotas.get(key, 0))
            usage_family.add_metric(list(key), used)
            borrowed.add_metric(list(key), max(0, used - quotas.get(key, 0)))
        yield from (nominal, usage_family, borrowed, decayed)

    def _workloads(self) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "gpuplatform_pending_workloads", "Jobs waiting in a queue.", labels=["queue"]
        )
        active = GaugeMetricFamily(
            "gpuplatform_admitted_active_workloads",
            "Jobs of a queue that are admitted or running.",
            labels=["queue"],
        )
        counts = (
            Job.objects.filter(state__in=["pending", "admitted", "running"])
            .values("queue__team__name", "queue__name", "state")
            .annotate(n=Count("pk"))
        )
        by_queue: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for queue in Queue.objects.select_related("team"):
            by_queue[_queue_name(queue)]  # every queue appears, with 0
        for row in counts:
            name = f"{row['queue__team__name']}/{row['queue__name']}"
            by_queue[name][row["state"]] += row["n"]
        for name in sorted(by_queue):
            states = by_queue[name]
            pending.add_metric([name], states["pending"])
            active.add_metric([name], states["admitted"] + states["running"])
        yield from (pending, active)

    def _clusters(self) -> Iterator[Metric]:
        status = GaugeMetricFamily(
            "gpuplatform_cluster_status",
            "1 for the cluster's current status (ok, degraded or unknown).",
            labels=["cluster", "status"],
        )
        capacity = GaugeMetricFamily(
            "gpuplatform_cluster_capacity",
            "Units of a flavor on the cluster's ready, schedulable nodes.",
            labels=["cluster", "flavor"],
        )
        for cluster in Cluster.objects.all():
            for choice in Cluster.Status.values:
                status.add_metric([cluster.name, choice], 1.0 if cluster.status == choice else 0)
        totals: dict[tuple[str, str], int] = defaultdict(int)
        for node in Node.objects.filter(ready=True, schedulable=True).select_related("cluster"):
            for flavor, units in node.capacity.items():
                totals[(node.cluster.name, flavor)] += int(units)
        for key in sorted(totals):
            capacity.add_metric(list(key), totals[key])
        yield from (status, capacity)

    def _counters(self) -> Iterator[Metric]:
        rows = list(MetricCounter.objects.all())
        for name, (doc, labels) in COUNTERS.items():
            family = CounterMetricFamily(name.removesuffix("_total"), doc, labels=labels)
            for row in rows:
                if row.name == name:
                    values = _labels(row.labels)
                    family.add_metric([values.get(label, "") for label in labels], row.value)
            yield family
        bucket_values = {f"{bound:g}": 0.0 for bound in DURATION_BUCKETS}
        bucket_values["+Inf"] = 0.0
        total = 0.0
        for row in rows:
            if row.name == f"{DURATION}_bucket":
                bucket_values[_labels(row.labels).get("le", "+Inf")] = row.value
            elif row.name == f"{DURATION}_sum":
                total = row.value
        buckets = sorted(bucket_values.items(), key=lambda b: float(b[0]))
        histogram = HistogramMetricFamily(
            DURATION, "Wall time of one live scheduling cycle (sync, decide, apply)."
        )
        histogram.add_metric([], buckets=buckets, sum_value=total)
        yield histogram


def metrics_view(request: HttpRequest) -> HttpResponse:
    token = getattr(settings, "METRICS_TOKEN", "")
    if token:
        if lockout.is_locked_out(request):
            return HttpResponse("Too many bad tokens; try again later.\n", status=429)
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not constant_time_compare(given, token):
            lockout.record_failure(request)
            return HttpResponse("A valid bearer token is required.\n", status=401)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
