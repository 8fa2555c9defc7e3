"""Prometheus ``/metrics``: the platform's own ``gpuplatform_*`` families, and beside them the
same meanings under Kueue's names and labels (queues/kueue_metrics.py) and month-to-date
accounting (accounting/metrics.py), so dashboards built for Kueue read this platform unchanged.

Everything is read from the database at scrape time (gauges from the current rows, counters and
histograms from ``MetricCounter``; the reads are shared: queues/metrics_data.py), so any web
process gives the same answer whichever worker ran the cycles. Set ``METRICS_TOKEN`` to require
``Authorization: Bearer``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import constant_time_compare
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)

from gpuplatform import lockout
from gpusched.engine import fairshare
from queues import metrics_data as data
from queues.models import Cluster, Node, Queue
from queues.services.cycle import DURATION_BUCKETS, PHASES

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
PHASE = "gpuplatform_cycle_phase_seconds"


class DatabaseCollector:
    """Builds every ``gpuplatform_*`` family of the scheduling domain on each collect()."""

    def collect(self) -> Iterator[Metric]:
        queues = data.queues()
        yield from self._quota_and_usage(queues)
        yield from self._workloads(queues)
        yield from self._clusters()
        counters = data.counters()
        yield from self._counters(counters)
        yield from self._cycle(counters)

    def _quota_and_usage(self, queues: list[data.QueueInfo]) -> Iterator[Metric]:
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
        factor = GaugeMetricFamily(
            "gpuplatform_queue_fair_share_factor",
            "Slurm's fair-share factor of a queue: 2^-(usage fraction / share fraction); 0.5 "
            "exactly at its share, above 0.5 under it.",
            labels=["queue"],
        )
        weights = {
            f"{team}/{name}": weight
            for team, name, weight in Queue.objects.values_list("team__name", "name", "weight")
        }
        factors = fairshare.slurm_factors({q.name: q.decayed_usage for q in queues}, weights)
        for queue in queues:
            decayed.add_metric([queue.name], queue.decayed_usage)
            factor.add_metric([queue.name], factors.get(queue.name, 0.0))
        quotas = data.quotas()
        held, _resources = data.usage()
        for key in sorted(set(quotas) | set(held)):
            quota = quotas.get(key)
            used = held.get(key, 0)
            nominal.add_metric(list(key), quota.nominal if quota else 0)
            usage_family.add_metric(list(key), used)
            borrowed.add_metric(list(key), max(0, used - (quota.nominal if quota else 0)))
        yield from (nominal, usage_family, borrowed, decayed, factor)

    def _workloads(self, queues: list[data.QueueInfo]) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "gpuplatform_pending_workloads", "Jobs waiting in a queue.", labels=["queue"]
        )
        active = GaugeMetricFamily(
            "gpuplatform_admitted_active_workloads",
            "Jobs of a queue that are admitted or running.",
            labels=["queue"],
        )
        counts = data.workloads([q.name for q in queues])
        for name in sorted(counts):
            pending.add_metric([name], counts[name].pending)
            active.add_metric([name], counts[name].admitted + counts[name].running)
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
        for node in Node.objects.filter(
            ready=True, schedulable=True, cordoned=False, draining=False
        ).select_related("cluster"):
            for flavor, units in node.capacity.items():
                totals[(node.cluster.name, flavor)] += int(units)
        for key in sorted(totals):
            capacity.add_metric(list(key), totals[key])
        yield from (status, capacity)

    def _counters(self, counters: list[tuple[str, dict[str, str], float]]) -> Iterator[Metric]:
        for name, (doc, labels) in COUNTERS.items():
            family = CounterMetricFamily(name.removesuffix("_total"), doc, labels=labels)
            values: dict[tuple[str, ...], float] = defaultdict(float)
            for row_name, row_labels, value in counters:
                if row_name == name:  # summed over any other label (a queue on preemptions)
                    values[tuple(row_labels.get(label, "") for label in labels)] += value
            for key in sorted(values):
                family.add_metric(list(key), values[key])
            yield family

    def _cycle(self, counters: list[tuple[str, dict[str, str], float]]) -> Iterator[Metric]:
        bucket_values = {f"{bound:g}": 0.0 for bound in DURATION_BUCKETS}
        bucket_values["+Inf"] = 0.0
        total = 0.0
        phase_sum: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        phase_count: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        for name, labels, value in counters:
            if name == f"{DURATION}_bucket":
                bucket_values[labels.get("le", "+Inf")] = value
            elif name == f"{DURATION}_sum":
                total = value
            elif name == f"{PHASE}_sum":
                phase_sum[labels.get("phase", "")] = value
            elif name == f"{PHASE}_count":
                phase_count[labels.get("phase", "")] = value
        buckets = sorted(bucket_values.items(), key=lambda b: float(b[0]))
        histogram = HistogramMetricFamily(
            DURATION, "Wall time of one live scheduling cycle (sync, decide, apply)."
        )
        histogram.add_metric([], buckets=buckets, sum_value=total)
        yield histogram
        phases = SummaryMetricFamily(
            PHASE,
            "Wall time of each phase of the live cycles: sync (read the clusters), snapshot, "
            "decide (the engine), apply (write the decisions and act on the clusters), "
            "accounting (usage ledger and dashboard series).",
            labels=["phase"],
        )
        for phase in phase_sum:
            phases.add_metric(
                [phase], count_value=phase_count.get(phase, 0.0), sum_value=phase_sum[phase]
            )
        yield phases


def registry() -> CollectorRegistry:
    from accounting.metrics import AccountingCollector
    from queues.kueue_metrics import KueueCollector

    made = CollectorRegistry(auto_describe=False)
    made.register(DatabaseCollector())
    made.register(AccountingCollector())
    made.register(KueueCollector())
    return made


def metrics_view(request: HttpRequest) -> HttpResponse:
    token = getattr(settings, "METRICS_TOKEN", "")
    if token:
        if lockout.is_locked_out(request):
            return HttpResponse("Too many bad tokens; try again later.\n", status=429)
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not constant_time_compare(given, token):
            lockout.record_failure(request)
            return HttpResponse("A valid bearer token is required.\n", status=401)
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
