"""Turning what a cluster reports (node and pod JSON) into the driver's dataclasses."""

from __future__ import annotations

from typing import Any

from queues.clusters.base import WorkerPhase, WorkloadPhase
from queues.clusters.k8s_objects import parse_count
from queues.clusters.k8s_state import parse_node, workloads_from_pods


def pod(index: int, status: dict[str, Any], job: str = "7", **metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"train-{job}-{index}",
            "namespace": "team-a",
            "labels": {
                "app.kubernetes.io/managed-by": "gpuplatform",
                "gpuplatform/job": job,
                "gpuplatform/worker": str(index),
            },
            "annotations": {"gpuplatform/job-id": job, "gpuplatform/planned-node": f"n{index}"},
            **metadata,
        },
        "spec": {},
        "status": status,
    }


def test_node_without_status_is_not_ready_and_offers_nothing() -> None:
    node = parse_node({"metadata": {"name": "fresh"}})
    assert node.name == "fresh"
    assert node.allocatable == {}
    assert not node.ready


def test_node_capacity_keeps_extended_resources_as_whole_counts() -> None:
    node = parse_node(
        {
            "metadata": {"name": "n"},
            "status": {
                "allocatable": {"cpu": "64", "nvidia.com/gpu": "8", "example.com/fpga": "1.5"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    assert node.allocatable == {"nvidia.com/gpu": 8, "example.com/fpga": 1}
    assert node.ready


def test_unreadable_quantities_count_as_zero() -> None:
    assert parse_count("8") == 8
    assert parse_count(4) == 4
    assert parse_count("lots") == 0
    assert parse_count("-2") == 0
    assert parse_count("NaN") == 0


def test_unschedulable_worker_explains_why_it_waits() -> None:
    waiting = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 1 Insufficient nvidia.com/gpu.",
            }
        ],
    }
    (status,) = workloads_from_pods([pod(0, {"phase": "Running"}), pod(1, waiting)])
    assert status.phase is WorkloadPhase.PENDING
    assert "worker 1: Unschedulable: 0/3 nodes are available" in status.message


def test_worker_on_an_unreachable_node_is_unknown_but_the_job_still_counts_as_running() -> None:
    (status,) = workloads_from_pods(
        [pod(0, {"phase": "Running"}), pod(1, {"phase": "Unknown", "reason": "NodeLost"})]
    )
    assert [w.phase for w in status.workers] == [WorkerPhase.RUNNING, WorkerPhase.UNKNOWN]
    assert status.phase is WorkloadPhase.RUNNING
    assert status.workers[1].node == "n1"  # pinned node from the annotation until bound


def test_pods_group_by_job_and_foreign_pods_are_skipped() -> None:
    foreign = {"metadata": {"name": "x", "namespace": "team-a", "labels": {}}, "status": {}}
    pods = [pod(1, {}, job="9"), pod(0, {}, job="9"), pod(0, {}, job="8"), foreign]
    statuses = workloads_from_pods(pods)
    assert [(s.job_id, [w.index for w in s.workers]) for s in statuses] == [
        ("8", [0]),
        ("9", [0, 1]),
    ]
