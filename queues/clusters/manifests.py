"""Pure builders of the Kubernetes manifests the platform sends: dicts in, dicts out.

Conventions (docs/ARCHITECTURE.md, "Kubernetes conventions"):

- one namespace per team (`team_namespace`);
- one Pod per worker, restartPolicy Never, pinned to its planned node by a REQUIRED node
  affinity on ``kubernetes.io/hostname``, limited to ``gpus_per_worker`` of the flavor's
  resource;
- labels ``gpuplatform/job``, ``gpuplatform/worker``, ``gpuplatform/queue``,
  ``gpuplatform/team`` and ``app.kubernetes.io/managed-by=gpuplatform``; annotations carry the
  exact job id and the gang size;
- multi-worker (and elastic) jobs get a headless Service named like the job; each pod sets
  ``hostname``/``subdomain`` so ``<pod>.<service>.<namespace>.svc.<domain>`` resolves, and
  ``MASTER_ADDR`` points at worker 0 through it;
- the job's own spec (queues/models/job_spec.py): its env (values and Secret keys) before the
  platform's (``PLATFORM_ENV``), CPU and memory requests with limits (GPUs stay the platform's),
  its volumes (PVC, ConfigMap, Secret, emptyDir) and ``/dev/shm`` (an emptyDir of medium Memory
  sized ``shm_size``), an image pull secret, tolerations after the platform's, a working
  directory, its labels and annotations (never over the platform's keys), host networking
  where its class allows it.

Every name is a valid DNS-1123 label: sanitized, truncated, and given a stable hash suffix
whenever sanitizing changed it, so two different inputs never share a name.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from queues.clusters import k8s_rules
from queues.clusters.base import (
    EnvVar,
    InvalidSpec,
    LaunchSpec,
    Toleration,
    VolumeKind,
    WorkerPlacement,
)

Manifest = dict[str, Any]

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpuplatform"
JOB_LABEL = "gpuplatform/job"
WORKER_LABEL = "gpuplatform/worker"
QUEUE_LABEL = "gpuplatform/queue"
TEAM_LABEL = "gpuplatform/team"
SERVICE_CLASS_LABEL = "gpuplatform/service-class"
FLAVOR_LABEL = "gpuplatform/flavor"
JOB_ID_ANNOTATION = "gpuplatform/job-id"
JOB_NAME_ANNOTATION = "gpuplatform/job-name"
GANG_SIZE_ANNOTATION = "gpuplatform/gang-size"
MIN_WORKERS_ANNOTATION = "gpuplatform/min-workers"
PLANNED_NODE_ANNOTATION = "gpuplatform/planned-node"
HOSTNAME_LABEL = "kubernetes.io/hostname"

MASTER_PORT = 29500
CONTAINER_NAME = "worker"
NAMESPACE_PREFIX = "team-"
# a job array's jobs also get GPUPLATFORM_ARRAY_JOB_ID and _TASK_ID (Slurm's SLURM_ARRAY_*)
ARRAY_ENV = ("GPUPLATFORM_ARRAY_JOB_ID", "GPUPLATFORM_ARRAY_TASK_ID")
PLATFORM_ENV = frozenset(
    {"WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT", "GPUPLATFORM_JOB_ID", *ARRAY_ENV}
)
# label and annotation keys the platform (and Kueue) own: a job's own labels may not use them
RESERVED_KEY_PREFIXES = ("gpuplatform/", "kueue.x-k8s.io/")
RESERVED_KEYS = frozenset({MANAGED_BY_KEY})
SHM_PATH = "/dev/shm"
SHM_VOLUME = "gpuplatform-shm"  # the volume of `shm_size`; a job's own volumes may not use it
HOST_NETWORK_DNS_POLICY = "ClusterFirstWithHostNet"  # cluster DNS still resolves the workers

_DNS_LABEL_MAX = 63
_HASH_LEN = 8
_INVALID = re.compile(r"[^a-z0-9-]+")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_VALUE_INVALID = re.compile(r"[^A-Za-z0-9_.-]+")
# Room kept at the end of a job's base name for "-<worker index>".
_WORKER_SUFFIX_ROOM = 7


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LEN]


def dns_label(text: str, max_length: int = _DNS_LABEL_MAX) -> str:
    """`text` as a DNS-1123 label of at most `max_length` characters, stable and collision-safe.

    Lowercase letters, digits and '-', starting and ending with a letter or digit. Text that is
    already valid is kept as is; anything else is sanitized, truncated and suffixed with
    ``-<8 hex chars of sha256(text)>``.
    """
    if max_length < _HASH_LEN + 2:
        raise ValueError(f"max_length must be at least {_HASH_LEN + 2}")
    cleaned = _INVALID.sub("-", text.lower()).strip("-")
    if cleaned == text and 0 < len(cleaned) <= max_length:
        return cleaned
    room = max_length - _HASH_LEN - 1
    head = cleaned[:room].rstrip("-")
    return f"{head}-{_digest(text)}" if head else _digest(text)


def label_value(text: str) -> str:
    """`text` as a valid label value (<= 63 chars), with a hash suffix when it had to change."""
    if len(text) <= _DNS_LABEL_MAX and _LABEL_VALUE.match(text):
        return text
    cleaned = _LABEL_VALUE_INVALID.sub("-", text)
    room = _DNS_LABEL_MAX - _HASH_LEN - 1
    head = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", cleaned[:room])
    return f"{head}-{_digest(text)}" if head else _digest(text)


def team_namespace(team: str) -> str:
    """The namespace of a team: ``team-<team>`` as a DNS-1123 label."""
    return dns_label(NAMESPACE_PREFIX + team)


def job_base_name(job_id: str, job_name: str) -> str:
    """Service name and pod-name prefix of a job: ``<job name>-<job id>``, a DNS-1035 label.

    It starts with a letter (a Service name must), leaves room for ``-<worker index>`` and stays
    unique per job because the id is part of it.
    """
    id_part = dns_label(job_id, max_length=24)
    name_part = _INVALID.sub("-", job_name.lower()).strip("-")
    name_part = re.sub(r"-{2,}", "-", name_part)
    if not name_part[:1].isalpha():
        name_part = f"job-{name_part}" if name_part else "job"
    room = _DNS_LABEL_MAX - _WORKER_SUFFIX_ROOM - len(id_part) - 1
    return f"{name_part[:room].rstrip('-')}-{id_part}"


def pod_name(job_id: str, job_name: str, index: int) -> str:
    return f"{job_base_name(job_id, job_name)}-{index}"


def needs_service(spec: LaunchSpec) -> bool:
    """Multi-worker and elastic jobs get a headless Service so workers can find each other."""
    return spec.gang_size > 1 or len(spec.workers) > 1 or spec.elastic


def master_address(spec: LaunchSpec, cluster_domain: str = "cluster.local") -> str:
    if not needs_service(spec):
        return "localhost"
    base = job_base_name(spec.job_id, spec.job_name)
    return f"{base}-0.{base}.{team_namespace(spec.team)}.svc.{cluster_domain}"


def validate_spec(spec: LaunchSpec) -> None:
    """Raise `InvalidSpec` naming the first bad field of `spec`."""
    if not spec.job_id:
        raise InvalidSpec("job_id: must not be empty")
    if not spec.team:
        raise InvalidSpec("team: must not be empty")
    if not spec.image:
        raise InvalidSpec("image: must not be empty")
    if "/" not in spec.resource_name:
        raise InvalidSpec(
            f"resource_name: {spec.resource_name!r} is not an extended resource "
            "(expected e.g. 'nvidia.com/gpu' or 'nvidia.com/mig-1g.10gb')"
        )
    if spec.gpus_per_worker < 1:
        raise InvalidSpec(f"gpus_per_worker: must be at least 1, got {spec.gpus_per_worker}")
    if spec.gang_size < 1:
        raise InvalidSpec(f"gang_size: must be at least 1, got {spec.gang_size}")
    if spec.grace_period_seconds < 0:
        raise InvalidSpec(f"grace_period_seconds: must be >= 0, got {spec.grace_period_seconds}")
    if spec.min_workers is not None and not 1 <= spec.min_workers <= spec.gang_size:
        raise InvalidSpec(
            f"min_workers: must be between 1 and gang_size ({spec.gang_size}), "
            f"got {spec.min_workers}"
        )
    indexes = [w.index for w in spec.workers]
    if len(set(indexes)) != len(indexes):
        raise InvalidSpec(f"workers: duplicate worker index in {sorted(indexes)}")
    for worker in spec.workers:
        if not 0 <= worker.index < spec.gang_size:
            raise InvalidSpec(
                f"workers: index {worker.index} outside 0..{spec.gang_size - 1} (gang_size)"
            )
        if not worker.node:
            raise InvalidSpec(f"workers: worker {worker.index} has no planned node")
    for name in [*spec.env, *(var.name for var in spec.env_vars)]:
        if name in PLATFORM_ENV:
            raise InvalidSpec(f"env: {name} is set by the platform")
        if problem := k8s_rules.env_name(name):
            raise InvalidSpec(f"env: {problem}")
    for what, keys in (("labels", spec.labels), ("annotations", spec.annotations)):
        for key in keys:
            if reserved_key(key):
                raise InvalidSpec(f"{what}: {key} is set by the platform")
    _validate_volumes(spec)


def reserved_key(key: str) -> bool:
    """Whether a label or annotation key is the platform's (or Kueue's)."""
    return key in RESERVED_KEYS or key.startswith(RESERVED_KEY_PREFIXES)


def _validate_volumes(spec: LaunchSpec) -> None:
    names = [v.name for v in spec.volumes]
    paths = [v.mount_path for v in spec.volumes]
    if len(set(names)) != len(names) or SHM_VOLUME in names:
        raise InvalidSpec(f"volumes: names must be unique and not {SHM_VOLUME}: {names}")
    if len(set(paths)) != len(paths) or (spec.shm_size and SHM_PATH in paths):
        raise InvalidSpec(f"volumes: mount paths must be unique (and not {SHM_PATH}): {paths}")
    for volume in spec.volumes:
        if problem := k8s_rules.dns_label(volume.name) or k8s_rules.absolute_path(
            volume.mount_path
        ):
            raise InvalidSpec(f"volumes: {volume.name}: {problem}")
        if (volume.kind is VolumeKind.EMPTY_DIR) == bool(volume.source):
            raise InvalidSpec(f"volumes: {volume.name}: a source for every kind but emptyDir")


def namespace_manifest(team: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": team_namespace(team),
            "labels": {MANAGED_BY_KEY: MANAGED_BY, TEAM_LABEL: label_value(team)},
        },
    }


def _job_labels(spec: LaunchSpec) -> dict[str, str]:
    labels = {key: label_value(value) for key, value in spec.labels.items()}
    labels.update(
        {
            MANAGED_BY_KEY: MANAGED_BY,
            JOB_LABEL: label_value(spec.job_id),
            QUEUE_LABEL: label_value(spec.queue),
            TEAM_LABEL: label_value(spec.team),
            SERVICE_CLASS_LABEL: label_value(spec.service_class),
        }
    )
    if spec.flavor:
        labels[FLAVOR_LABEL] = label_value(spec.flavor)
    return labels


def _job_annotations(spec: LaunchSpec) -> dict[str, str]:
    annotations = dict(spec.annotations)
    annotations |= {
        JOB_ID_ANNOTATION: spec.job_id,
        JOB_NAME_ANNOTATION: spec.job_name,
        GANG_SIZE_ANNOTATION: str(spec.gang_size),
    }
    if spec.min_workers is not None:
        annotations[MIN_WORKERS_ANNOTATION] = str(spec.min_workers)
    return annotations


def service_manifest(spec: LaunchSpec) -> Manifest:
    """The headless Service through which a job's workers resolve each other."""
    base = job_base_name(spec.job_id, spec.job_name)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": base,
            "namespace": team_namespace(spec.team),
            "labels": _job_labels(spec),
            "annotations": _job_annotations(spec),
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {MANAGED_BY_KEY: MANAGED_BY, JOB_LABEL: label_value(spec.job_id)},
            "ports": [
                {"name": "dist", "port": MASTER_PORT, "targetPort": MASTER_PORT, "protocol": "TCP"}
            ],
        },
    }


def pod_manifest(
    spec: LaunchSpec, worker: WorkerPlacement, cluster_domain: str = "cluster.local"
) -> Manifest:
    """The Pod of one worker, pinned to its planned node."""
    base = job_base_name(spec.job_id, spec.job_name)
    name = f"{base}-{worker.index}"
    labels = _job_labels(spec)
    labels[WORKER_LABEL] = str(worker.index)
    annotations = _job_annotations(spec)
    annotations[PLANNED_NODE_ANNOTATION] = worker.node
    env = [{"name": key, "value": value} for key, value in sorted(spec.env.items())]
    env += [_env_var(var) for var in spec.env_vars]
    env += [
        {"name": "WORLD_SIZE", "value": str(len(spec.workers))},
        {"name": "RANK", "value": str(worker.index)},
        {"name": "MASTER_ADDR", "value": master_address(spec, cluster_domain)},
        {"name": "MASTER_PORT", "value": str(MASTER_PORT)},
        {"name": "GPUPLATFORM_JOB_ID", "value": spec.job_id},
    ]
    if spec.array is not None:
        env += [
            {"name": name, "value": str(value)}
            for name, value in zip(ARRAY_ENV, spec.array, strict=True)
        ]
    container: Manifest = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "env": env,
        "resources": _resources(spec),
    }
    if spec.command:
        container["command"] = list(spec.command)
    if spec.args:
        container["args"] = list(spec.args)
    if spec.working_dir:
        container["workingDir"] = spec.working_dir
    if spec.allow_privilege_escalation is not None:
        container["securityContext"] = {"allowPrivilegeEscalation": spec.allow_privilege_escalation}
    volumes, mounts = _volumes(spec)
    if mounts:
        container["volumeMounts"] = mounts
    pod_spec: Manifest = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": spec.grace_period_seconds,
        "hostname": name,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": HOSTNAME_LABEL, "operator": "In", "values": [worker.node]}
                            ]
                        }
                    ]
                }
            }
        },
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            *(_toleration(t) for t in spec.tolerations),
        ],
        "containers": [container],
    }
    if needs_service(spec):
        pod_spec["subdomain"] = base
    if volumes:
        pod_spec["volumes"] = volumes
    if spec.image_pull_secret:
        pod_spec["imagePullSecrets"] = [{"name": spec.image_pull_secret}]
    if spec.host_network:
        pod_spec["hostNetwork"] = True
        pod_spec["dnsPolicy"] = HOST_NETWORK_DNS_POLICY
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": team_namespace(spec.team),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": pod_spec,
    }


def _env_var(var: EnvVar) -> Manifest:
    if var.secret_name:
        ref = {"name": var.secret_name, "key": var.secret_key}
        return {"name": var.name, "valueFrom": {"secretKeyRef": ref}}
    return {"name": var.name, "value": var.value}


def _resources(spec: LaunchSpec) -> Manifest:
    """The GPUs (the platform's: flavor and gpus_per_worker) and the job's CPU and memory."""
    resources: Manifest = {
        "limits": {spec.resource_name: str(spec.gpus_per_worker), **spec.resources.limits}
    }
    if spec.resources.requests:
        resources["requests"] = dict(spec.resources.requests)
    return resources


def _volumes(spec: LaunchSpec) -> tuple[list[Manifest], list[Manifest]]:
    """The pod's volumes and the container's mounts: the job's, then /dev/shm."""
    volumes: list[Manifest] = []
    mounts: list[Manifest] = []
    for volume in spec.volumes:
        if volume.kind is VolumeKind.PVC:
            source: Manifest = {"claimName": volume.source}
        elif volume.kind is VolumeKind.CONFIG_MAP:
            source = {"name": volume.source}
        elif volume.kind is VolumeKind.SECRET:
            source = {"secretName": volume.source}
        else:
            source = {}
            if volume.medium:
                source["medium"] = volume.medium
            if volume.size_limit:
                source["sizeLimit"] = volume.size_limit
        volumes.append({"name": volume.name, volume.kind.value: source})
        mount: Manifest = {"name": volume.name, "mountPath": volume.mount_path}
        if volume.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    if spec.shm_size:
        volumes.append(
            {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": spec.shm_size}}
        )
        mounts.append({"name": SHM_VOLUME, "mountPath": SHM_PATH})
    return volumes, mounts


def _toleration(toleration: Toleration) -> Manifest:
    out: Manifest = {"operator": toleration.operator}
    if toleration.key:
        out["key"] = toleration.key
    if toleration.value:
        out["value"] = toleration.value
    if toleration.effect:
        out["effect"] = toleration.effect
    if toleration.seconds is not None:
        out["tolerationSeconds"] = toleration.seconds
    return out


def delete_options(grace_period_seconds: int) -> Manifest:
    """The body of a graceful delete: the grace period, and dependents cleaned up behind."""
    return {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": grace_period_seconds,
        "propagationPolicy": "Background",
    }
