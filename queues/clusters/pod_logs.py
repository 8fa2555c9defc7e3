"""Reading a worker's log from Kubernetes (pure helpers of `KubernetesDriver.worker_logs`).

The kubelet serves the log of a pod's running container, else of its last terminated one; a
container that never ran (image still pulling, pod not scheduled) has none, and the API server
answers 400 "container ... is waiting to start". The driver looks at the pod's status first and
says so instead of asking.
"""

from __future__ import annotations

from typing import Any

from queues.clusters.manifests import CONTAINER_NAME

LOG_LIMIT_BYTES = 1024 * 1024  # the most of one worker's log read at once (limitBytes)


def not_started(pod: dict[str, Any], pod_message: str = "") -> str:
    """Why the worker container has no log yet ("has not started yet: ContainerCreating"), or
    "" when there is one to read. `pod_message`: what the pod says when no container status
    does (e.g. "Unschedulable: 0/4 nodes are available")."""
    status = pod.get("status") or {}
    for container in status.get("containerStatuses") or []:
        if container.get("name") != CONTAINER_NAME:
            continue
        state = container.get("state") or {}
        if "running" in state or "terminated" in state:
            return ""
        if "terminated" in (container.get("lastState") or {}):
            return ""  # restarting: the kubelet serves the last run's log
        reason = (state.get("waiting") or {}).get("reason", "")
        return f"has not started yet: {reason}" if reason else "has not started yet"
    return f"has not started yet: {pod_message}" if pod_message else "has not started yet"


def log_lines(data: bytes | str, limit_bytes: int = LOG_LIMIT_BYTES) -> tuple[tuple[str, ...], str]:
    """(the lines of a log read, a note). A read cut at `limit_bytes` drops its last partial
    line, and the note says that the newest lines may be missing."""
    raw = data if isinstance(data, bytes) else data.encode()
    text = raw.decode("utf-8", errors="replace")
    lines = text.splitlines()
    if len(raw) < limit_bytes:
        return tuple(lines), ""
    if lines and not text.endswith("\n"):
        lines = lines[:-1]
    note = f"the log was cut at {limit_bytes} bytes: ask for fewer lines to see the newest"
    return tuple(lines), note
