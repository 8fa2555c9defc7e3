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

from queues.clusters.adopted.patches import (
    admit_patch,
    condition_patch,
    event_manifest,
    injected_job,
    merge_patch,
    originals,
    restorable,
    restore_patch,
    suspend_patch,
)
from queues.clusters.adopted.reading import (
    COMPLETION_INDEX,
    CONDITION_TYPE,
    FLAVOR_ANNOTATION,
    GPU_PRODUCT_LABEL,
    JOB,
    JOBSET,
    JOBSET_JOB_INDEX,
    KINDS,
    KUBEFLOW_REPLICA_INDEX,
    OWNER_ANNOTATION,
    PARALLELISM_ANNOTATION,
    PODSET_LABEL,
    PODSET_SIZE_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    PYTORCHJOB,
    QUEUE_LABELS,
    SERVICE_CLASS_ANNOTATION,
    WORKER_OFFSET_ANNOTATION,
    AdoptedWorkload,
    Kind,
    Listing,
    Manifest,
    ObjectRef,
    PodSet,
    Refusal,
    dig,
    is_candidate,
    kind_of,
    matching_flavors,
    parse,
    pod_sets,
    queue_name,
    ref_of,
    suspended,
    worker_indexes,
)

__all__ = [
    "COMPLETION_INDEX",
    "CONDITION_TYPE",
    "FLAVOR_ANNOTATION",
    "GPU_PRODUCT_LABEL",
    "JOB",
    "JOBSET",
    "JOBSET_JOB_INDEX",
    "KINDS",
    "KUBEFLOW_REPLICA_INDEX",
    "OWNER_ANNOTATION",
    "PARALLELISM_ANNOTATION",
    "PODSET_LABEL",
    "PODSET_SIZE_ANNOTATION",
    "PRIORITY_CLASS_LABEL",
    "PYTORCHJOB",
    "QUEUE_LABELS",
    "SERVICE_CLASS_ANNOTATION",
    "WORKER_OFFSET_ANNOTATION",
    "AdoptedWorkload",
    "Kind",
    "Listing",
    "Manifest",
    "ObjectRef",
    "PodSet",
    "Refusal",
    "admit_patch",
    "condition_patch",
    "dig",
    "event_manifest",
    "injected_job",
    "is_candidate",
    "kind_of",
    "matching_flavors",
    "merge_patch",
    "originals",
    "parse",
    "pod_sets",
    "queue_name",
    "ref_of",
    "restorable",
    "restore_patch",
    "suspend_patch",
    "suspended",
    "worker_indexes",
]
