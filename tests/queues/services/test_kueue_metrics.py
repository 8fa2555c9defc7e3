"""``/metrics`` under Kueue's names and labels (issue 20): after real cycles (a borrower, a
reclaim with its grace period, a requeue and readmission, jobs waiting), every ``kueue_*``
family carries the same numbers as the platform's own ``gpuplatform_*`` one, with the labels
Kueue sets (cluster_queue, status, cohort, flavor, resource, reason)."""

from __future__ import annotations

import math
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from queues.kueue_metrics import EVICTION_REASONS, WAIT_BUCKETS
from queues.models import Job, JobEvent, Quota
from tests.queues.services.helpers import T0, later

Labels = tuple[tuple[str, str], ...]


def scrape(client) -> dict[str, dict[Labels, float]]:
    """Sample name -> labels -> value."""
    response = client.get("/metrics")
    assert response.status_code == 200
    out: dict[str, dict[Labels, float]] = defaultdict(dict)
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            out[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
    return out


def by(samples: dict[Labels, float], *keys: str) -> dict[tuple[str, ...], float]:
    """Samples summed over every label but ``keys``."""
    out: dict[tuple[str, ...], float] = defaultdict(float)
    for labels, value in samples.items():
        named = dict(labels)
        out[tuple(named.get(key, "") for key in keys)] += value
    return dict(out)


def test_kueue_families_carry_the_platforms_numbers_after_real_cycles(world, submit, cycle, client):
    Quota.objects.filter(queue=world.queue_b).update(borrowing_limit=8, lending_limit=4)
    borrower = submit(team="b", cls="spot", gpus=8, workers=2, name="borrower")  # borrows 8
    cycle(T0)
    cycle(later(1))
    submit(team="a", gpus=8, name="owner", at=later(10), duration_hint=600)  # reclaims
    cycle(later(11))  # the borrower stops (30 s grace), the owner is admitted
    cycle(later(45))  # the borrower requeued
    cycle(later(70))  # the owner has finished: the borrower admitted again, 25 s after requeue
    submit(team="a", gpus=8, name="fits", at=later(80))  # reclaims again
    submit(team="b", gpus=8, workers=2, name="too-much-now", at=later(80))  # over b's limit
    cycle(later(85))
    submit(team="a", gpus=8, name="unseen", at=later(86))  # no cycle has seen it yet

    m = scrape(client)

    # quota and usage: one kueue sample per platform sample, same value, Kueue's labels
    for family in ("cluster_queue_nominal_quota", "cluster_queue_resource_usage"):
        ours = by(m[f"gpuplatform_{family}"], "queue", "flavor")
        theirs = by(m[f"kueue_{family}"], "cluster_queue", "flavor")
        assert ours == theirs and ours, family
        for labels in m[f"kueue_{family}"]:
            assert dict(labels)["cohort"] == "research"
            assert dict(labels)["resource"] == "nvidia.com/gpu"
    assert by(m["kueue_cluster_queue_resource_reservation"], "cluster_queue") == by(
        m["kueue_cluster_queue_resource_usage"], "cluster_queue"
    )
    limits = by(m["kueue_cluster_queue_borrowing_limit"], "cluster_queue")
    assert limits == {("team-a/main",): math.inf, ("team-b/main",): 8.0}
    assert by(m["kueue_cluster_queue_lending_limit"], "cluster_queue")[("team-b/main",)] == 4

    # workloads: pending split into active + inadmissible, admitted and running
    pending = m["kueue_pending_workloads"]
    assert by(pending, "cluster_queue") == by(m["gpuplatform_pending_workloads"], "queue")
    assert pending[(("cluster_queue", "team-a/main"), ("status", "active"))] == 1  # unseen
    assert pending[(("cluster_queue", "team-b/main"), ("status", "inadmissible"))] == 1
    assert by(m["kueue_admitted_active_workloads"], "cluster_queue") == by(
        m["gpuplatform_admitted_active_workloads"], "queue"
    )
    assert (
        m["kueue_cluster_queue_status"][(("cluster_queue", "team-a/main"), ("status", "active"))]
        == 1
    )

    # counters: admissions per queue, evictions per Kueue reason
    admitted = by(m["kueue_admitted_workloads_total"], "cluster_queue")
    assert admitted == by(m["gpuplatform_admitted_workloads_total"], "queue")
    assert admitted == {("team-a/main",): 2, ("team-b/main",): 2}  # the borrower twice
    evicted = by(m["kueue_evicted_workloads_total"], "reason")
    preempted: dict[tuple[str, ...], float] = defaultdict(float)
    for (reason,), value in by(m["gpuplatform_preemptions_total"], "reason").items():
        preempted[(EVICTION_REASONS[reason],)] += value
    assert evicted == dict(preempted) == {("Preempted",): 2}

    # admission wait: one observation per admission, from submission or the last requeue
    counts = by(m["kueue_admission_wait_time_seconds_count"], "cluster_queue")
    assert counts == admitted
    expected: dict[str, float] = defaultdict(float)
    for event in JobEvent.objects.filter(kind=JobEvent.Kind.ADMITTED).select_related("job"):
        job: Job = event.job
        since = job.submitted_at
        requeues = job.events.filter(kind=JobEvent.Kind.REQUEUED, at__lte=event.at)
        if requeues.exists():
            since = max(since, requeues.latest("at").at)
        expected[f"{job.queue.team.name}/{job.queue.name}"] += (event.at - since).total_seconds()
    sums = by(m["kueue_admission_wait_time_seconds_sum"], "cluster_queue")
    assert {key: round(value, 6) for key, value in sums.items()} == {
        (queue,): round(value, 6) for queue, value in expected.items()
    }
    buckets = m["kueue_admission_wait_time_seconds_bucket"]
    assert {dict(labels)["le"] for labels in buckets} == {f"{b:g}" for b in WAIT_BUCKETS} | {"+Inf"}
    assert sums[("team-b/main",)] == 25.0  # 0 s the first time, 25 s after its requeue
    assert JobEvent.objects.filter(job=borrower, kind=JobEvent.Kind.ADMITTED).count() == 2
