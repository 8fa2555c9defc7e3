"""GPUs held by pods the platform did not create (a shared node's "other workloads") are shown as
such on the GPU map, in the utilization bars and in the capacity chart, and never as free."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User

from dashboards import data, figures
from dashboards.plain import OTHER_WORKLOADS
from dashboards.rollup import sample_capacity
from queues.models import Job, Node, Queue
from queues.services.quota_impact import stranded_gpus
from tests.dashboards.conftest import T0, at

pytestmark = pytest.mark.django_db


@pytest.fixture
def shared(nodes: list[Node]) -> Node:
    """n1 (8 H100) shares 3 of its GPUs with another team's service."""
    Node.objects.filter(name="n1").update(other_usage={"h100": 3})
    return Node.objects.get(name="n1")


def test_the_gpu_map_shows_other_workloads_between_the_jobs_and_the_free_slots(
    shared: Node, running_job: Callable[..., Job], queue_a: Queue, researcher_a: User
) -> None:
    job = running_job(queue=queue_a, owner=researcher_a, node="n1", gpus_per_worker=2)
    n1 = next(n for n in data.node_slots(T0) if n.node == "sim/n1")
    assert [s.team for s in n1.slots] == ["team-a"] * 2 + [OTHER_WORKLOADS] * 3 + [None] * 3
    assert n1.slots[0].job == f"#{job.pk} train" and n1.slots[2].job is None
    figure = figures.slice_map([n1], "GPU map")
    assert OTHER_WORKLOADS in [trace.get("name") for trace in figure["data"]]


def test_utilization_counts_other_workloads_apart_from_free(
    shared: Node, running_job: Callable[..., Job], queue_a: Queue, researcher_a: User
) -> None:
    running_job(queue=queue_a, owner=researcher_a, node="n1", gpus_per_worker=2)
    h100 = next(r for r in data.flavor_utilization(T0) if r.flavor == "h100")
    assert (h100.capacity, h100.used, h100.other, h100.failed, h100.free) == (16, 2, 3, 8, 3)
    assert h100.percent_used == 40.0  # 2 of the 5 the platform may use
    bars = figures.flavor_utilization([h100])["data"]
    assert {bar["name"]: bar["y"] for bar in bars}["Other workloads"] == [3]


def test_the_capacity_chart_stacks_other_workloads(shared: Node) -> None:
    sample_capacity(at(7))
    series = data.usage_series(at(10), data.RANGES["hour"])
    j = series.buckets.index(at(5))
    assert series.other[j] == 3.0 and series.capacity[j] == 16 + 2.0
    chart = figures.usage_over_time(series)["data"]
    assert chart[0]["name"] == OTHER_WORKLOADS and chart[0]["stackgroup"] == "usage"


def test_gpus_of_other_workloads_are_not_counted_as_left_in_no_quota(
    shared: Node, queue_a: Queue
) -> None:
    quota = queue_a.quotas.get(flavor__name="h100")
    stranded = stranded_gpus(queue_a, {quota.flavor_id: 0})
    assert [s.capacity for s in stranded] == [8 - 3]  # n1 only (n2 is not Ready), less 3
