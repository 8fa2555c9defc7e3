"""The live cycle against a Kubernetes API (kmock's emulator over real HTTP): nodes read from the
API, pods created pinned to the planned nodes, pod phases followed, API errors degrade."""

from __future__ import annotations

import kmock
import pytest

from queues.models import Cluster, Job, Node
from tests.queues.clusters.k8s_emulator import NODES, TOKEN, EmulatedCluster
from tests.queues.services.helpers import T0, kinds, later

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "rack": "r1"}


@pytest.fixture
def api():
    emulated = EmulatedCluster()
    try:
        emulated.add_node("gpu-a", {"nvidia.com/gpu": "8"}, H100)
        emulated.add_node("gpu-b", {"nvidia.com/gpu": "8"}, H100)
        yield emulated
    finally:
        emulated.close()


@pytest.fixture
def k8s_world(world, api):
    Node.objects.filter(cluster=world.cluster).delete()
    Cluster.objects.filter(pk=world.cluster.pk).update(
        driver=Cluster.Driver.KUBERNETES, api_url=api.url, token=TOKEN, verify_tls=False
    )
    return world


def pods_of(api: EmulatedCluster, job: Job) -> dict[str, dict]:
    return {
        name: pod
        for name, pod in api.stored_pods().items()
        if pod["metadata"]["labels"].get("gpuplatform/job") == str(job.pk)
    }


def set_phase(api: EmulatedCluster, pods: dict[str, dict], phase: str) -> None:
    for name, pod in pods.items():
        api.set_pod_status(pod["metadata"]["namespace"], name, {"phase": phase})


def test_job_runs_on_kubernetes_from_admission_to_success(k8s_world, api, submit, cycle, reload):
    cycle(T0)  # reads the nodes (before, no node has an H100: a submission would be refused)

    nodes = {n.name: n for n in Node.objects.filter(cluster=k8s_world.cluster)}
    assert set(nodes) == {"gpu-a", "gpu-b"}
    assert nodes["gpu-a"].capacity == {"h100": 8}
    job = submit(gpus=4, workers=2, at=later(0.5))
    cycle(later(0.5))
    job = reload(job)
    assert job.state == Job.State.ADMITTED
    pods = pods_of(api, job)
    assert len(pods) == 2
    pinned = {
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchExpressions"][0]["values"][0]
        for pod in pods.values()
    }
    assert pinned <= set(job.placement)

    set_phase(api, pods, "Running")
    cycle(later(1))
    assert reload(job).state == Job.State.RUNNING

    set_phase(api, pods, "Succeeded")
    cycle(later(2))
    job = reload(job)
    assert job.state == Job.State.SUCCEEDED
    assert kinds(job) == ["submitted", "admitted", "started", "succeeded"]
    assert pods_of(api, job) == {}  # the completed pods were cleaned up


def test_api_server_error_degrades_the_cluster_and_leaves_jobs_alone(
    k8s_world, api, submit, cycle, reload
):
    cycle(T0)  # reads the nodes
    job = submit(gpus=8, at=later(0.5))
    cycle(later(0.5))
    set_phase(api, pods_of(api, job), "Running")
    cycle(later(1))
    api.react(kmock.action.LIST, NODES, 500)

    cycle(later(2))

    cluster = Cluster.objects.get(pk=k8s_world.cluster.pk)
    assert cluster.status == Cluster.Status.DEGRADED
    assert cluster.status_message
    assert reload(job).state == Job.State.RUNNING
    assert len(pods_of(api, job)) == 1  # its pod was not touched either


def test_node_rows_follow_the_api_and_a_vanished_node_turns_not_ready(
    k8s_world, api, submit, cycle
):
    cycle(T0)
    api.add_node("gpu-a", {"nvidia.com/gpu": "8"}, H100, unschedulable=True)  # cordoned

    def remove_gpu_b() -> None:
        del api.emulator.objects[NODES, None, "gpu-b"]

    api.call(remove_gpu_b)

    cycle(later(1))

    nodes = {n.name: n for n in Node.objects.filter(cluster=k8s_world.cluster)}
    assert not nodes["gpu-a"].schedulable and nodes["gpu-a"].ready
    assert not nodes["gpu-b"].ready


def test_a_platform_cordon_outlives_the_clusters_sync_and_a_drain_moves_the_job(
    k8s_world, api, submit, cycle, reload
):
    """The platform's cordon and drain are its own: the next sync, which rewrites the node rows
    from the API (where the node is schedulable), keeps them."""
    from queues.services.nodes import apply_node_action

    cycle(T0)
    job = submit(gpus=8, at=later(0.5))
    cycle(later(0.5))
    job = reload(job)
    set_phase(api, pods_of(api, job), "Running")
    cycle(later(1))
    first = next(iter(reload(job).placement))
    other = "gpu-b" if first == "gpu-a" else "gpu-a"
    apply_node_action(Node.objects.get(cluster=k8s_world.cluster, name=other), "cordon")
    apply_node_action(Node.objects.get(cluster=k8s_world.cluster, name=first), "drain")

    cycle(later(2))  # the drain stops the job; the sync kept both marks
    nodes = {n.name: n for n in Node.objects.filter(cluster=k8s_world.cluster)}
    assert nodes[other].cordoned and nodes[first].draining and nodes[first].schedulable
    assert reload(job).state == Job.State.PENDING  # no grace period: requeued at once
    assert pods_of(api, job) == {}  # its pod deleted
    for step in range(3, 12):
        cycle(later(step * 10))
    assert reload(job).state == Job.State.PENDING  # both nodes are out of bounds: it waits

    apply_node_action(Node.objects.get(cluster=k8s_world.cluster, name=other), "uncordon")
    cycle(later(200))
    job = reload(job)
    assert job.state == Job.State.ADMITTED and set(job.placement) == {other}
