"""The bodies the driver sends about kubectl-applied workloads: JSON merge patches that
unsuspend (with node affinity and labels injected), suspend and restore them, the status
condition, and the core/v1 Event."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from queues.clusters import manifests
from queues.clusters.adopted.reading import (
    CONDITION_TYPE,
    EVENT_SOURCE,
    PARALLELISM_ANNOTATION,
    PODSET_LABEL,
    PODSET_SIZE_ANNOTATION,
    PYTORCHJOB,
    WORKER_OFFSET_ANNOTATION,
    Manifest,
    ObjectRef,
    PodSet,
    dig,
    pod_sets,
    suspended,
)

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
        labels = dig(obj, (*pod_set.path, "metadata", "labels")) or {}
        if labels.get(manifests.MANAGED_BY_KEY) == manifests.MANAGED_BY:
            return str(labels.get(manifests.JOB_LABEL, ""))
    return ""


def originals(obj: Mapping[str, Any]) -> dict[str, Manifest]:
    """What the injection changes in each pod template, as applied (to restore it later)."""
    out: dict[str, Manifest] = {}
    for pod_set in pod_sets(obj)[0]:
        template = dig(obj, pod_set.path) or {}
        metadata = template.get("metadata") or {}
        out[pod_set.name] = {
            "labels": copy.deepcopy(metadata.get("labels")),
            "annotations": copy.deepcopy(metadata.get("annotations")),
            "affinity": copy.deepcopy(dig(template, ("spec", "affinity"))),
        }
    return out


def _rewritten(obj: Mapping[str, Any], edit: Any) -> Manifest:
    new = copy.deepcopy(dict(obj))
    for pod_set in pod_sets(new)[0]:
        template = dig(new, pod_set.path)
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
