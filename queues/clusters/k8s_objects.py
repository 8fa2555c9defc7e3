"""Pure readings of Kubernetes objects: quantities, and the GPUs other workloads hold.

A node shared with workloads the platform did not create (another team's inference service, a
DaemonSet, anything on a shared cluster) has less room than its allocatable says. What those
pods request counts against the node as the scheduler counts it, so the platform never places a
worker on GPUs the kubelet will not give it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from queues.clusters import manifests

Manifest = Mapping[str, Any]
ENDED_PHASES = frozenset({"Succeeded", "Failed"})  # a pod in these holds nothing any more


def parse_count(quantity: Any) -> int:
    """An allocatable quantity as a whole count ("8", 8, "7.5" -> 7); 0 when unreadable."""
    try:
        value = Decimal(str(quantity))
    except InvalidOperation:
        return 0
    if not value.is_finite() or value < 0:
        return 0
    return int(value)


def extended_resource(name: str) -> bool:
    """A device resource (``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``, ...): a name with a
    domain; cpu, memory, pods and hugepages have none. The same rule picks a node's allocatable."""
    return "/" in name


def managed(obj: Manifest) -> bool:
    """Made by the platform (its managed-by label)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(manifests.MANAGED_BY_KEY) == manifests.MANAGED_BY)


def pod_requests(pod: Manifest) -> dict[str, int]:
    """The device resources a pod holds on its node, as the scheduler counts them.

    Per resource: the largest of what any init container needs while it runs (with the sidecars
    started before it, ``restartPolicy: Always``) and what the app containers need together
    with every sidecar; plus the pod's ``overhead``. A container's request defaults to its limit
    (device resources are usually given as limits only).
    """
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        add_counts(total, _container_requests(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers") or []:
        wants = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            add_counts(sidecars, wants)
            _peak(init_peak, sidecars)
        else:
            running = dict(sidecars)
            add_counts(running, wants)
            _peak(init_peak, running)
    add_counts(total, sidecars)
    _peak(total, init_peak)
    add_counts(total, _device_counts(spec.get("overhead") or {}))
    return {name: count for name, count in total.items() if count > 0}


def held_by_other(pod: Manifest) -> tuple[str, dict[str, int]] | None:
    """(node name, device resources) a pod the platform did not create holds: None for the
    platform's pods, ended pods (they hold nothing), pods not yet bound, pods with no devices."""
    if managed(pod):
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in ENDED_PHASES:
        return None
    held = pod_requests(pod)
    return (str(node), held) if held else None


def other_usage_by_node(pods: Iterable[Manifest]) -> dict[str, dict[str, int]]:
    """Per node name, what the pods the platform did not create hold there (`held_by_other`)."""
    usage: dict[str, dict[str, int]] = {}
    for pod in pods:
        held = held_by_other(pod)
        if held is not None:
            add_counts(usage.setdefault(held[0], {}), held[1])
    return usage


def _container_requests(container: Manifest) -> dict[str, int]:
    resources = container.get("resources") or {}
    wanted = dict(_device_counts(resources.get("limits") or {}))
    wanted.update(_device_counts(resources.get("requests") or {}))
    return wanted


def _device_counts(quantities: Mapping[str, Any]) -> dict[str, int]:
    return {name: parse_count(q) for name, q in quantities.items() if extended_resource(name)}


def add_counts(into: dict[str, int], more: Mapping[str, int]) -> None:
    """Add `more` to `into`, per resource name."""
    for name, count in more.items():
        into[name] = into.get(name, 0) + count


def _peak(into: dict[str, int], candidate: Mapping[str, int]) -> None:
    for name, count in candidate.items():
        into[name] = max(into.get(name, 0), count)
