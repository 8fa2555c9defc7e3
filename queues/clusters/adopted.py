"""Kueue-compatible intake, the pure part: manifests of kubectl-applied workloads in, typed
workloads or refusals out, and the patch bodies the driver sends (docs/KUEUE.md).

A `batch/v1` Job, a JobSet (`jobset.x-k8s.io/v1alpha2`) or a Kubeflow PyTorchJob
(`kubeflow.org/v1`) created suspended with the label ``kueue.x-k8s.io/queue-name`` (or
``gpuplatform/queue``) becomes a platform job. `parse` reads its gang from the pod templates
(its *pod sets*, as Kueue calls them); `admit_patch` unsuspends it and injects, into every pod
template, a required node affinity on ``kubernetes.io/hostname`` for the planned nodes and the
platform's labels (Kueue's podset info injection); `suspend_patch` suspends it again and
`restore_patch` puts the templates back as they were applied. `worker_indexes` maps the pods the
Job, JobSet and PyTorchJob controllers create to the job's workers.

No Django here: plain dicts and frozen dataclasses only.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from queues.clusters import manifests
from queues.clusters.base import FlavorDefinition

Manifest = dict[str, Any]

QUEUE_LABELS = ("kueue.x-k8s.io/queue-name", "gpuplatform/queue")
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"  # Kueue's WorkloadPriorityClass
SERVICE_CLASS_ANNOTATION = "gpuplatform/service-class"
OWNER_ANNOTATION = "gpuplatform/owner"
FLAVOR_ANNOTATION = "gpuplatform/flavor"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCES = ("nvidia.com/gpu",)
MIG_PREFIX = "nvidia.com/mig-"
CONDITION_TYPE = "GpuplatformAdmitted"
EVENT_SOURCE = "gpuplatform"

# injected into every pod template, carried by the pods the controllers create
PODSET_LABEL = "gpuplatform/podset"
WORKER_OFFSET_ANNOTATION = "gpuplatform/worker-offset"  # index of the pod set's first worker
PODSET_SIZE_ANNOTATION = "gpuplatform/podset-size"  # its workers
PARALLELISM_ANNOTATION = "gpuplatform/podset-parallelism"  # pods per child Job (JobSet)

# what the controllers put on the pods they create
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
KUBEFLOW_REPLICA_INDEX = "training.kubeflow.org/replica-index"
PYTORCH_ROLES = ("Master", "Worker")


@dataclass(frozen=True)
class Kind:
    """A workload kind the platform takes in."""

    kind: str
    group: str
    version: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


JOB = Kind("Job", "batch", "v1", "jobs")
JOBSET = Kind("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets")
PYTORCHJOB = Kind("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs")
KINDS = (JOB, JOBSET, PYTORCHJOB)


def kind_of(name: str) -> Kind:
    return next(k for k in KINDS if k.kind == name)


@dataclass(frozen=True)
class ObjectRef:
    """Which object: its kind, namespace, name and uid (a re-created object is another one)."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.api_version} {self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class Listing:
    """What the driver listed: the candidate objects (a queue label), and the kinds it could
    list at all (a kind whose CRD is not installed is left out: its objects are not gone)."""

    objects: tuple[Manifest, ...]
    kinds: frozenset[str]


@dataclass(frozen=True)
class PodSet:
    """One pod template of the workload: ``path`` leads to its PodTemplateSpec; its workers are
    ``offset`` .. ``offset + count - 1``."""

    name: str
    path: tuple[str | int, ...]
    count: int
    offset: int
    parallelism: int = 1  # pods per child Job (a JobSet's replicated job)


@dataclass(frozen=True)
class AdoptedWorkload:
    """A workload the platform may take in, read from its manifest."""

    ref: ObjectRef
    labels: Mapping[str, str]
    queue: str
    owner: str  # "" : the team's default owner
    service_class: str  # "" : the queue's default class
    flavor: str  # "" : matched from the node selector
    resource_name: str
    gpu_product: str  # the templates' nodeSelector on nvidia.com/gpu.product, or ""
    gpus_per_worker: int
    pod_sets: tuple[PodSet, ...]
    image: str
    command: tuple[str, ...] = ()
    suspended: bool = True

    @property
    def gang_size(self) -> int:
        return sum(p.count for p in self.pod_sets)


@dataclass(frozen=True)
class Refusal:
    """Why a workload is not taken in: ``reason`` is a CamelCase word (the Event's and the
    condition's reason), ``message`` the sentence for its owner."""

    reason: str
    message: str
    ref: ObjectRef | None = field(default=None, compare=False)


# -- reading --------------------------------------------------------------------------------


def ref_of(obj: Mapping[str, Any]) -> ObjectRef:
    metadata = obj.get("metadata") or {}
    return ObjectRef(
        kind=str(obj.get("kind", "")),
        api_version=str(obj.get("apiVersion", "")),
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        uid=str(metadata.get("uid", "")),
    )


def queue_name(obj: Mapping[str, Any]) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return next((str(labels[key]) for key in QUEUE_LABELS if labels.get(key)), "")


def is_candidate(obj: Mapping[str, Any]) -> bool:
    """Whether it asks for the platform: one of its kinds, with a queue label."""
    return any(obj.get("kind") == k.kind for k in KINDS) and bool(queue_name(obj))


def suspended(obj: Mapping[str, Any]) -> bool:
    spec = obj.get("spec") or {}
    if obj.get("kind") == PYTORCHJOB.kind:
        return bool((spec.get("runPolicy") or {}).get("suspend"))
    return bool(spec.get("suspend"))


def _dig(obj: Any, path: Sequence[str | int]) -> Any:
    for step in path:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def _count(value: Any, default: int = 1) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(str(value))
    except ValueError:
        return None
    return number if number >= 0 else None


def _job_pods(spec: Mapping[str, Any], where: str) -> tuple[int, str]:
    """Pods one batch Job runs at once (its parallelism), or 0 and why it is not supported."""
    parallelism = _count(spec.get("parallelism"))
    if parallelism is None or parallelism < 1:
        return 0, f"{where}parallelism must be a whole number of at least 1"
    completions = _count(spec.get("completions"), default=0)
    if completions is None:
        return 0, f"{where}completions must be a whole number"
    if completions and completions != parallelism:
        return 0, (
            f"{where}completions ({completions}) must equal parallelism ({parallelism}): the "
            "platform runs the gang of parallelism pods once, all together"
        )
    if not completions and parallelism != 1:
        return 0, (
            f"{where}completions is unset with parallelism {parallelism} (a work queue); set "
            "completions to parallelism"
        )
    return parallelism, ""


def pod_sets(obj: Mapping[str, Any]) -> tuple[list[PodSet], str]:
    """The workload's pod sets, or an empty list and why its shape is not supported."""
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    found: list[PodSet] = []
    offset = 0
    if kind == JOB.kind:
        pods, why = _job_pods(spec, "spec.")
        if why:
            return [], why
        return [PodSet("main", ("spec", "template"), pods, 0, pods)], ""
    if kind == JOBSET.kind:
        replicated = spec.get("replicatedJobs")
        if not isinstance(replicated, list) or not replicated:
            return [], "spec.replicatedJobs: a JobSet needs at least one replicated job"
        for i, job in enumerate(replicated):
            where = f"spec.replicatedJobs[{i}]."
            replicas = _count(job.get("replicas") if isinstance(job, dict) else None)
            job_spec = _dig(job, ("template", "spec"))
            if replicas is None or replicas < 1 or not isinstance(job_spec, dict):
                return [], f"{where}replicas and template.spec: at least one replica of a Job"
            pods, why = _job_pods(job_spec, f"{where}template.spec.")
            if why:
                return [], why
            name = str(job.get("name") or f"job-{i}")
            path: tuple[str | int, ...] = (
                "spec",
                "replicatedJobs",
                i,
                "template",
                "spec",
                "template",
            )
            found.append(PodSet(name, path, replicas * pods, offset, pods))
            offset += replicas * pods
        return found, ""
    if kind == PYTORCHJOB.kind:
        specs = spec.get("pytorchReplicaSpecs")
        if not isinstance(specs, dict) or not specs:
            return [], "spec.pytorchReplicaSpecs: a PyTorchJob needs a Master or Worker"
        unknown = sorted(set(specs) - set(PYTORCH_ROLES))
        if unknown:
            return [], f"spec.pytorchReplicaSpecs: unknown replica type(s) {', '.join(unknown)}"
        for role in PYTORCH_ROLES:
            if role not in specs:
                continue
            replicas = _count((specs[role] or {}).get("replicas"))
            if replicas is None or replicas < 1:
                return [], f"spec.pytorchReplicaSpecs.{role}.replicas must be at least 1"
            path = ("spec", "pytorchReplicaSpecs", role, "template")
            found.append(PodSet(role.lower(), path, replicas, offset))
            offset += replicas
        return found, ""
    return [], f"kind {kind} is not one the platform takes in"


def _gpus(template: Mapping[str, Any], where: str) -> tuple[str, int, str]:
    """(resource, GPUs per pod, why not) of one pod template: the sum over its containers of
    their GPU limits (else requests) of one GPU resource."""
    totals: dict[str, int] = {}
    for container in _dig(template, ("spec", "containers")) or []:
        resources = container.get("resources") or {}
        amounts = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        for name, quantity in amounts.items():
            if name not in GPU_RESOURCES and not str(name).startswith(MIG_PREFIX):
                continue
            try:
                value = Decimal(str(quantity))
            except InvalidOperation:
                value = Decimal(-1)
            if value < 0 or value != value.to_integral_value():
                return "", 0, f"{where}: {name} must be a whole number, not {quantity!r}"
            totals[name] = totals.get(name, 0) + int(value)
    asked = {name: n for name, n in totals.items() if n > 0}
    if len(asked) > 1:
        return "", 0, f"{where}: asks for several GPU resources ({', '.join(sorted(asked))})"
    if not asked:
        return (
            "",
            0,
            (
                f"{where}: asks for no GPU (nvidia.com/gpu or nvidia.com/mig-*); every pod of a "
                "workload the platform runs asks for the same GPUs"
            ),
        )
    name, count = next(iter(asked.items()))
    return name, count, ""


def parse(obj: Mapping[str, Any]) -> AdoptedWorkload | Refusal:
    """The workload `obj` describes, or why the platform cannot take it in."""
    ref = ref_of(obj)
    if not suspended(obj):
        where = "spec.runPolicy.suspend" if ref.kind == PYTORCHJOB.kind else "spec.suspend"
        return Refusal(
            "NotSuspended",
            f"{where} is not true: the platform only takes in workloads created suspended (it "
            "unsuspends them when it admits them); delete it and apply it with "
            f"{where}: true",
            ref,
        )
    sets, why = pod_sets(obj)
    if why:
        return Refusal("InvalidWorkload", why, ref)
    asks: list[tuple[str, int, str]] = []
    products: set[str] = set()
    for pod_set in sets:
        template = _dig(obj, pod_set.path)
        where = ".".join(str(p) for p in pod_set.path)
        if not isinstance(template, dict):
            return Refusal("InvalidWorkload", f"{where}: no pod template", ref)
        resource, count, why = _gpus(template, where)
        if why:
            return Refusal("InvalidWorkload", why, ref)
        asks.append((resource, count, pod_set.name))
        selector = _dig(template, ("spec", "nodeSelector")) or {}
        products.add(str(selector.get(GPU_PRODUCT_LABEL, "")))
    if len({(r, c) for r, c, _ in asks}) > 1:
        each = ", ".join(f"{name}: {count} {resource}" for resource, count, name in asks)
        return Refusal(
            "InvalidWorkload",
            f"its pods ask for different GPUs ({each}); every worker of a gang asks for the same",
            ref,
        )
    if len(products) > 1:
        return Refusal(
            "InvalidWorkload",
            f"its pod templates select different {GPU_PRODUCT_LABEL} "
            f"({', '.join(sorted(p or '(none)' for p in products))})",
            ref,
        )
    metadata = obj.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    annotations = metadata.get("annotations") or {}
    first = _dig(obj, (*sets[0].path, "spec", "containers", 0)) or {}
    return AdoptedWorkload(
        ref=ref,
        labels=labels,
        queue=queue_name(obj),
        owner=str(annotations.get(OWNER_ANNOTATION, "")),
        service_class=str(
            annotations.get(SERVICE_CLASS_ANNOTATION) or labels.get(PRIORITY_CLASS_LABEL, "")
        ),
        flavor=str(annotations.get(FLAVOR_ANNOTATION, "")),
        resource_name=asks[0][0],
        gpu_product=products.pop(),
        gpus_per_worker=asks[0][1],
        pod_sets=tuple(sets),
        image=str(first.get("image", "")),
        command=tuple(str(word) for word in [*(first.get("command") or [])]),
    )


def matching_flavors(
    workload: AdoptedWorkload, flavors: Iterable[FlavorDefinition]
) -> list[FlavorDefinition]:
    """The flavors that could serve the workload, most specific first: its resource, and a
    node selector that agrees with the templates' ``nvidia.com/gpu.product`` (a flavor that
    selects no product serves any). An explicit ``gpuplatform/flavor`` names one flavor."""
    pool = [f for f in flavors if f.resource_name == workload.resource_name]
    if workload.flavor:
        return [f for f in flavors if f.name == workload.flavor]
    if workload.gpu_product:
        pool = [
            f
            for f in pool
            if f.node_selector.get(GPU_PRODUCT_LABEL, workload.gpu_product) == workload.gpu_product
        ]
    return sorted(pool, key=lambda f: (-len(f.node_selector), f.name))


# -- patches --------------------------------------------------------------------------------


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> Manifest:
    """The JSON merge patch (RFC 7386) that turns `old` into `new`: changed keys, removed keys
    as null, lists replaced whole."""
    patch: Manifest = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            inner = merge_patch(before, value)
            if inner:
                patch[key] = inner
        elif key not in old or before != value:
            patch[key] = copy.deepcopy(value)
    return patch


def _set_suspend(obj: Manifest, value: bool) -> None:
    spec = obj.setdefault("spec", {})
    if obj.get("kind") == PYTORCHJOB.kind:
        spec.setdefault("runPolicy", {})["suspend"] = value
    else:
        spec["suspend"] = value


def _hostname_affinity(affinity: Mapping[str, Any] | None, nodes: Sequence[str]) -> Manifest:
    """`affinity` with its required node terms each also requiring a planned node (node
    selector terms are ORed, a term's expressions ANDed: the planned nodes are added to every
    term, the user's own requirements kept)."""
    result = copy.deepcopy(dict(affinity or {}))
    node_affinity = result.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    expression = {"key": manifests.HOSTNAME_LABEL, "operator": "In", "values": sorted(nodes)}
    terms = [t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict)] or [{}]
    for term in terms:
        kept = [
            e
            for e in term.get("matchExpressions") or []
            if e.get("key") != manifests.HOSTNAME_LABEL
        ]
        term["matchExpressions"] = [*kept, expression]
    required["nodeSelectorTerms"] = terms
    return result


def injected_job(obj: Mapping[str, Any]) -> str:
    """The platform job whose labels the pod templates carry ("" when none)."""
    sets, _ = pod_sets(obj)
    for pod_set in sets:
        labels = _dig(obj, (*pod_set.path, "metadata", "labels")) or {}
        if labels.get(manifests.MANAGED_BY_KEY) == manifests.MANAGED_BY:
            return str(labels.get(manifests.JOB_LABEL, ""))
    return ""


def originals(obj: Mapping[str, Any]) -> dict[str, Manifest]:
    """What the injection changes in each pod template, as applied (to restore it later)."""
    out: dict[str, Manifest] = {}
    for pod_set in pod_sets(obj)[0]:
        template = _dig(obj, pod_set.path) or {}
        metadata = template.get("metadata") or {}
        out[pod_set.name] = {
            "labels": copy.deepcopy(metadata.get("labels")),
            "annotations": copy.deepcopy(metadata.get("annotations")),
            "affinity": copy.deepcopy(_dig(template, ("spec", "affinity"))),
        }
    return out


def _rewritten(obj: Mapping[str, Any], edit: Any) -> Manifest:
    new = copy.deepcopy(dict(obj))
    for pod_set in pod_sets(new)[0]:
        template = _dig(new, pod_set.path)
        if isinstance(template, dict):
            edit(pod_set, template)
    return new


def _precondition(patch: Manifest, obj: Mapping[str, Any]) -> Manifest:
    """Send the resourceVersion read with the patch: a change made meanwhile is a 409."""
    version = (obj.get("metadata") or {}).get("resourceVersion")
    if patch and version:
        patch.setdefault("metadata", {})["resourceVersion"] = version
    return patch


def admit_patch(
    obj: Mapping[str, Any],
    *,
    job_id: str,
    labels: Mapping[str, str],
    nodes: Sequence[str],
) -> Manifest:
    """Unsuspend `obj` pinned to `nodes`: every pod template gets the platform's `labels`, its
    pod set's label and worker annotations, and a required node affinity on the planned nodes.
    Empty when `obj` is already so."""
    gang = sum(p.count for p in pod_sets(obj)[0])

    def inject(pod_set: PodSet, template: Manifest) -> None:
        metadata = template.setdefault("metadata", {})
        metadata["labels"] = {
            **(metadata.get("labels") or {}),
            **labels,
            PODSET_LABEL: manifests.label_value(pod_set.name),
        }
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            manifests.JOB_ID_ANNOTATION: job_id,
            manifests.GANG_SIZE_ANNOTATION: str(gang),
            WORKER_OFFSET_ANNOTATION: str(pod_set.offset),
            PODSET_SIZE_ANNOTATION: str(pod_set.count),
            PARALLELISM_ANNOTATION: str(pod_set.parallelism),
        }
        pod_spec = template.setdefault("spec", {})
        pod_spec["affinity"] = _hostname_affinity(pod_spec.get("affinity"), nodes)

    new = _rewritten(obj, inject)
    _set_suspend(new, False)
    return _precondition(merge_patch(obj, new), obj)


def suspend_patch(obj: Mapping[str, Any]) -> Manifest:
    """Suspend `obj` (its controller then deletes its pods); empty when it is suspended."""
    if suspended(obj):
        return {}
    if obj.get("kind") == PYTORCHJOB.kind:
        return {"spec": {"runPolicy": {"suspend": True}}}
    return {"spec": {"suspend": True}}


def restorable(obj: Mapping[str, Any]) -> bool:
    """Whether its templates may be put back now: suspended, and (a batch Job) its controller
    has seen it (no active pods, no start time: the API refuses template changes before)."""
    status = obj.get("status") or {}
    return suspended(obj) and not status.get("active") and not status.get("startTime")


def restore_patch(obj: Mapping[str, Any], saved: Mapping[str, Mapping[str, Any]]) -> Manifest:
    """Put the pod templates back as applied (`saved`: `originals` at intake); empty when
    nothing of the platform's is left in them."""

    def restore(pod_set: PodSet, template: Manifest) -> None:
        before = saved.get(pod_set.name)
        if before is None:
            return
        metadata = template.setdefault("metadata", {})
        for key in ("labels", "annotations"):
            if before.get(key) is None:
                metadata.pop(key, None)
            else:
                metadata[key] = copy.deepcopy(before[key])
        if not metadata:
            template.pop("metadata")
        pod_spec = template.setdefault("spec", {})
        if before.get("affinity") is None:
            pod_spec.pop("affinity", None)
        else:
            pod_spec["affinity"] = copy.deepcopy(before["affinity"])

    return _precondition(merge_patch(obj, _rewritten(obj, restore)), obj)


def condition_patch(
    obj: Mapping[str, Any], *, status: str, reason: str, message: str, at: datetime
) -> Manifest:
    """A status patch that sets the platform's condition (the other conditions kept, as a merge
    patch replaces the list); empty when the object already says exactly this."""
    conditions = [c for c in (obj.get("status") or {}).get("conditions") or [] if c]
    mine = next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)
    if mine is not None and (mine.get("status"), mine.get("reason"), mine.get("message")) == (
        status,
        reason,
        message,
    ):
        return {}
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": stamp,
    }
    others = [c for c in conditions if c.get("type") != CONDITION_TYPE]
    return {"status": {"conditions": [*others, condition]}}


def event_manifest(
    ref: ObjectRef, *, type_: str, reason: str, message: str, at: datetime
) -> Manifest:
    """A core/v1 Event about `ref`; its name is stable for one reason and message, so the same
    report made twice is one Event (the second create is a 409)."""
    digest = hashlib.sha256(f"{ref.uid}:{reason}:{message}".encode()).hexdigest()[:12]
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{ref.name[:200]}.{digest}",
            "namespace": ref.namespace,
            "labels": {manifests.MANAGED_BY_KEY: manifests.MANAGED_BY},
        },
        "involvedObject": {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "namespace": ref.namespace,
            "name": ref.name,
            "uid": ref.uid,
        },
        "type": type_,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": EVENT_SOURCE},
        "reportingComponent": EVENT_SOURCE,
        "reportingInstance": EVENT_SOURCE,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


# -- the controllers' pods -----------------------------------------------------------------


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def worker_indexes(pods: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Pod name -> worker index, for the pods of an adopted workload (those carrying the
    injected worker annotations). The index is the pod set's offset plus the pod's index in it:
    a PyTorchJob's replica index, a JobSet child Job's index x parallelism + completion index,
    an Indexed Job's completion index. Pods without one (a NonIndexed Job) take the pod set's
    free indexes in name order."""
    out: dict[str, int] = {}
    unnumbered: list[tuple[str, int, int]] = []
    for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name", ""))):
        metadata = pod.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        labels = metadata.get("labels") or {}
        offset = _int(annotations.get(WORKER_OFFSET_ANNOTATION))
        size = _int(annotations.get(PODSET_SIZE_ANNOTATION))
        if offset is None or size is None:
            continue
        name = str(metadata.get("name", ""))
        within = _int(labels.get(KUBEFLOW_REPLICA_INDEX))
        completion = _int(labels.get(COMPLETION_INDEX, annotations.get(COMPLETION_INDEX)))
        child = _int(labels.get(JOBSET_JOB_INDEX))
        if within is None and child is not None and completion is not None:
            within = child * (_int(annotations.get(PARALLELISM_ANNOTATION)) or 1) + completion
        elif within is None and child is None:
            within = completion
        if within is None or not 0 <= within < size:
            unnumbered.append((name, offset, size))
        else:
            out[name] = offset + within
    for name, offset, size in unnumbered:
        used = set(out.values())
        free = next((i for i in range(offset, offset + size) if i not in used), offset + size)
        out[name] = free
    return out
