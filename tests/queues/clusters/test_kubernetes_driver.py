"""The Kubernetes driver against kmock's API emulator, over real HTTP with the official client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml

from queues.clusters.base import (
    ClusterUnavailable,
    FlavorDefinition,
    InvalidSpec,
    LaunchSpec,
    RequestRejected,
    WorkerPhase,
    WorkerPlacement,
    WorkloadConflict,
    WorkloadPhase,
    node_flavor_capacity,
)
from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
from tests.queues.clusters.k8s_emulator import (
    NAMESPACES,
    NODES,
    PODS,
    REQUEST_TIMEOUT,
    SERVICES,
    TOKEN,
    EmulatedCluster,
)

Validate = Callable[[dict[str, Any]], None]

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "topology.kubernetes.io/zone": "z1"}


def job(**overrides: Any) -> LaunchSpec:
    base = LaunchSpec(
        job_id="42",
        job_name="llama-finetune",
        team="vision",
        queue="vision-main",
        service_class="standard",
        image="registry.example.com/train:1.2",
        resource_name="nvidia.com/gpu",
        gpus_per_worker=4,
        workers=(WorkerPlacement(0, "h100-a"), WorkerPlacement(1, "h100-b")),
        gang_size=2,
        grace_period_seconds=120,
        flavor="h100",
    )
    return replace(base, **overrides)


def pods_of(cluster: EmulatedCluster) -> dict[str, dict[str, Any]]:
    return cluster.stored_pods("team-vision")


# -- sync: nodes ------------------------------------------------------------------------------


def test_sync_reads_gpu_capacity_labels_readiness_and_cordon(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.add_node("h100-a", {"nvidia.com/gpu": "8"}, H100)
    cluster.add_node(
        "h100-mig",
        {"nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "2", "nvidia.com/gpu": "0"},
        {**H100, "nvidia.com/mig.config": "all-balanced"},
    )
    cluster.add_node("h100-down", {"nvidia.com/gpu": "8"}, H100, ready=False)
    cluster.add_node("h100-cordoned", {"nvidia.com/gpu": "8"}, H100, unschedulable=True)

    state = driver.sync()

    nodes = {node.name: node for node in state.nodes}
    assert set(nodes) == {"h100-a", "h100-mig", "h100-down", "h100-cordoned"}
    assert nodes["h100-a"].allocatable == {"nvidia.com/gpu": 8}
    assert nodes["h100-a"].labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert nodes["h100-a"].labels["topology.kubernetes.io/zone"] == "z1"
    assert nodes["h100-a"].schedulable
    assert nodes["h100-mig"].allocatable == {
        "nvidia.com/mig-1g.10gb": 14,
        "nvidia.com/mig-3g.40gb": 2,
        "nvidia.com/gpu": 0,
    }
    assert nodes["h100-mig"].labels["nvidia.com/mig.config"] == "all-balanced"
    assert not nodes["h100-down"].ready and not nodes["h100-down"].schedulable
    assert nodes["h100-cordoned"].unschedulable and not nodes["h100-cordoned"].schedulable
    assert state.workloads == ()


def test_synced_nodes_map_to_platform_flavors(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.add_node("h100-a", {"nvidia.com/gpu": "8"}, H100)
    cluster.add_node("h100-mig", {"nvidia.com/mig-1g.10gb": "7"}, H100)
    flavors = [
        FlavorDefinition(
            "h100", "nvidia.com/gpu", {"nvidia.com/gpu.product": H100["nvidia.com/gpu.product"]}
        ),
        FlavorDefinition("h100-1g.10gb", "nvidia.com/mig-1g.10gb"),
    ]
    capacity = {node.name: node_flavor_capacity(node, flavors) for node in driver.sync().nodes}
    assert capacity == {"h100-a": {"h100": 8}, "h100-mig": {"h100-1g.10gb": 7}}


def test_driver_sends_the_bearer_token(cluster: EmulatedCluster, driver: KubernetesDriver) -> None:
    driver.sync()
    assert {r.headers.get("Authorization") for r in cluster.requests()} == {f"Bearer {TOKEN}"}


def test_token_never_shows_in_reprs(
    connection: KubernetesConnection, driver: KubernetesDriver
) -> None:
    assert TOKEN not in repr(connection)
    assert TOKEN not in repr(driver)


# -- launch -----------------------------------------------------------------------------------


def test_launch_creates_namespace_pinned_pods_and_headless_service(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())

    (namespace,) = cluster.stored(NAMESPACES)
    assert namespace["metadata"]["name"] == "team-vision"
    pods = pods_of(cluster)
    assert set(pods) == {"llama-finetune-42-0", "llama-finetune-42-1"}
    for rank, node in enumerate(["h100-a", "h100-b"]):
        pod = pods[f"llama-finetune-42-{rank}"]
        required = pod["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        expression = required["nodeSelectorTerms"][0]["matchExpressions"][0]
        assert expression == {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
        (container,) = pod["spec"]["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "4"}
        labels = pod["metadata"]["labels"]
        assert labels["gpuplatform/job"] == "42"
        assert labels["gpuplatform/worker"] == str(rank)
        assert labels["gpuplatform/queue"] == "vision-main"
        assert labels["gpuplatform/team"] == "vision"
        assert labels["app.kubernetes.io/managed-by"] == "gpuplatform"
        assert pod["metadata"]["annotations"]["gpuplatform/gang-size"] == "2"
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["RANK"] == str(rank)
        assert env["WORLD_SIZE"] == "2"
        assert env["MASTER_ADDR"] == (
            "llama-finetune-42-0.llama-finetune-42.team-vision.svc.cluster.local"
        )
        assert pod["spec"]["subdomain"] == "llama-finetune-42"
        assert pod["spec"]["terminationGracePeriodSeconds"] == 120
        assert pod["spec"]["restartPolicy"] == "Never"
    (service,) = cluster.stored(SERVICES, "team-vision")
    assert service["metadata"]["name"] == "llama-finetune-42"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"]["gpuplatform/job"] == "42"


def test_everything_the_driver_sends_validates_against_the_schema(
    cluster: EmulatedCluster, driver: KubernetesDriver, validate_manifest: Validate
) -> None:
    driver.launch(job())
    driver.launch(
        job(
            job_id="43",
            workers=(WorkerPlacement(0, "mig-node"),),
            gang_size=1,
            gpus_per_worker=1,
            resource_name="nvidia.com/mig-1g.10gb",
        )
    )
    driver.scale(job(workers=(WorkerPlacement(0, "h100-a"),)))
    driver.stop("43", "team-vision", 30)

    bodies = [r.data for r in cluster.requests() if r.method.value in ("POST", "DELETE")]
    bodies = [body for body in bodies if body]
    kinds = sorted({body["kind"] for body in bodies})
    assert kinds == ["DeleteOptions", "Namespace", "Pod", "Service"]
    for body in bodies:
        validate_manifest(body)


def test_launching_twice_is_idempotent(cluster: EmulatedCluster, driver: KubernetesDriver) -> None:
    driver.launch(job())
    first = pods_of(cluster)

    driver.launch(job())

    assert pods_of(cluster) == first
    assert len(cluster.stored(SERVICES)) == 1
    assert len(cluster.stored(NAMESPACES)) == 1


def test_launch_after_a_lost_create_response_completes_the_gang(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    # The emulator stores a created object even when the answer is an error: like a real API
    # server whose response was lost. The retry must finish the job, not fail on 409.
    cluster.react(kmock.action.CREATE, PODS, 500, times=1)
    with pytest.raises(ClusterUnavailable, match="HTTP 500"):
        driver.launch(job())
    assert set(pods_of(cluster)) == {"llama-finetune-42-0"}  # stopped at the first failure

    driver.launch(job())
    assert set(pods_of(cluster)) == {"llama-finetune-42-0", "llama-finetune-42-1"}


def test_launch_refuses_to_adopt_a_pod_of_a_previous_run_still_terminating(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    cluster.call(
        lambda: cluster.emulator.objects[PODS, "team-vision", "llama-finetune-42-1"].patch(
            {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x"]}}
        )
    )
    with pytest.raises(WorkloadConflict, match="still terminating"):
        driver.launch(job())
    status = driver.sync().workload("42")
    assert status is not None
    assert [w.terminating for w in status.workers] == [False, True]


def test_launch_refuses_a_pod_placed_elsewhere(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    moved = job(workers=(WorkerPlacement(0, "h100-a"), WorkerPlacement(1, "h100-c")))
    with pytest.raises(WorkloadConflict, match="h100-c"):
        driver.launch(moved)


def test_launch_rejects_a_bad_spec_before_sending_anything(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    with pytest.raises(InvalidSpec, match=r"^gpus_per_worker:"):
        driver.launch(job(gpus_per_worker=0))
    assert cluster.requests() == []


# -- stop ---------------------------------------------------------------------------------------


def test_stop_deletes_pods_and_service_with_the_grace_period(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    driver.launch(
        job(job_id="77", job_name="other", workers=(WorkerPlacement(0, "h100-c"),), gang_size=1)
    )

    driver.stop("42", "team-vision", 300)

    assert set(pods_of(cluster)) == {"other-77-0"}
    assert cluster.stored(SERVICES) == []
    pod_deletes = [r for r in cluster.requests("DELETE") if r.resource == PODS]
    assert [r.name for r in pod_deletes] == ["llama-finetune-42-1", "llama-finetune-42-0"]
    for request in pod_deletes:
        assert request.params["gracePeriodSeconds"] == "300"
        assert request.data["gracePeriodSeconds"] == 300


def test_stop_of_a_missing_workload_is_fine(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.stop("404", "team-nobody", 30)
    assert cluster.requests("DELETE") == []


def test_stop_interrupted_by_an_outage_finishes_when_retried(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    cluster.react(kmock.action.DELETE, SERVICES, 503, times=1)
    with pytest.raises(ClusterUnavailable, match="HTTP 503"):
        driver.stop("42", "team-vision", 30)

    driver.stop("42", "team-vision", 30)

    assert pods_of(cluster) == {}
    assert cluster.stored(SERVICES) == []
    assert driver.sync().workloads == ()


def test_stop_tolerates_pods_that_vanish_meanwhile(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    cluster.react(kmock.action.DELETE, PODS, 404)  # someone else deleted them first
    driver.stop("42", "team-vision", 30)
    assert cluster.stored(SERVICES) == []


# -- scale --------------------------------------------------------------------------------------


def test_scale_up_adds_the_missing_workers_on_their_nodes(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    elastic = job(gang_size=4, min_workers=1, workers=(WorkerPlacement(0, "h100-a"),))
    driver.launch(elastic)
    grown = replace(
        elastic,
        workers=(
            WorkerPlacement(0, "h100-a"),
            WorkerPlacement(1, "h100-b"),
            WorkerPlacement(2, "h100-b"),
        ),
    )

    driver.scale(grown)

    pods = pods_of(cluster)
    assert set(pods) == {f"llama-finetune-42-{i}" for i in range(3)}
    assert pods["llama-finetune-42-2"]["metadata"]["annotations"]["gpuplatform/planned-node"] == (
        "h100-b"
    )
    creates = [r for r in cluster.requests("POST") if r.resource == PODS]
    assert len(creates) == 3  # worker 0 was left alone


def test_scale_down_removes_the_highest_workers_first(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    four = tuple(WorkerPlacement(i, "h100-a") for i in range(4))
    elastic = job(gang_size=4, min_workers=1, workers=four)
    driver.launch(elastic)

    driver.scale(replace(elastic, workers=four[:2]))

    assert set(pods_of(cluster)) == {"llama-finetune-42-0", "llama-finetune-42-1"}
    deletes = [r.name for r in cluster.requests("DELETE") if r.resource == PODS]
    assert deletes == ["llama-finetune-42-3", "llama-finetune-42-2"]
    assert len(cluster.stored(SERVICES)) == 1  # the job still runs


def test_scaling_to_no_workers_is_refused_in_favour_of_stop(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    elastic = job(gang_size=4, min_workers=1)
    driver.launch(elastic)
    with pytest.raises(InvalidSpec, match=r"^workers:"):
        driver.scale(replace(elastic, workers=()))
    assert len(pods_of(cluster)) == 2


# -- status ---------------------------------------------------------------------------------------


def test_pod_phases_become_workload_status(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    (pending,) = driver.sync().workloads
    assert pending.phase is WorkloadPhase.PENDING
    assert pending.job_id == "42" and pending.namespace == "team-vision"

    cluster.set_pod_status("team-vision", "llama-finetune-42-0", {"phase": "Running"})
    cluster.set_pod_status(
        "team-vision",
        "llama-finetune-42-1",
        {
            "phase": "Pending",
            "containerStatuses": [
                {"name": "worker", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
            ],
        },
    )
    (starting,) = driver.sync().workloads
    assert starting.phase is WorkloadPhase.PENDING
    assert "worker 1: ImagePullBackOff" in starting.message

    cluster.set_pod_status("team-vision", "llama-finetune-42-1", {"phase": "Running"})
    (running,) = driver.sync().workloads
    assert running.phase is WorkloadPhase.RUNNING
    assert [w.phase for w in running.workers] == [WorkerPhase.RUNNING, WorkerPhase.RUNNING]


def test_one_failed_worker_reports_the_whole_workload_failed(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    cluster.set_pod_status("team-vision", "llama-finetune-42-0", {"phase": "Running"})
    cluster.set_pod_status(
        "team-vision", "llama-finetune-42-1", {"phase": "Failed", "reason": "OOMKilled"}
    )

    (status,) = driver.sync().workloads

    assert status.phase is WorkloadPhase.FAILED
    assert status.failed_workers == 1
    assert "1 of 2 worker(s) failed" in status.message
    assert status.workers[1].node == "h100-b"


def test_all_workers_succeeded_means_the_workload_succeeded(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    for rank in (0, 1):
        cluster.set_pod_status("team-vision", f"llama-finetune-42-{rank}", {"phase": "Succeeded"})
    (status,) = driver.sync().workloads
    assert status.phase is WorkloadPhase.SUCCEEDED


def test_sync_ignores_pods_the_platform_does_not_manage(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    foreign = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k": "v"}},
        "spec": {"containers": [{"name": "c", "image": "dns"}]},
        "status": {"phase": "Running"},
    }
    cluster.call(
        lambda: cluster.emulator.objects.__setitem__((PODS, "kube-system", "kube-dns"), foreign)
    )
    driver.launch(job())
    assert [w.job_id for w in driver.sync().workloads] == ["42"]


# -- faults ---------------------------------------------------------------------------------------


def test_server_error_marks_the_cluster_unavailable(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.react(kmock.action.LIST, NODES, 500)
    with pytest.raises(ClusterUnavailable, match="list nodes: HTTP 500"):
        driver.sync()


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_credentials_mark_the_cluster_unavailable(
    cluster: EmulatedCluster, driver: KubernetesDriver, status: int
) -> None:
    cluster.react(kmock.action.LIST, NODES, status, {"kind": "Status", "code": status})
    with pytest.raises(ClusterUnavailable, match=f"HTTP {status}") as raised:
        driver.sync()
    assert TOKEN not in str(raised.value)


def test_a_request_past_the_timeout_marks_the_cluster_unavailable(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    async def too_slow() -> dict[str, Any]:
        await asyncio.sleep(REQUEST_TIMEOUT * 3)
        return {"items": []}

    cluster.react(kmock.action.LIST, NODES, too_slow)
    started = time.monotonic()
    with pytest.raises(ClusterUnavailable, match="list nodes"):
        driver.sync()
    assert time.monotonic() - started < REQUEST_TIMEOUT * 2.5  # the client gave up, not the server


def test_a_closed_port_marks_the_cluster_unavailable(closed_port: int) -> None:
    driver = KubernetesDriver(
        KubernetesConnection(api_server=f"http://127.0.0.1:{closed_port}", token=TOKEN)
    )
    with pytest.raises(ClusterUnavailable, match="list nodes") as raised:
        driver.sync()
    assert TOKEN not in str(raised.value)
    driver.close()


def test_tls_is_verified_and_a_failed_handshake_marks_the_cluster_unavailable(
    cluster: EmulatedCluster,
) -> None:
    plain_http_as_https = cluster.url.replace("http://", "https://")
    connection = KubernetesConnection(api_server=plain_http_as_https, token=TOKEN)
    driver = KubernetesDriver(connection)
    assert connection.verify_tls
    with pytest.raises(ClusterUnavailable, match="SSL"):
        driver.sync()
    driver.close()


def test_a_rejected_manifest_is_not_mistaken_for_an_outage(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.react(
        kmock.action.CREATE, PODS, 422, {"kind": "Status", "message": "spec.containers: Required"}
    )
    with pytest.raises(RequestRejected, match=r"spec\.containers: Required"):
        driver.launch(job())


def test_launch_survives_a_namespace_that_already_exists(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    cluster.react(kmock.action.CREATE, NAMESPACES, 409)
    driver.launch(job())
    assert len(pods_of(cluster)) == 2


# -- connection ---------------------------------------------------------------------------------


def test_driver_connects_through_a_kubeconfig_context(
    cluster: EmulatedCluster, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "lab", "cluster": {"server": cluster.url}}],
                "users": [{"name": "robot", "user": {"token": "kubeconfig-token"}}],
                "contexts": [
                    {"name": "other", "context": {"cluster": "nowhere", "user": "robot"}},
                    {"name": "lab", "context": {"cluster": "lab", "user": "robot"}},
                ],
                "current-context": "other",
            }
        )
    )
    cluster.add_node("h100-a", {"nvidia.com/gpu": "8"}, H100)
    driver = KubernetesDriver(KubernetesConnection(kubeconfig_path=str(kubeconfig), context="lab"))
    assert [node.name for node in driver.sync().nodes] == ["h100-a"]
    assert cluster.requests()[-1].headers["Authorization"] == "Bearer kubeconfig-token"
    driver.close()


def test_unusable_kubeconfig_is_a_settings_error_naming_the_field(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(InvalidSpec, match=r"^kubeconfig_path: cannot load"):
        KubernetesDriver(KubernetesConnection(kubeconfig_path=str(missing)))
    no_context = tmp_path / "config"
    no_context.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "contexts": []}))
    with pytest.raises(InvalidSpec, match=r"^kubeconfig_path: cannot load"):
        KubernetesDriver(KubernetesConnection(kubeconfig_path=str(no_context), context="lab"))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({}, "api_server"),
        ({"api_server": "https://k8s.example.com"}, "token"),
        ({"api_server": "k8s.example.com", "token": "t"}, "api_server"),
        ({"kubeconfig_path": "/x", "token": "t"}, "kubeconfig_path"),
        (
            {"api_server": "https://k", "token": "t", "request_timeout_seconds": 0},
            "request_timeout",
        ),
    ],
)
def test_bad_connection_settings_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpec, match=f"^{field}"):
        KubernetesConnection(**kwargs)
