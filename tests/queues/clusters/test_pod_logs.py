"""The Kubernetes driver's `worker_logs` against kmock's API emulator over real HTTP: the pods'
status (phase, reason, restarts) and the last lines of each worker's log, read with the pod log
API (container "worker", tailLines, limitBytes); a pod that has not started, a worker without a
pod and an unreachable cluster."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import kmock
import pytest

from queues.clusters import pod_logs
from queues.clusters.base import (
    ClusterUnavailable,
    InvalidSpec,
    LaunchSpec,
    WorkerPhase,
    WorkerPlacement,
)
from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
from tests.queues.clusters.k8s_emulator import PODS, TOKEN, EmulatedCluster

NAMESPACE = "team-vision"
POD_0, POD_1 = "llama-finetune-42-0", "llama-finetune-42-1"
LOG = "".join(f"step {step} loss {3 - step / 1000:.3f}\n" for step in range(0, 500, 10))


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
        flavor="h100",
    )
    return replace(base, **overrides)


def running(cluster: EmulatedCluster, pod: str, node: str, restarts: int = 0) -> None:
    """What the kubelet reports of a started worker container (restarted `restarts` times)."""
    container: dict[str, Any] = {
        "name": "worker",
        "ready": True,
        "restartCount": restarts,
        "image": "registry.example.com/train:1.2",
        "imageID": "",
        "state": {"running": {"startedAt": "2026-03-02T09:00:00Z"}},
    }
    if restarts:
        container["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    cluster.set_pod_status(
        NAMESPACE, pod, {"phase": "Running", "hostIP": "10.0.0.1", "containerStatuses": [container]}
    )
    cluster.call(
        lambda: cluster.emulator.objects[PODS, NAMESPACE, pod].patch({"spec": {"nodeName": node}})
    )


@pytest.fixture
def connection(cluster: EmulatedCluster) -> KubernetesConnection:
    """No timeout is tested here: a loaded machine gets 5 s, not the suite's 0.5 s."""
    return KubernetesConnection(api_server=cluster.url, token=TOKEN, request_timeout_seconds=5)


def log_requests(cluster: EmulatedCluster) -> list[kmock.Request]:
    return [r for r in cluster.requests("GET") if r.subresource == "log"]


@pytest.fixture
def launched(cluster: EmulatedCluster, driver: KubernetesDriver) -> EmulatedCluster:
    driver.launch(job())
    running(cluster, POD_0, "h100-a")
    running(cluster, POD_1, "h100-b", restarts=2)
    cluster.set_pod_log(NAMESPACE, POD_0, LOG)
    cluster.set_pod_log(NAMESPACE, POD_1, "rank 1 ready\nstep 0 loss 3.000\n")
    return cluster


def test_every_worker_comes_with_its_pod_status_and_the_last_lines_of_its_log(
    launched: EmulatedCluster, driver: KubernetesDriver
) -> None:
    first, second = driver.worker_logs("42", NAMESPACE, None, 5)

    assert (first.index, second.index) == (0, 1)
    assert first.worker is not None and second.worker is not None
    assert (first.worker.pod_name, first.worker.node) == (POD_0, "h100-a")
    assert first.worker.phase is WorkerPhase.RUNNING and first.worker.restarts == 0
    assert first.lines == tuple(LOG.splitlines()[-5:])
    assert first.lines[-1] == "step 490 loss 2.510"
    assert second.worker.restarts == 2  # parsed from containerStatuses[].restartCount
    assert second.lines == ("rank 1 ready", "step 0 loss 3.000")
    asked = [r.params for r in log_requests(launched)]
    assert asked == [{"container": "worker", "tailLines": "5", "limitBytes": "1048576"}] * 2


def test_one_worker_is_read_alone(launched: EmulatedCluster, driver: KubernetesDriver) -> None:
    (only,) = driver.worker_logs("42", NAMESPACE, 1, 100)
    assert only.index == 1 and only.lines == ("rank 1 ready", "step 0 loss 3.000")
    assert [r.name for r in log_requests(launched)] == [POD_1]


def test_tail_zero_reads_the_status_without_any_log(
    launched: EmulatedCluster, driver: KubernetesDriver
) -> None:
    workers = driver.worker_logs("42", NAMESPACE, None, 0)
    assert [w.worker.restarts for w in workers if w.worker] == [0, 2]
    assert all(w.lines == () for w in workers)
    assert log_requests(launched) == []


def test_restarts_show_in_sync_too(launched: EmulatedCluster, driver: KubernetesDriver) -> None:
    (workload,) = driver.sync().workloads
    assert [w.restarts for w in workload.workers] == [0, 2]


def test_a_worker_without_a_pod_is_said_so_not_an_error(
    launched: EmulatedCluster, driver: KubernetesDriver
) -> None:
    (missing,) = driver.worker_logs("42", NAMESPACE, 5, 100)
    assert missing.worker is None and missing.note == "worker 5 has no pod"

    launched.delete_pod(NAMESPACE, POD_1)
    assert [w.index for w in driver.worker_logs("42", NAMESPACE, None, 10)] == [0]
    assert driver.worker_logs("42", NAMESPACE, None, 10)[0].lines[-1] == "step 490 loss 2.510"


def test_a_pod_deleted_between_the_list_and_the_log_read_has_no_pod(
    launched: EmulatedCluster, driver: KubernetesDriver
) -> None:
    launched.fail(kmock.action.FETCH, PODS, status=404, reason="NotFound", name=POD_0,
                  message=f'pods "{POD_0}" not found')  # fmt: skip
    first, second = driver.worker_logs("42", NAMESPACE, None, 10)
    assert first.worker is None and first.note == "worker 0 has no pod"
    assert second.lines  # the other worker is still read


def test_a_pod_that_has_not_started_gives_a_clear_note_and_no_request(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    driver.launch(job())
    cluster.set_pod_status(NAMESPACE, POD_0, {
        "phase": "Pending",
        "containerStatuses": [{"name": "worker", "restartCount": 0,
                               "state": {"waiting": {"reason": "ContainerCreating"}}}],
    })  # fmt: skip
    cluster.set_pod_status(NAMESPACE, POD_1, {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}],
    })  # fmt: skip

    first, second = driver.worker_logs("42", NAMESPACE, None, 100)

    assert first.worker is not None and first.worker.phase is WorkerPhase.PENDING
    assert first.lines == () and first.note == "worker 0 has not started yet: ContainerCreating"
    assert second.note.startswith("worker 1 has not started yet: Unschedulable: 0/4 nodes")
    assert log_requests(cluster) == []


def test_the_api_servers_refusal_to_read_a_waiting_container_becomes_a_note(
    launched: EmulatedCluster, driver: KubernetesDriver
) -> None:
    """The container went back to waiting between the list and the read: the API server's
    400 is what the worker shows, the other workers are read."""
    message = f'container "worker" in pod "{POD_0}" is waiting to start: CrashLoopBackOff'
    launched.fail(kmock.action.FETCH, PODS, status=400, reason="BadRequest", name=POD_0,
                  message=message)  # fmt: skip
    first, second = driver.worker_logs("42", NAMESPACE, None, 10)
    assert first.lines == () and message in first.note
    assert second.lines


def test_the_emulator_refuses_a_waiting_container_as_the_api_server_does(
    cluster: EmulatedCluster, connection: KubernetesConnection
) -> None:
    """The emulator's own 400 (not an injected one), read through the client: what the driver's
    note above stands for."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    KubernetesDriver(connection).launch(job())
    api = k8s.CoreV1Api(connection.build_api_client())
    with pytest.raises(ApiException) as refused:
        api.read_namespaced_pod_log(POD_0, NAMESPACE, container="worker")
    assert refused.value.status == 400 and "is waiting to start" in str(refused.value.body)
    with pytest.raises(ApiException) as missing:
        api.read_namespaced_pod_log("nope-0", NAMESPACE, container="worker")
    assert missing.value.status == 404


def test_a_log_cut_at_the_byte_limit_drops_its_partial_line_and_says_so(
    launched: EmulatedCluster, driver: KubernetesDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pod_logs, "LOG_LIMIT_BYTES", 50)
    (first,) = driver.worker_logs("42", NAMESPACE, 0, 100)
    assert first.lines == ("step 0 loss 3.000", "step 10 loss 2.990")  # 36 bytes, then cut
    assert "cut at 50 bytes" in first.note


def test_tail_lines_out_of_range_is_refused_before_any_request(
    launched: EmulatedCluster, driver: KubernetesDriver
) -> None:
    with pytest.raises(InvalidSpec, match="tail_lines"):
        driver.worker_logs("42", NAMESPACE, None, 5001)


def test_an_unreachable_cluster_raises_cluster_unavailable(closed_port: int) -> None:
    driver = KubernetesDriver(
        KubernetesConnection(api_server=f"http://127.0.0.1:{closed_port}", token=TOKEN)
    )
    with pytest.raises(ClusterUnavailable, match="list pods of job 42"):
        driver.worker_logs("42", NAMESPACE, None, 100)


def test_a_server_error_on_the_log_read_is_the_clusters(
    launched: EmulatedCluster, driver: KubernetesDriver
) -> None:
    launched.fail(kmock.action.FETCH, PODS, status=503, reason="ServiceUnavailable", name=POD_1)
    with pytest.raises(ClusterUnavailable, match=f"read the log of pod {NAMESPACE}/{POD_1}"):
        driver.worker_logs("42", NAMESPACE, None, 10)


@pytest.mark.parametrize(
    ("container", "note"),
    [
        ({"name": "worker", "state": {"running": {}}}, ""),
        ({"name": "worker", "state": {"terminated": {"exitCode": 1}}}, ""),
        ({"name": "worker", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"exitCode": 1}}}, ""),
        ({"name": "worker", "state": {"waiting": {"reason": "ErrImagePull"}}},
         "has not started yet: ErrImagePull"),
    ],
)  # fmt: skip
def test_not_started_reads_the_worker_containers_state(
    container: dict[str, Any], note: str
) -> None:
    pod = {"status": {"containerStatuses": [{"name": "sidecar", "state": {}}, container]}}
    assert pod_logs.not_started(pod) == note
