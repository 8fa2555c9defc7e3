"""What the Kueue intake tests share: the applied workloads (as a kubectl user writes them), the
pods their controllers would create (kmock runs no controllers: the tests play them), and the
check that whatever the platform sent is valid Kubernetes."""

from __future__ import annotations

import copy
from typing import Any

import kmock

from queues.clusters import adopted
from tests.queues.clusters.k8s_emulator import (
    EVENTS,
    JOBS,
    JOBSETS,
    PODS,
    PYTORCHJOBS,
    EmulatedCluster,
    validate_manifest,
)

IMAGE = "pytorch/pytorch:2.4.0"
NAMESPACE = "team-team-a"  # the namespace of team "team-a" (manifests.team_namespace)
QUEUE = {"kueue.x-k8s.io/queue-name": "main"}
RESOURCES = {JOBS.plural: JOBS, JOBSETS.plural: JOBSETS, PYTORCHJOBS.plural: PYTORCHJOBS}


def pod_template(gpus: int = 8, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "trainer"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "trainer",
                    "image": IMAGE,
                    "command": ["torchrun", "train.py"],
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
            **spec,
        },
    }


def metadata(name: str, uid: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": NAMESPACE,
        "uid": uid,
        "labels": {**QUEUE, "project": "llama"},
        "annotations": annotations or {},
    }


def batch_job(
    name: str = "train", *, uid: str = "uid-job", workers: int = 2, gpus: int = 8, **over: Any
) -> dict[str, Any]:
    spec = {
        "suspend": True,
        "parallelism": workers,
        "completions": workers,
        "completionMode": "Indexed",
        "template": pod_template(gpus),
    }
    spec.update(over.pop("spec", {}))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(name, uid, over.pop("annotations", None)),
        "spec": spec,
    }


def jobset(name: str = "sft", *, uid: str = "uid-jobset", **over: Any) -> dict[str, Any]:
    """Two replicated jobs: 1 x 1 driver pod and 1 replica x 1 pod of workers, 8 GPUs each."""

    def child(replicas: int, pods: int) -> dict[str, Any]:
        return {
            "replicas": replicas,
            "template": {
                "spec": {
                    "parallelism": pods,
                    "completions": pods,
                    "completionMode": "Indexed",
                    "template": pod_template(8),
                }
            },
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": metadata(name, uid, over.pop("annotations", None)),
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                {"name": "driver", **child(1, 1)},
                {"name": "workers", **child(1, 1)},
            ],
        },
    }


def pytorchjob(name: str = "ddp", *, uid: str = "uid-pytorch", **over: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": metadata(name, uid, over.pop("annotations", None)),
        "spec": {
            "runPolicy": {"suspend": True},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": pod_template(8)},
                "Worker": {"replicas": 1, "template": pod_template(8)},
            },
        },
    }


def resource_of(obj: dict[str, Any]) -> kmock.resource:
    return next(r for r in RESOURCES.values() if adopted.kind_of(obj["kind"]).plural == r.plural)


def apply(api: EmulatedCluster, obj: dict[str, Any]) -> None:
    """kubectl apply: the object as written (it is valid, as the API server would insist)."""
    check_object(obj)
    api.put(resource_of(obj), copy.deepcopy(obj))


def current(api: EmulatedCluster, obj: dict[str, Any]) -> dict[str, Any]:
    found = api.get(resource_of(obj), obj["metadata"]["namespace"], obj["metadata"]["name"])
    assert found is not None
    return found


def templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    sets, why = adopted.pod_sets(obj)
    assert not why
    return [adopted.dig(obj, s.path) for s in sets]


def required_hosts(template: dict[str, Any]) -> list[list[str]]:
    """The hostnames each required node selector term of the template allows."""
    affinity = template["spec"].get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return [
        e["values"]
        for term in required.get("nodeSelectorTerms", [])
        for e in term.get("matchExpressions", [])
        if e["key"] == "kubernetes.io/hostname"
    ]


def play_controller(
    api: EmulatedCluster, obj: dict[str, Any], nodes: list[str], phase: str = "Running"
) -> list[str]:
    """Create the pods the object's controller creates once it is unsuspended: its templates
    (with what the platform injected), the controller's own labels, placed by the scheduler on
    `nodes` in turn. Returns their names."""
    live = current(api, obj)
    kind, name = live["kind"], live["metadata"]["name"]
    names = []
    sets, _ = adopted.pod_sets(live)
    for pod_set in sets:
        template = adopted.dig(live, pod_set.path)
        for i in range(pod_set.count):
            labels = dict(template["metadata"].get("labels") or {})
            if kind == "Job":
                labels.update({"batch.kubernetes.io/job-name": name, "job-name": name})
                labels[adopted.COMPLETION_INDEX] = str(i)
                pod_name = f"{name}-{i}-x{i}"
            elif kind == "JobSet":
                labels.update(
                    {
                        "jobset.sigs.k8s.io/jobset-name": name,
                        "jobset.sigs.k8s.io/replicatedjob-name": pod_set.name,
                        adopted.JOBSET_JOB_INDEX: str(i // pod_set.parallelism),
                        adopted.COMPLETION_INDEX: str(i % pod_set.parallelism),
                    }
                )
                pod_name = f"{name}-{pod_set.name}-{i // pod_set.parallelism}-{i}-x"
            else:
                labels.update(
                    {
                        "training.kubeflow.org/job-name": name,
                        "training.kubeflow.org/replica-type": pod_set.name,
                        adopted.KUBEFLOW_REPLICA_INDEX: str(i),
                    }
                )
                pod_name = f"{name}-{pod_set.name}-{i}"
            node = nodes[len(names) % len(nodes)]
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": NAMESPACE,
                    "labels": labels,
                    "annotations": dict(template["metadata"].get("annotations") or {}),
                },
                "spec": {**copy.deepcopy(template["spec"]), "nodeName": node},
                "status": {"phase": phase},
            }
            validate_manifest(pod)
            api.put(PODS, pod)
            names.append(pod_name)
    return names


def controller_deletes_pods(api: EmulatedCluster, names: list[str]) -> None:
    """A suspended Job's controller deletes its active pods."""
    for name in names:
        api.delete_pod(NAMESPACE, name)


def check_object(obj: dict[str, Any]) -> None:
    """A batch Job validates whole; a JobSet's or PyTorchJob's pod templates (their CRDs have
    no schema in kubernetes-validate) validate as the templates of a core PodTemplate."""
    if obj["kind"] == "Job":
        validate_manifest(obj)
        return
    for i, template in enumerate(templates(obj)):
        validate_manifest(
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": f"t{i}", "namespace": NAMESPACE},
                "template": template,
            }
        )


def check_everything_sent(api: EmulatedCluster) -> None:
    """Every create (pods, services, namespaces, events) validates, and every adopted object
    the platform patched is still valid after the patches."""
    patched = set()
    for request in api.requests():
        if request.method.value in ("POST", "DELETE") and request.data:
            validate_manifest(request.data)
        if request.method.value == "PATCH" and request.resource in RESOURCES.values():
            patched.add((request.resource, request.namespace, request.name))
    for resource, namespace, name in patched:
        obj = api.get(resource, namespace, name)
        if obj is not None:
            check_object(obj)


def events_about(api: EmulatedCluster, name: str) -> list[dict[str, Any]]:
    return [e for e in api.stored(EVENTS) if e["involvedObject"]["name"] == name]


def condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == adopted.CONDITION_TYPE), None)
