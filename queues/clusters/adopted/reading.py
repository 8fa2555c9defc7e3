"""Reading kubectl-applied workloads: the kinds taken in, a manifest into an `AdoptedWorkload`
(its pod sets, gang size, GPUs) or a `Refusal`, the flavors that match, and the pods the
controllers create numbered as the job's workers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

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


def dig(obj: Any, path: Sequence[str | int]) -> Any:
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
            job_spec = dig(job, ("template", "spec"))
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
    for container in dig(template, ("spec", "containers")) or []:
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
        template = dig(obj, pod_set.path)
        where = ".".join(str(p) for p in pod_set.path)
        if not isinstance(template, dict):
            return Refusal("InvalidWorkload", f"{where}: no pod template", ref)
        resource, count, why = _gpus(template, where)
        if why:
            return Refusal("InvalidWorkload", why, ref)
        asks.append((resource, count, pod_set.name))
        selector = dig(template, ("spec", "nodeSelector")) or {}
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
    first = dig(obj, (*sets[0].path, "spec", "containers", 0)) or {}
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
