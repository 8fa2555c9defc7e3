"""A node shared with workloads the platform did not create: the live cycle against the
Kubernetes emulator (real HTTP), with the drivers kept across cycles as a Celery worker keeps
them (watches). GPUs held by another team's pods are never counted as free."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import pytest

from queues.clusters.pool import DriverPool
from queues.models import Cluster, Job, Node
from queues.services import run_cycle
from queues.services.report import CycleReport
from tests.queues.clusters.k8s_emulator import PODS, TOKEN, EmulatedCluster
from tests.queues.services.helpers import T0, later

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "rack": "r1"}


@pytest.fixture
def api() -> Iterator[EmulatedCluster]:
    emulated = EmulatedCluster()
    try:
        emulated.add_node("gpu-a", {"nvidia.com/gpu": "8"}, H100)
        emulated.add_pod("inference", "serve-0", "gpu-a", {"nvidia.com/gpu": "6"})
        yield emulated
    finally:
        emulated.close()


@pytest.fixture
def drivers() -> Iterator[DriverPool]:
    pool = DriverPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def kept_cycle(
    django_capture_on_commit_callbacks: Callable[..., object], drivers: DriverPool
) -> Callable[[datetime], CycleReport]:
    """One live cycle with the drivers a worker process keeps between its cycles."""

    def run(at: datetime) -> CycleReport:
        with django_capture_on_commit_callbacks(execute=True):
            return run_cycle(now=at, drivers=drivers)

    return run


@pytest.fixture
def shared_world(world, api, kept_cycle):
    Node.objects.filter(cluster=world.cluster).delete()
    Cluster.objects.filter(pk=world.cluster.pk).update(
        driver=Cluster.Driver.KUBERNETES, api_url=api.url, token=TOKEN, verify_tls=False
    )
    kept_cycle(later(-60))
    return world


def node() -> Node:
    return Node.objects.get(name="gpu-a")


def platform_pods(api: EmulatedCluster) -> list[str]:
    return sorted(
        name
        for name, pod in api.stored_pods().items()
        if pod["metadata"]["labels"].get("app.kubernetes.io/managed-by") == "gpuplatform"
    )


def test_gpus_held_by_another_teams_pod_are_never_placed_on(
    shared_world, api, submit, kept_cycle, reload
):
    assert node().capacity == {"h100": 8}
    assert node().other_usage == {"h100": 6}
    assert node().usable_capacity() == {"h100": 2}
    job = submit(gpus=4)

    kept_cycle(T0)
    kept_cycle(later(10))

    job = reload(job)
    assert job.state == Job.State.PENDING  # 2 free, not 8
    assert platform_pods(api) == []
    assert job.runtime.pending_message

    api.set_pod_status("inference", "serve-0", {"phase": "Succeeded"})  # it ends: GPUs free
    kept_cycle(later(20))

    assert node().other_usage == {}
    assert reload(job).state == Job.State.ADMITTED
    assert platform_pods(api) == [f"train-{job.pk}-0"]


def test_the_platforms_own_pods_are_not_counted_twice(
    shared_world, api, submit, kept_cycle, reload
):
    small = submit(gpus=2, name="small")
    kept_cycle(T0)
    assert reload(small).state == Job.State.ADMITTED
    for name in platform_pods(api):
        api.set_pod_status("team-team-a", name, {"phase": "Running"})
    kept_cycle(later(10))

    assert reload(small).state == Job.State.RUNNING
    assert node().other_usage == {"h100": 6}  # its own 2 GPUs are a job's, not "other"
    other = submit(gpus=1, name="other", at=later(11))
    kept_cycle(later(20))
    assert reload(other).state == Job.State.PENDING  # 8 - 6 other - 2 its own: none left

    api.delete_pod("inference", "serve-0")
    kept_cycle(later(30))
    assert reload(other).state == Job.State.ADMITTED


def test_a_foreign_pod_that_arrives_is_seen_by_the_next_cycle(
    shared_world, api, submit, kept_cycle, reload
):
    api.add_pod("inference", "serve-1", "gpu-a", {"nvidia.com/gpu": "2"})
    job = submit(gpus=1)
    kept_cycle(T0)
    assert node().other_usage == {"h100": 8}
    assert reload(job).state == Job.State.PENDING
    watched = [r for r in api.watches(PODS) if r.params.get("resourceVersion")]
    assert watched  # read through the watch, not a fresh list
