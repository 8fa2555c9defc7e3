"""queues/clusters/adopted.py: kubectl-applied workloads read into gangs (or refused with the
reason), the patches that unsuspend, suspend and restore them, and their pods as workers."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from queues.clusters import adopted
from queues.clusters.base import FlavorDefinition
from tests.queues.clusters.k8s_emulator import validate_manifest
from tests.queues.services import kueue_world as kw

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LABELS = {"app.kubernetes.io/managed-by": "gpuplatform", "gpuplatform/job": "7"}


def applied(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`patch` applied to `obj` as the API server applies a JSON merge patch."""
    out = copy.deepcopy(obj)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = applied(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def test_a_batch_job_is_a_gang_of_parallelism_workers() -> None:
    parsed = adopted.parse(kw.batch_job(workers=3, gpus=4))
    assert isinstance(parsed, adopted.AdoptedWorkload)
    assert (parsed.gang_size, parsed.gpus_per_worker, parsed.resource_name) == (
        3,
        4,
        "nvidia.com/gpu",
    )
    assert (parsed.queue, parsed.image, parsed.command) == (
        "main",
        kw.IMAGE,
        ("torchrun", "train.py"),
    )


def test_the_service_class_is_the_annotation_else_kueues_priority_class_label() -> None:
    obj = kw.batch_job()
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "production"
    parsed = adopted.parse(obj)
    assert isinstance(parsed, adopted.AdoptedWorkload) and parsed.service_class == "production"
    obj["metadata"]["annotations"]["gpuplatform/service-class"] = "spot"
    parsed = adopted.parse(obj)
    assert isinstance(parsed, adopted.AdoptedWorkload) and parsed.service_class == "spot"


def test_a_jobset_counts_replicas_times_parallelism_and_a_pytorchjob_master_plus_workers() -> None:
    obj = kw.jobset()
    obj["spec"]["replicatedJobs"][1]["replicas"] = 3
    child = obj["spec"]["replicatedJobs"][1]["template"]["spec"]
    child["parallelism"] = child["completions"] = 2
    parsed = adopted.parse(obj)
    assert isinstance(parsed, adopted.AdoptedWorkload)
    assert parsed.gang_size == 1 + 3 * 2
    assert [(p.name, p.offset, p.count) for p in parsed.pod_sets] == [
        ("driver", 0, 1),
        ("workers", 1, 6),
    ]
    torch = kw.pytorchjob()
    torch["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 4
    parsed = adopted.parse(torch)
    assert isinstance(parsed, adopted.AdoptedWorkload) and parsed.gang_size == 5


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"completions": 4}, "completions (4) must equal parallelism (2)"),
        ({"completions": None}, "completions is unset with parallelism 2 (a work queue)"),
        ({"parallelism": 0}, "parallelism must be a whole number of at least 1"),
    ],
)
def test_completions_other_than_parallelism_are_refused_with_the_reason(
    change: dict[str, Any], words: str
) -> None:
    obj = kw.batch_job(workers=2)
    obj["spec"].update(change)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    refusal = adopted.parse(obj)
    assert isinstance(refusal, adopted.Refusal) and refusal.reason == "InvalidWorkload"
    assert words in refusal.message


def test_pods_without_gpus_or_with_two_gpu_resources_are_refused() -> None:
    obj = kw.batch_job()
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "4"}}
    refusal = adopted.parse(obj)
    assert isinstance(refusal, adopted.Refusal) and "asks for no GPU" in refusal.message
    limits = {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "1"}
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": limits}
    refusal = adopted.parse(obj)
    assert isinstance(refusal, adopted.Refusal) and "several GPU resources" in refusal.message


def test_the_flavor_follows_the_gpu_product_node_selector() -> None:
    flavors = [
        FlavorDefinition("any-gpu", "nvidia.com/gpu"),
        FlavorDefinition("h100", "nvidia.com/gpu", {kw.adopted.GPU_PRODUCT_LABEL: "H100"}),
        FlavorDefinition("a100", "nvidia.com/gpu", {kw.adopted.GPU_PRODUCT_LABEL: "A100"}),
        FlavorDefinition("mig", "nvidia.com/mig-1g.10gb"),
    ]
    obj = kw.batch_job()
    obj["spec"]["template"]["spec"]["nodeSelector"] = {adopted.GPU_PRODUCT_LABEL: "A100"}
    parsed = adopted.parse(obj)
    assert isinstance(parsed, adopted.AdoptedWorkload)
    assert [f.name for f in adopted.matching_flavors(parsed, flavors)] == ["a100", "any-gpu"]
    named = adopted.parse(kw.batch_job(annotations={"gpuplatform/flavor": "h100"}))
    assert isinstance(named, adopted.AdoptedWorkload)
    assert [f.name for f in adopted.matching_flavors(named, flavors)] == ["h100"]


def test_admission_adds_the_planned_hosts_to_each_required_term_and_is_idempotent() -> None:
    obj = kw.batch_job()
    mine = {"key": "zone", "operator": "In", "values": ["z1"]}
    terms = [{"matchExpressions": [mine]}, {"matchExpressions": [{**mine, "values": ["z2"]}]}]
    obj["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }
    obj["metadata"]["resourceVersion"] = "41"
    patch = adopted.admit_patch(obj, job_id="7", labels=LABELS, nodes=["n2", "n1"])
    assert patch["metadata"] == {"resourceVersion": "41"}  # a change made meanwhile: 409
    after = applied(obj, patch)
    validate_manifest(after)
    assert after["spec"]["suspend"] is False
    template = after["spec"]["template"]
    required = template["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    host = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]}
    assert required == [
        {"matchExpressions": [mine, host]},
        {"matchExpressions": [{**mine, "values": ["z2"]}, host]},
    ]
    assert template["metadata"]["labels"] == {
        "app": "trainer",
        **LABELS,
        "gpuplatform/podset": "main",
    }
    assert adopted.injected_job(after) == "7"
    assert adopted.admit_patch(after, job_id="7", labels=LABELS, nodes=["n1", "n2"]) == {}


def test_suspension_then_restore_gives_back_the_templates_as_applied() -> None:
    obj = kw.pytorchjob()
    saved = adopted.originals(obj)
    running = applied(obj, adopted.admit_patch(obj, job_id="7", labels=LABELS, nodes=["n1"]))
    assert adopted.suspend_patch(running) == {"spec": {"runPolicy": {"suspend": True}}}
    stopped = applied(running, adopted.suspend_patch(running))
    assert adopted.suspend_patch(stopped) == {}
    assert adopted.restorable(stopped)
    assert not adopted.restorable({**stopped, "status": {"startTime": "2026-03-02T09:00:00Z"}})
    restored = applied(stopped, adopted.restore_patch(stopped, saved))
    assert restored == obj
    assert adopted.injected_job(restored) == ""
    assert adopted.restore_patch(restored, saved) == {}


def test_the_condition_keeps_the_others_and_is_not_sent_twice() -> None:
    obj = kw.batch_job()
    obj["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    patch = adopted.condition_patch(obj, status="False", reason="UnknownQueue", message="m", at=AT)
    conditions = patch["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["Suspended", "GpuplatformAdmitted"]
    validate_manifest(applied(obj, patch))
    again = applied(obj, patch)
    assert (
        adopted.condition_patch(again, status="False", reason="UnknownQueue", message="m", at=AT)
        == {}
    )
    assert adopted.condition_patch(again, status="False", reason="Queued", message="n", at=AT)


def test_the_event_is_valid_and_named_by_what_it_says() -> None:
    ref = adopted.ref_of(kw.batch_job())
    event = adopted.event_manifest(ref, type_="Warning", reason="NotSuspended", message="m", at=AT)
    validate_manifest(event)
    same = adopted.event_manifest(ref, type_="Warning", reason="NotSuspended", message="m", at=AT)
    other = adopted.event_manifest(ref, type_="Warning", reason="UnknownQueue", message="m", at=AT)
    assert event["metadata"]["name"] == same["metadata"]["name"] != other["metadata"]["name"]
    assert event["involvedObject"]["uid"] == "uid-job"


def pod(
    name: str, labels: dict[str, str], offset: int, size: int, parallelism: int = 1
) -> dict[str, Any]:
    annotations = {
        adopted.WORKER_OFFSET_ANNOTATION: str(offset),
        adopted.PODSET_SIZE_ANNOTATION: str(size),
        adopted.PARALLELISM_ANNOTATION: str(parallelism),
    }
    return {"metadata": {"name": name, "labels": labels, "annotations": annotations}}


def test_the_controllers_pods_are_numbered_as_workers() -> None:
    jobset = [
        pod("d", {adopted.JOBSET_JOB_INDEX: "0", adopted.COMPLETION_INDEX: "0"}, 0, 1),
        pod("w1", {adopted.JOBSET_JOB_INDEX: "1", adopted.COMPLETION_INDEX: "1"}, 1, 4, 2),
        pod("w0", {adopted.JOBSET_JOB_INDEX: "0", adopted.COMPLETION_INDEX: "1"}, 1, 4, 2),
    ]
    assert adopted.worker_indexes(jobset) == {"d": 0, "w1": 4, "w0": 2}
    torch = [
        pod("m", {adopted.KUBEFLOW_REPLICA_INDEX: "0"}, 0, 1),
        pod("w", {adopted.KUBEFLOW_REPLICA_INDEX: "1"}, 1, 2),
    ]
    assert adopted.worker_indexes(torch) == {"m": 0, "w": 2}
    non_indexed = [pod("train-b", {}, 0, 2), pod("train-a", {}, 0, 2)]
    assert adopted.worker_indexes(non_indexed) == {"train-a": 0, "train-b": 1}
    assert adopted.worker_indexes([{"metadata": {"name": "platform-pod"}}]) == {}
