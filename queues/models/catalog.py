"""What a submission is checked against, read once and kept until it changes: the queues (with
their team and cohort), the classes each accepts, the service classes and flavors by name, the
quotas, the cohort tree (parents and the cohorts' own quotas), and per flavor the most units on
one node and in one cluster.

``current()`` answers from the shared cache (Redis in production: every web and worker process
sees the same entry) and reads the database (8 queries) only when the entry is missing. The
entry's key carries a version; ``changed()`` moves the version on, at once and again when the
transaction commits, so the next submission in any process reads the new rows (an entry built
from rows read before the commit is stored under the old version and never read again).

What moves the version: saving or deleting a queue, team, cohort, cohort quota, quota, flavor,
service class, cluster or node, a change of a queue's accepted classes (signals,
``connect()``), and the bulk writes that send no signal: the sync's node rewrite when a
capacity changes or a node appears (queues/services/observe.py) and the API's quota and cohort
quota creation (queues/api/serializers.py).

``CATALOG_CACHE_SECONDS`` bounds an entry's life; 0 turns the cache off (every ``current()``
reads the database). It is 0 unless the cache is shared between processes (``CACHE_URL`` or
``REDIS_URL``): with Django's per-process memory cache, a change made in one process (a sync in
the worker) would not move the version another (the web) reads.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import signals

from queues.models.organisation import Cohort, CohortQuota, Queue, Quota, Team
from queues.models.resources import Cluster, Flavor, Node, ServiceClass

VERSION_KEY = "gpuplatform:catalog:version"
ENTRY_KEY = "gpuplatform:catalog:{}"


@dataclass
class Catalog:
    queues: dict[int, Queue] = field(default_factory=dict)
    service_classes: dict[str, ServiceClass] = field(default_factory=dict)
    flavors: dict[str, Flavor] = field(default_factory=dict)
    # queue id -> ids of the classes it accepts (none: every class)
    allowed_classes: dict[int, frozenset[int]] = field(default_factory=dict)
    quotas: list[Quota] = field(default_factory=list)  # with their flavor
    # the cohort tree (docs/SCHEDULING.md section 2a): cohort id -> parent id, and own quotas
    cohort_parents: dict[int, int | None] = field(default_factory=dict)
    cohort_quota_rows: list[CohortQuota] = field(default_factory=list)
    # flavor name -> the most units on one node / in one cluster (every node counts)
    node_most: dict[str, int] = field(default_factory=dict)
    cluster_most: dict[str, int] = field(default_factory=dict)
    expires: float = 0.0  # when the shared cache's copy expires (time.time())

    def accepts(self, queue: Queue, service_class: ServiceClass) -> bool:
        """``Queue.accepts_service_class``, from the catalog."""
        allowed = self.allowed_classes.get(queue.pk, frozenset())
        return not allowed or service_class.pk in allowed

    def accepted_names(self, queue: Queue) -> list[str]:
        allowed = self.allowed_classes.get(queue.pk, frozenset())
        return [c.name for c in self.service_classes.values() if c.pk in allowed]

    def quotas_of(self, queue: Queue) -> list[Quota]:
        return [q for q in self.quotas if q.queue_id == queue.pk]

    def cohort_quotas(self, queue: Queue) -> list[Quota]:
        """The quotas of ``queue``'s cohort (its own when it has none)."""
        if queue.cohort_id is None:
            return self.quotas_of(queue)
        cohort = {pk for pk, q in self.queues.items() if q.cohort_id == queue.cohort_id}
        return [q for q in self.quotas if q.queue_id in cohort]

    def root_of(self, cohort_id: int) -> int:
        """The root of ``cohort_id``'s tree (itself for a root; a cycle stops the walk)."""
        seen = {cohort_id}
        parent = self.cohort_parents.get(cohort_id)
        while parent is not None and parent not in seen:
            seen.add(parent)
            cohort_id = parent
            parent = self.cohort_parents.get(cohort_id)
        return cohort_id

    def tree_quotas(self, queue: Queue) -> tuple[list[Quota], list[CohortQuota], list[int]]:
        """The quotas of every queue of ``queue``'s cohort tree (its own when it has no
        cohort), the own quotas of the tree's cohorts, and those cohorts' ids."""
        if queue.cohort_id is None:
            return self.quotas_of(queue), [], []
        root = self.root_of(queue.cohort_id)
        known = set(self.cohort_parents) | {queue.cohort_id}
        cohorts = [pk for pk in sorted(known) if self.root_of(pk) == root]
        members = {pk for pk, q in self.queues.items() if q.cohort_id in cohorts}
        own = [row for row in self.cohort_quota_rows if row.cohort_id in cohorts]
        return [q for q in self.quotas if q.queue_id in members], own, cohorts


def read() -> Catalog:
    """The catalog from the database (8 queries)."""
    catalog = Catalog(
        queues=dict(Queue.objects.select_related("team", "cohort").in_bulk()),
        service_classes={c.name: c for c in ServiceClass.objects.all()},
        flavors={f.name: f for f in Flavor.objects.all()},
        quotas=list(Quota.objects.select_related("flavor").order_by("pk")),
        cohort_parents=dict(Cohort.objects.values_list("pk", "parent_id")),
        cohort_quota_rows=list(CohortQuota.objects.order_by("pk")),
    )
    allowed: dict[int, set[int]] = defaultdict(set)
    links = Queue.allowed_service_classes.through.objects.values_list("queue_id", "serviceclass_id")
    for queue_id, class_id in links:
        allowed[queue_id].add(class_id)
    catalog.allowed_classes = {pk: frozenset(ids) for pk, ids in allowed.items()}
    totals: dict[tuple[str, int], int] = defaultdict(int)
    for cluster_id, capacity in Node.objects.order_by().values_list("cluster_id", "capacity"):
        if not isinstance(capacity, dict):
            continue
        for name, units in capacity.items():
            if isinstance(units, int) and units > 0:
                catalog.node_most[name] = max(catalog.node_most.get(name, 0), units)
                totals[(name, cluster_id)] += units
    for (name, _), units in totals.items():
        catalog.cluster_most[name] = max(catalog.cluster_most.get(name, 0), units)
    return catalog


_kept: tuple[str, Catalog] | None = None
"""The entry this process read last, by its key: while the version is the same, the entry is
(an entry never changes under its key), and it is not read and unpickled again."""


def current() -> Catalog:
    """The catalog as the database has it now (from the shared cache when it is on). The
    version is asked of the shared cache every time; the entry of a version this process has
    read already comes from memory (no second round trip, no unpickling of its rows), until the
    shared cache's copy would have expired. The catalog's objects are shared by the requests of
    a process, as its rules and fields share them within a request: read them, never change
    them."""
    global _kept
    seconds = settings.CATALOG_CACHE_SECONDS
    if seconds <= 0:
        return read()
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, uuid.uuid4().hex, timeout=None)
        version = cache.get(VERSION_KEY)
    key = ENTRY_KEY.format(version)
    kept = _kept
    if kept is not None and kept[0] == key and time.time() < kept[1].expires:
        return kept[1]
    found = cache.get(key)
    if isinstance(found, Catalog):
        _kept = (key, found)
        return found
    catalog = read()  # read after the version: rows committed later move it on again
    catalog.expires = time.time() + seconds
    cache.set(key, catalog, timeout=seconds)
    _kept = (key, catalog)
    return catalog


def changed() -> None:
    """The catalog's rows changed: the next ``current()`` reads them again (in any process)."""
    _move_version()
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(_move_version)


def _move_version() -> None:
    cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)


def _on_change(sender: Any, **kwargs: Any) -> None:
    if kwargs.get("raw"):  # loaddata
        return
    changed()


def _on_classes_change(sender: Any, action: str, **kwargs: Any) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        changed()


WATCHED = (Queue, Team, Cohort, CohortQuota, Quota, Flavor, ServiceClass, Cluster, Node)


def connect() -> None:
    """Move the version on every save or delete of the catalog's models (QueuesConfig.ready)."""
    for model in WATCHED:
        uid = f"catalog-{model.__name__}"
        signals.post_save.connect(_on_change, sender=model, dispatch_uid=f"{uid}-save")
        signals.post_delete.connect(_on_change, sender=model, dispatch_uid=f"{uid}-delete")
    signals.m2m_changed.connect(
        _on_classes_change,
        sender=Queue.allowed_service_classes.through,
        dispatch_uid="catalog-queue-classes",
    )
