"""Pure helpers of the driver interface: node -> flavor capacity, worker phases -> job phase."""

from __future__ import annotations

from queues.clusters.base import (
    ClusterDriver,
    FlavorDefinition,
    NodeInfo,
    WorkerPhase,
    WorkloadPhase,
    node_flavor_capacity,
    workload_phase,
)
from queues.clusters.kubernetes import KubernetesDriver

H100_PRODUCT = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
A100_PRODUCT = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}

FLAVORS = [
    FlavorDefinition("h100", "nvidia.com/gpu", H100_PRODUCT),
    FlavorDefinition("a100", "nvidia.com/gpu", A100_PRODUCT),
    FlavorDefinition("h100-1g.10gb", "nvidia.com/mig-1g.10gb", H100_PRODUCT),
    FlavorDefinition("h100-3g.40gb", "nvidia.com/mig-3g.40gb", H100_PRODUCT),
]


def test_whole_gpu_flavor_matches_only_nodes_with_its_product_label() -> None:
    h100 = NodeInfo("h100-a", {"nvidia.com/gpu": 8}, H100_PRODUCT)
    a100 = NodeInfo("a100-a", {"nvidia.com/gpu": 4}, A100_PRODUCT)
    unlabeled = NodeInfo("mystery", {"nvidia.com/gpu": 2}, {})
    assert node_flavor_capacity(h100, FLAVORS) == {"h100": 8}
    assert node_flavor_capacity(a100, FLAVORS) == {"a100": 4}
    assert node_flavor_capacity(unlabeled, FLAVORS) == {}


def test_mig_mixed_node_exposes_one_flavor_per_profile() -> None:
    node = NodeInfo(
        "h100-mig",
        {"nvidia.com/mig-1g.10gb": 14, "nvidia.com/mig-3g.40gb": 2, "nvidia.com/gpu": 0},
        {**H100_PRODUCT, "nvidia.com/mig.config": "all-balanced"},
    )
    assert node_flavor_capacity(node, FLAVORS) == {"h100-1g.10gb": 14, "h100-3g.40gb": 2}


def test_a_resource_counts_for_the_most_specific_matching_flavor_only() -> None:
    generic = FlavorDefinition("any-gpu", "nvidia.com/gpu")
    node = NodeInfo("h100-a", {"nvidia.com/gpu": 8}, H100_PRODUCT)
    other = NodeInfo("t4", {"nvidia.com/gpu": 1}, {"nvidia.com/gpu.product": "Tesla-T4"})
    assert node_flavor_capacity(node, [generic, *FLAVORS]) == {"h100": 8}
    assert node_flavor_capacity(other, [generic, *FLAVORS]) == {"any-gpu": 1}


def test_capacity_ignores_schedulability_which_the_node_reports_itself() -> None:
    cordoned = NodeInfo("h100-a", {"nvidia.com/gpu": 8}, H100_PRODUCT, unschedulable=True)
    not_ready = NodeInfo("h100-b", {"nvidia.com/gpu": 8}, H100_PRODUCT, ready=False)
    assert node_flavor_capacity(cordoned, FLAVORS) == {"h100": 8}
    assert not cordoned.schedulable
    assert not not_ready.schedulable
    assert NodeInfo("ok", {}, {}).schedulable


def test_one_failed_worker_fails_the_whole_gang() -> None:
    phases = [WorkerPhase.RUNNING, WorkerPhase.FAILED, WorkerPhase.RUNNING]
    assert workload_phase(phases) is WorkloadPhase.FAILED


def test_job_runs_only_once_every_worker_started() -> None:
    assert workload_phase([WorkerPhase.RUNNING, WorkerPhase.PENDING]) is WorkloadPhase.PENDING
    assert workload_phase([WorkerPhase.RUNNING, WorkerPhase.RUNNING]) is WorkloadPhase.RUNNING
    assert workload_phase([WorkerPhase.RUNNING, WorkerPhase.SUCCEEDED]) is WorkloadPhase.RUNNING
    assert workload_phase([WorkerPhase.UNKNOWN, WorkerPhase.RUNNING]) is WorkloadPhase.RUNNING


def test_job_succeeds_when_every_worker_succeeded() -> None:
    done = [WorkerPhase.SUCCEEDED, WorkerPhase.SUCCEEDED]
    assert workload_phase(done) is WorkloadPhase.SUCCEEDED
    assert workload_phase([]) is WorkloadPhase.PENDING


def test_kubernetes_driver_implements_the_driver_interface() -> None:
    assert issubclass(KubernetesDriver, ClusterDriver)
