"""``/metrics``: Kueue-style gauges and counters read from the database at scrape time."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from queues.models import Queue
from tests.queues.services.helpers import T0, later


def samples(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    out = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_metrics_show_quota_usage_borrowing_pending_and_cycle_counters(
    world, submit, cycle, client
):
    submit(gpus=8, workers=2, name="borrower")  # 16 on a nominal of 8: borrows 8
    cycle(T0)
    submit(gpus=8, name="waiting", at=later(1))
    cycle(later(2))

    values = samples(client)

    queue_a = (("flavor", "h100"), ("queue", "team-a/main"))
    assert values[("gpuplatform_cluster_queue_nominal_quota", queue_a)] == 8
    assert values[("gpuplatform_cluster_queue_resource_usage", queue_a)] == 16
    assert values[("gpuplatform_cluster_queue_borrowed", queue_a)] == 8
    assert values[("gpuplatform_pending_workloads", (("queue", "team-a/main"),))] == 1
    assert values[("gpuplatform_pending_workloads", (("queue", "team-b/main"),))] == 0
    assert values[("gpuplatform_admitted_workloads_total", (("queue", "team-a/main"),))] == 1
    assert values[("gpuplatform_cycle_duration_seconds_count", ())] == 2
    assert values[("gpuplatform_cycle_duration_seconds_bucket", (("le", "+Inf"),))] == 2
    assert values[("gpuplatform_cluster_status", (("cluster", "sim"), ("status", "ok")))] == 1
    assert values[("gpuplatform_cluster_capacity", (("cluster", "sim"), ("flavor", "h100")))] == 16


def test_metrics_count_preemptions_by_reason(world, submit, cycle, client):
    submit(team="b", cls="spot", gpus=8, workers=2, name="borrower")
    cycle(T0)
    cycle(later(1))
    submit(team="a", gpus=8, name="owner", at=later(10))
    cycle(later(11))

    values = samples(client)

    assert values[("gpuplatform_preemptions_total", (("reason", "reclaim"),))] == 1


def test_metrics_require_the_token_when_one_is_configured(db, client, settings):
    settings.METRICS_TOKEN = "s3cret-scrape-token"

    assert client.get("/metrics").status_code == 401
    ok = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    assert ok.status_code == 200
    assert b"gpuplatform_pending_workloads" in ok.content


def test_metrics_show_cycle_phases_and_fair_share_factors(world, submit, cycle, client):
    submit(gpus=8, name="one")
    cycle(T0)
    cycle(later(1))
    Queue.objects.filter(pk=world.queue_a.pk).update(decayed_usage=3600.0)
    Queue.objects.filter(pk=world.queue_b.pk).update(decayed_usage=0.0)

    values = samples(client)

    for phase in ("sync", "snapshot", "decide", "apply", "accounting"):
        assert values[("gpuplatform_cycle_phase_seconds_count", (("phase", phase),))] == 2
        assert values[("gpuplatform_cycle_phase_seconds_sum", (("phase", phase),))] > 0
    # all the usage, half the weight: 2^-(1 / 0.5); none of the usage: 2^0
    factor = "gpuplatform_queue_fair_share_factor"
    assert values[(factor, (("queue", "team-a/main"),))] == 0.25
    assert values[(factor, (("queue", "team-b/main"),))] == 1.0
