"""What pods the platform did not create hold on a node, counted as the scheduler counts it."""

from __future__ import annotations

from typing import Any

from queues.clusters.base import FlavorDefinition, NodeInfo, node_flavor_other_usage
from queues.clusters.k8s_objects import other_usage_by_node, pod_requests

GPU = "nvidia.com/gpu"


def container(name: str, gpus: int, *, limits: bool = True, **extra: Any) -> dict[str, Any]:
    key = "limits" if limits else "requests"
    return {"name": name, "image": "x", "resources": {key: {GPU: str(gpus), "cpu": "2"}}, **extra}


def pod(node: str = "n1", phase: str = "Running", **spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [container("main", 1)])
    return {
        "metadata": {"name": "p"},
        "spec": {"nodeName": node, **spec},
        "status": {"phase": phase},
    }


def test_app_containers_add_up_and_an_init_container_counts_only_if_larger() -> None:
    two = pod(containers=[container("a", 1), container("b", 2, limits=False)])
    assert pod_requests(two) == {GPU: 3}
    warm = pod(containers=[container("a", 1)], initContainers=[container("init", 4)])
    assert pod_requests(warm) == {GPU: 4}  # max(4, 1), not 5
    small = pod(containers=[container("a", 3)], initContainers=[container("init", 2)])
    assert pod_requests(small) == {GPU: 3}


def test_sidecars_run_beside_the_app_and_the_later_init_containers() -> None:
    sidecar = container("proxy", 1, restartPolicy="Always")
    spec = pod(
        containers=[container("a", 2)],
        initContainers=[sidecar, container("init", 4)],
        overhead={GPU: "1"},
    )
    assert pod_requests(spec) == {GPU: max(1 + 4, 2 + 1) + 1}


def test_only_running_or_pending_foreign_pods_bound_to_a_node_count() -> None:
    ours = pod()
    ours["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "gpuplatform"}
    pods = [pod(), pod(phase="Pending"), pod(phase="Succeeded"), pod(phase="Failed"), pod(node="")]
    assert other_usage_by_node([*pods, ours]) == {"n1": {GPU: 2}}


def test_the_flavor_that_has_the_resource_carries_its_other_usage() -> None:
    node = NodeInfo("n1", {GPU: 8}, {"product": "h100"}, other_usage={GPU: 9, "x.io/fpga": 1})
    flavors = [FlavorDefinition("h100", GPU, {"product": "h100"}), FlavorDefinition("any", GPU)]
    assert node_flavor_other_usage(node, flavors) == {"h100": 8}  # never above the capacity
