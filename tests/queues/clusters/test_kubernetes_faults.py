"""The Kubernetes driver under injected faults (k8s_emulator.FaultyEmulator): which refusals are
the cluster's (an outage: `ClusterUnavailable`) and which are one job's (`QuotaExceeded`,
`RequestRejected`), and how a create whose answer was lost is finished without a duplicate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kmock
import pytest

from queues.clusters.base import (
    ClusterUnavailable,
    LaunchSpec,
    QuotaExceeded,
    RequestRejected,
    WorkerPhase,
    WorkerPlacement,
    WorkloadConflict,
)
from queues.clusters.kubernetes import KubernetesDriver
from tests.queues.clusters.k8s_emulator import PODS, EmulatedCluster

Validate = Callable[[dict[str, Any]], None]

NAMESPACE = "team-vision"
QUOTA_MESSAGE = (
    'pods "llama-finetune-42-2" is forbidden: exceeded quota: gpu-quota, requested: '
    "requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8"
)
WEBHOOK_MESSAGE = (
    'admission webhook "validation.gatekeeper.sh" denied the request: '
    "[must-have-owner] you must provide labels: {owner}"
)
RBAC_MESSAGE = (
    'pods is forbidden: User "system:serviceaccount:gpuplatform:scheduler" cannot create '
    'resource "pods" in API group "" in the namespace "team-vision"'
)


def gang(size: int = 4) -> LaunchSpec:
    return LaunchSpec(
        job_id="42",
        job_name="llama-finetune",
        team="vision",
        queue="vision-main",
        service_class="standard",
        image="registry.example.com/train:1.2",
        resource_name="nvidia.com/gpu",
        gpus_per_worker=4,
        workers=tuple(WorkerPlacement(i, f"h100-{i // 2}") for i in range(size)),
        gang_size=size,
        grace_period_seconds=120,
        flavor="h100",
    )


def pod_names(cluster: EmulatedCluster) -> list[str]:
    return sorted(cluster.stored_pods(NAMESPACE))


def pod_creates(cluster: EmulatedCluster) -> list[str]:
    return [
        r.data["metadata"]["name"]
        for r in cluster.requests("POST")
        if r.data and r.data.get("kind") == "Pod"
    ]


def test_a_quota_refusal_is_the_jobs_not_the_clusters(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.fail(
        kmock.action.CREATE, PODS, nth=3, status=403, reason="Forbidden", message=QUOTA_MESSAGE
    )
    with pytest.raises(QuotaExceeded, match="exceeded quota: gpu-quota"):
        driver.launch(gang())
    assert pod_names(cluster) == ["llama-finetune-42-0", "llama-finetune-42-1"]  # not stored


@pytest.mark.parametrize("status", [400, 403, 422])
def test_an_admission_webhook_denial_rejects_the_request_whatever_its_status(
    cluster: EmulatedCluster, driver: KubernetesDriver, status: int
) -> None:
    cluster.fail(kmock.action.CREATE, PODS, nth=2, status=status, message=WEBHOOK_MESSAGE)
    with pytest.raises(RequestRejected, match="must-have-owner"):
        driver.launch(gang())
    assert pod_names(cluster) == ["llama-finetune-42-0"]


def test_a_forbidden_create_without_quota_or_webhook_is_our_credentials(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.fail(kmock.action.CREATE, PODS, status=403, reason="Forbidden", message=RBAC_MESSAGE)
    with pytest.raises(ClusterUnavailable, match="HTTP 403"):
        driver.launch(gang())


def test_a_refused_server_error_stores_nothing_and_the_retry_completes_the_gang(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.fail(kmock.action.CREATE, PODS, nth=3, status=500)
    with pytest.raises(ClusterUnavailable, match="HTTP 500"):
        driver.launch(gang())
    assert pod_names(cluster) == ["llama-finetune-42-0", "llama-finetune-42-1"]

    driver.launch(gang())

    assert pod_names(cluster) == [f"llama-finetune-42-{i}" for i in range(4)]


def test_a_lost_answer_is_an_outage_and_the_retry_adopts_the_pod_without_a_duplicate(
    cluster: EmulatedCluster, driver: KubernetesDriver, validate_manifest: Validate
) -> None:
    cluster.lose_response(kmock.action.CREATE, PODS, nth=2)
    with pytest.raises(ClusterUnavailable, match="create pod team-vision/llama-finetune-42-1"):
        driver.launch(gang())
    assert pod_names(cluster) == ["llama-finetune-42-0", "llama-finetune-42-1"]  # it was created

    driver.launch(gang())

    assert pod_names(cluster) == [f"llama-finetune-42-{i}" for i in range(4)]
    creates = pod_creates(cluster)
    assert creates.count("llama-finetune-42-1") == 2  # asked twice, stored once (409, adopted)
    for request in cluster.requests("POST"):
        validate_manifest(request.data)


def test_a_conflict_on_a_create_the_server_already_carried_out_is_success(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.fail(kmock.action.CREATE, PODS, nth=2, status=409, reason="AlreadyExists", applied=True)
    driver.launch(gang())  # no error: the pod is ours, on its planned node
    assert pod_names(cluster) == [f"llama-finetune-42-{i}" for i in range(4)]


def test_a_conflict_on_a_pod_that_is_not_there_waits_instead_of_failing_the_job(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.fail(kmock.action.CREATE, PODS, nth=1, status=409, reason="AlreadyExists")
    with pytest.raises(WorkloadConflict, match="vanished"):
        driver.launch(gang())


def test_an_evicted_pod_is_reported_as_disrupted_and_replaced_on_relaunch(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(gang(2))
    cluster.evict_pod(NAMESPACE, "llama-finetune-42-1")

    status = driver.sync().workload("42")
    assert status is not None
    evicted = status.workers[1]
    assert evicted.phase is WorkerPhase.FAILED and evicted.reason == "Evicted"
    assert evicted.disrupted and not status.workers[0].disrupted

    with pytest.raises(WorkloadConflict, match="had failed"):
        driver.launch(gang(2))  # the failed pod is removed, not adopted
    assert pod_names(cluster) == ["llama-finetune-42-0"]
    driver.launch(gang(2))
    assert pod_names(cluster) == ["llama-finetune-42-0", "llama-finetune-42-1"]
