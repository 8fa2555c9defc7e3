"""`DriverPool`: the cluster drivers one worker process keeps from one cycle to the next.

A Kubernetes driver follows its cluster's nodes and pods with watches (`queues.clusters.watch`):
kept alive, each cycle reads only what changed since the last one. The pool keeps such drivers
(those with ``keeps_state``) per cluster id together with a fingerprint of the cluster's
connection settings: a changed URL, token, CA, kubeconfig or driver builds a new driver (the old
one is closed). Other drivers (the simulated one reads the cycle's clock) are built for each use
and closed after it.

Whoever runs cycles owns the pool and passes it down: the Celery task holds one per worker
process (queues/tasks.py), `run_cycle` without one uses a pool for that cycle only, so every
sync starts with a LIST as before. Not thread-safe: cycles are single-flight (the lease), and a
prefork worker child runs one task at a time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

from queues.clusters.base import ClusterDriver
from queues.clusters.factory import get_driver

if TYPE_CHECKING:
    from queues.models import Cluster


def connection_fingerprint(cluster: Cluster) -> str:
    """A digest of everything a driver of `cluster` is built from (the token only hashed)."""
    parts = (
        cluster.driver,
        cluster.api_url,
        str(cluster.token),
        cluster.kubeconfig_path,
        cluster.kubeconfig_context,
        cluster.ca_cert,
        str(cluster.verify_tls),
        str(cluster.in_cluster),
    )
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class DriverPool:
    """Drivers kept across cycles, per cluster id (see the module docstring)."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[str, ClusterDriver]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    @contextmanager
    def driver(self, cluster: Cluster, *, now: datetime | None = None) -> Iterator[ClusterDriver]:
        """The driver of `cluster` for one use: a kept one when its settings are unchanged.

        Raises what `get_driver` raises (`InvalidSpec` for bad settings)."""
        fingerprint = connection_fingerprint(cluster)
        kept = self._kept.get(cluster.pk)
        if kept is not None and kept[0] == fingerprint:
            yield kept[1]
            return
        self.drop(cluster.pk)
        driver = get_driver(cluster, now=now)
        if getattr(driver, "keeps_state", False):
            self._kept[cluster.pk] = (fingerprint, driver)
            yield driver
            return
        try:
            yield driver
        finally:
            driver.close()

    def drop(self, cluster_id: int) -> None:
        """Close and forget the kept driver of a cluster (if any)."""
        kept = self._kept.pop(cluster_id, None)
        if kept is not None:
            kept[1].close()

    def retain(self, cluster_ids: Iterable[int]) -> None:
        """Close the drivers of clusters not in `cluster_ids` (deleted ones)."""
        keep = set(cluster_ids)
        for cluster_id in [pk for pk in self._kept if pk not in keep]:
            self.drop(cluster_id)

    def close(self) -> None:
        for cluster_id in list(self._kept):
            self.drop(cluster_id)
