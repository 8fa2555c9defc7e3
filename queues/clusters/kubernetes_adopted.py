"""The Kubernetes driver's calls about kubectl-applied workloads (docs/KUEUE.md): Jobs, JobSets
and PyTorchJobs listed, read, patched (unsuspend, suspend, restore), their status condition set
and Events created about them. A mixin of `KubernetesDriver`, which provides the API clients
and the calls' error handling; the bodies come from `queues.clusters.adopted`.

One method lists them (`list_adopted`), from a watch per kind kept across cycles.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kubernetes import client as k8s

from queues.clusters import adopted
from queues.clusters.base import WorkloadConflict
from queues.clusters.watch import KindAbsent, ResourceCache

logger = logging.getLogger(__name__)

Manifest = dict[str, Any]


class AdoptedWorkloadCalls:
    """`list_adopted`, `admit_adopted`, `suspend_adopted`, `restore_adopted`,
    `report_adopted`: what the intake (queues/services/intake.py) asks of a cluster."""

    _core: k8s.CoreV1Api
    _custom: k8s.CustomObjectsApi
    adopted_caches: tuple[ResourceCache[Any], ...]  # one per kind of adopted.KINDS

    if TYPE_CHECKING:

        def _raw(self) -> dict[str, Any]: ...

        def _read_or_none(
            self, action: str, call: Callable[[], Any], tolerate: tuple[int, ...] = (404,)
        ) -> Manifest | None: ...

        def _send(
            self, action: str, call: Callable[[], Any], tolerate: tuple[int, ...]
        ) -> bool: ...

        def _job_pods(self, job_id: str, namespace: str) -> list[Manifest]: ...

    def list_adopted(self) -> adopted.Listing:
        """Every Job, JobSet and PyTorchJob with a queue label, in every namespace, as the
        kinds' watches (`adopted_caches`, kept across cycles) last saw them. A kind whose CRD
        is not installed (404) or that the platform may not list (403: a ClusterRole from
        before the intake) is left out of `kinds`, and the cluster stays healthy for the
        platform's own jobs; any other failure is the cluster's (`ClusterUnavailable`)."""
        objects: list[Manifest] = []
        kinds: set[str] = set()
        for kind, cache in zip(adopted.KINDS, self.adopted_caches, strict=True):
            try:
                cache.refresh()
            except KindAbsent:
                logger.info(
                    "%s.%s: not installed or not allowed; not listed", kind.plural, kind.group
                )
                continue
            kinds.add(kind.kind)
            for item in cache.items():
                item.setdefault("kind", kind.kind)  # a list's items need not say it
                item.setdefault("apiVersion", kind.api_version)
                if adopted.is_candidate(item):
                    objects.append(item)
        return adopted.Listing(objects=tuple(objects), kinds=frozenset(kinds))

    def admit_adopted(
        self, ref: adopted.ObjectRef, job_id: str, labels: dict[str, str], nodes: list[str]
    ) -> bool:
        """Unsuspend the object pinned to `nodes` with the platform's `labels` on its pod
        templates. False when it already was; `WorkloadConflict` when it is gone, another
        object of that name took its place, or the pods of its previous run are still there
        (its controller deletes them after a suspension: a gang restarts whole)."""
        current = self._get_adopted(ref)
        if current is None:
            raise WorkloadConflict(f"{ref} is gone from the cluster")
        if adopted.suspended(current) and self._job_pods(job_id, ref.namespace):
            raise WorkloadConflict(
                f"{ref}: the pods of its previous run are still there; it is unsuspended once "
                "its controller has deleted them"
            )
        patch = adopted.admit_patch(current, job_id=job_id, labels=labels, nodes=nodes)
        if not patch:
            return False
        self._patch_adopted(ref, patch)
        return True

    def suspend_adopted(self, ref: adopted.ObjectRef) -> bool:
        """Suspend the object (its controller deletes its pods); False when it already was or
        is gone."""
        current = self._get_adopted(ref)
        patch = adopted.suspend_patch(current) if current is not None else {}
        if not patch:
            return False
        self._patch_adopted(ref, patch)
        return True

    def restore_adopted(self, ref: adopted.ObjectRef, templates: dict[str, Any]) -> bool:
        """Put its pod templates back as applied, once it is suspended and its controller has
        seen that; False when there is nothing to do yet."""
        current = self._get_adopted(ref)
        if current is None or not adopted.restorable(current):
            return False
        patch = adopted.restore_patch(current, templates)
        if not patch:
            return False
        self._patch_adopted(ref, patch)
        return True

    def report_adopted(
        self,
        obj: Manifest | adopted.ObjectRef,
        *,
        status: str,
        reason: str,
        message: str,
        at: datetime,
        warning: bool = False,
    ) -> bool:
        """Tell the object's owner: the platform's condition in its status and a core/v1 Event
        (Normal, or Warning) on it. `obj` as listed, or a reference (read first). False
        (nothing sent) when its condition says exactly this already, or it is gone."""
        if isinstance(obj, adopted.ObjectRef):
            found = self._get_adopted(obj)
            if found is None:
                return False
            obj = found
        patch = adopted.condition_patch(obj, status=status, reason=reason, message=message, at=at)
        if not patch:
            return False
        ref = adopted.ref_of(obj)
        event = adopted.event_manifest(
            ref,
            type_="Warning" if warning else "Normal",
            reason=reason,
            message=message,
            at=at,
        )
        self._send(
            f"create event {ref.namespace}/{event['metadata']['name']}",
            lambda: self._core.create_namespaced_event(
                ref.namespace,
                event,  # type: ignore[arg-type]
                **self._raw(),
            ),
            tolerate=(409,),  # told already
        )
        kind = adopted.kind_of(ref.kind)
        self._send(
            f"patch {ref} status",
            lambda: self._custom.patch_namespaced_custom_object_status(
                kind.group,
                kind.version,
                ref.namespace,
                kind.plural,
                ref.name,
                patch,
                **self._raw(),
            ),
            tolerate=(404,),  # gone meanwhile
        )
        return True

    def _get_adopted(self, ref: adopted.ObjectRef) -> Manifest | None:
        """The object as it is now; None when it is gone or is another object (its uid)."""
        kind = adopted.kind_of(ref.kind)
        current = self._read_or_none(
            f"read {ref}",
            lambda: self._custom.get_namespaced_custom_object(
                kind.group, kind.version, ref.namespace, kind.plural, ref.name, **self._raw()
            ),
        )
        if current is None:
            return None
        current.setdefault("kind", kind.kind)
        current.setdefault("apiVersion", kind.api_version)
        if (current.get("metadata") or {}).get("uid", "") != ref.uid:
            return None
        return current

    def _patch_adopted(self, ref: adopted.ObjectRef, patch: Manifest) -> None:
        """A JSON merge patch of the object (its resourceVersion in it: a change made since
        the read is a 409, a `WorkloadConflict` to retry next cycle)."""
        kind = adopted.kind_of(ref.kind)
        sent = self._send(
            f"patch {ref}",
            lambda: self._custom.patch_namespaced_custom_object(
                kind.group,
                kind.version,
                ref.namespace,
                kind.plural,
                ref.name,
                patch,
                **self._raw(),
            ),
            tolerate=(409,),
        )
        if not sent:
            raise WorkloadConflict(f"{ref} changed while being patched; retried next cycle")
        logger.info("patched %s: %s", ref, json.dumps(patch, sort_keys=True)[:500])
