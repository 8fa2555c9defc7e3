"""``queue_status``: where a queue stands, per flavor and in fair share, and who waits in it.

Per flavor (Kueue's meanings, docs/SCHEDULING.md section 2): ``nominal``, ``used`` (GPUs held by
its admitted, running or stopping jobs), ``borrowed`` (used above nominal), ``lent`` (its unused
lendable nominal that other queues of its cohort use now), and the borrowing / lending limits.
Fair share (section 5): decayed usage ``H(q)``, the score ``(H/tau + U)/weight`` and Slurm's
factor. Pending jobs in the engine's rank order within the queue (within-nominal jobs first, then
class priority, then submission time), each with its position and the why-pending text the last
cycle stored. A fixed number of queries, whatever the number of jobs.

Used by the queue pages, the REST status endpoint and dashboards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, Q
from django.utils import timezone

from gpusched.engine import fairshare
from queues.models import Flavor, Job, JobFlavor, Queue, Quota
from queues.services.snapshot import queue_key

HOLDING_STATES = ("admitted", "running", "preempted")
DEFAULT_PENDING_LIMIT = 100


@dataclass(frozen=True)
class FlavorStatus:
    flavor: str
    nominal: int
    borrowing_limit: int | None  # None: no limit (bounded by the cohort pool)
    lending_limit: int | None  # None: all of the nominal may be lent
    used: int
    borrowed: int
    lent: int

    @property
    def free_nominal(self) -> int:
        return max(0, self.nominal - self.used)


@dataclass(frozen=True)
class PendingEntry:
    position: int  # 1-based, in the queue's rank order
    job_id: int
    name: str
    owner: str
    service_class: str
    priority: int
    workers: int
    gpus_per_worker: int
    flavors: tuple[str, ...]
    submitted_at: datetime
    within_nominal: bool
    reason: str  # the engine's reason code from the last cycle ("" before the first)
    message: str  # the plain-English why-pending text from the last cycle
    estimated_start: datetime | None


@dataclass(frozen=True)
class QueueStatus:
    queue_id: int
    queue: str  # "<team>/<queue>"
    team: str
    cohort: str | None
    weight: float
    is_open: bool
    flavors: tuple[FlavorStatus, ...]
    usage_gpu_equivalent: float  # U(q)
    decayed_usage: float  # H(q), GPU-equivalent-seconds
    fair_share_score: float  # lower runs first
    slurm_factor: float  # 0.5: exactly at its share
    pending_count: int
    pending: tuple[PendingEntry, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (times as UTC ISO-8601)."""
        return {
            "queue_id": self.queue_id,
            "queue": self.queue,
            "team": self.team,
            "cohort": self.cohort,
            "weight": self.weight,
            "is_open": self.is_open,
            "flavors": [
                {
                    "flavor": f.flavor,
                    "nominal": f.nominal,
                    "borrowing_limit": f.borrowing_limit,
                    "lending_limit": f.lending_limit,
                    "used": f.used,
                    "borrowed": f.borrowed,
                    "lent": f.lent,
                }
                for f in self.flavors
            ],
            "usage_gpu_equivalent": self.usage_gpu_equivalent,
            "decayed_usage": self.decayed_usage,
            "fair_share_score": self.fair_share_score,
            "slurm_factor": self.slurm_factor,
            "pending_count": self.pending_count,
            "pending": [
                {
                    "position": p.position,
                    "job_id": p.job_id,
                    "name": p.name,
                    "owner": p.owner,
                    "service_class": p.service_class,
                    "priority": p.priority,
                    "workers": p.workers,
                    "gpus_per_worker": p.gpus_per_worker,
                    "flavors": list(p.flavors),
                    "submitted_at": p.submitted_at.isoformat(),
                    "within_nominal": p.within_nominal,
                    "reason": p.reason,
                    "message": p.message,
                    "estimated_start": (
                        p.estimated_start.isoformat() if p.estimated_start else None
                    ),
                }
                for p in self.pending
            ],
        }


def flavor_usage(queue_ids: Sequence[int], now: datetime) -> dict[int, dict[int, int]]:
    """queue id -> flavor id -> units held now (the snapshot's rule: admitted, running or
    stopping jobs; the admitted flavor, else the first acceptable one). Two queries."""
    rows = list(
        Job.objects.filter(queue_id__in=list(queue_ids))
        .filter(Q(state__in=HOLDING_STATES) | Q(runtime__release_at__gt=now))
        .exclude(cluster=None)
        .values_list("pk", "queue_id", "placement", "gpus_per_worker", "runtime__flavor_id")
    )
    missing = [pk for pk, _, _, _, flavor in rows if flavor is None]
    first: dict[int, int] = {}
    if missing:
        first = dict(
            JobFlavor.objects.filter(job_id__in=missing, rank=0).values_list("job_id", "flavor_id")
        )
    usage: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for pk, queue_id, placement, g, flavor in rows:
        flavor_id = flavor if flavor is not None else first.get(pk)
        if flavor_id is None:
            continue
        usage[queue_id][flavor_id] += g * sum(int(c) for c in (placement or {}).values())
    return usage


def _lent(members: list[Queue], usage: dict[int, dict[int, int]], flavor_id: int) -> dict[int, int]:
    """How much of each member's unused lendable nominal the cohort's borrowers use now.

    The cohort's borrowing (usage above each queue's reserved ``N - L``, beyond its own lendable
    part) is spread over the members with unused lendable nominal in proportion to what each can
    lend (largest remainder, then name, for whole numbers)."""
    available: dict[int, int] = {}
    borrowed_total = 0
    for q in members:
        quota = next((x for x in q.quotas.all() if x.flavor_id == flavor_id), None)
        nominal = quota.nominal if quota else 0
        lendable = nominal if quota is None or quota.lending_limit is None else quota.lending_limit
        used = usage.get(q.pk, {}).get(flavor_id, 0)
        borrowed_total += max(0, used - nominal)
        available[q.pk] = max(0, min(lendable, nominal - used))
    total = sum(available.values())
    if borrowed_total == 0 or total == 0:
        return {q.pk: 0 for q in members}
    lend = min(borrowed_total, total)
    shares = {pk: lend * a / total for pk, a in available.items()}
    out = {pk: int(s) for pk, s in shares.items()}
    rest = lend - sum(out.values())
    order = sorted(members, key=lambda q: (-(shares[q.pk] - out[q.pk]), queue_key(q)))
    for q in order[:rest]:
        out[q.pk] += 1
    return out


def queues_status(
    queues: Iterable[Queue],
    *,
    now: datetime | None = None,
    pending_limit: int | None = 0,
) -> list[QueueStatus]:
    """Status of several queues, in the given order. ``pending_limit``: how many pending jobs to
    list per queue (0: none, only the count; None: all)."""
    moment = now or timezone.now()
    targets = list(queues)
    ids = [q.pk for q in targets]
    if not ids:
        return []
    cohort_ids = {q.cohort_id for q in targets if q.cohort_id is not None}
    related = list(
        Queue.objects.filter(Q(pk__in=ids) | Q(cohort_id__in=cohort_ids))
        .select_related("team", "cohort")
        .prefetch_related(
            Prefetch("quotas", queryset=Quota.objects.select_related("flavor").order_by("flavor"))
        )
    )
    by_id = {q.pk: q for q in related}
    usage = flavor_usage(list(by_id), moment)
    geq = dict(Flavor.objects.values_list("pk", "gpu_equivalent"))
    weights: dict[int, float] = {}
    decayed: dict[int, float] = {}
    for pk, weight, h in Queue.objects.values_list("pk", "weight", "decayed_usage"):
        weights[pk], decayed[pk] = weight, h
    slurm = fairshare.slurm_factors(
        {str(k): v for k, v in decayed.items()}, {str(k): v for k, v in weights.items()}
    )
    members: dict[int, list[Queue]] = defaultdict(list)
    for q in related:
        if q.cohort_id is not None:
            members[q.cohort_id].append(q)
    pending = _pending(ids, usage, by_id, pending_limit)

    out = []
    for target in targets:
        q = by_id[target.pk]
        used = usage.get(q.pk, {})
        flavors = []
        for quota in q.quotas.all():
            u = used.get(quota.flavor_id, 0)
            lent = 0
            if q.cohort_id is not None:
                lent = _lent(members[q.cohort_id], usage, quota.flavor_id).get(q.pk, 0)
            flavors.append(
                FlavorStatus(
                    flavor=quota.flavor.name,
                    nominal=quota.nominal,
                    borrowing_limit=quota.borrowing_limit,
                    lending_limit=quota.lending_limit,
                    used=u,
                    borrowed=max(0, u - quota.nominal),
                    lent=lent,
                )
            )
        u_geq = sum(units * geq.get(f, 1.0) for f, units in used.items())
        count, entries = pending.get(q.pk, (0, ()))
        out.append(
            QueueStatus(
                queue_id=q.pk,
                queue=queue_key(q),
                team=q.team.name,
                cohort=q.cohort.name if q.cohort else None,
                weight=q.weight,
                is_open=q.is_open,
                flavors=tuple(flavors),
                usage_gpu_equivalent=u_geq,
                decayed_usage=q.decayed_usage,
                fair_share_score=fairshare.score(
                    q.decayed_usage, u_geq, q.weight, fairshare.DEFAULT_HALF_LIFE
                ),
                slurm_factor=slurm.get(str(q.pk), 0.0),
                pending_count=count,
                pending=entries,
            )
        )
    return out


def queue_status(
    queue: Queue, *, now: datetime | None = None, pending_limit: int | None = DEFAULT_PENDING_LIMIT
) -> QueueStatus:
    """Status of one queue with (up to ``pending_limit``) of its pending jobs in rank order."""
    return queues_status([queue], now=now, pending_limit=pending_limit)[0]


def _pending(
    ids: list[int],
    usage: dict[int, dict[int, int]],
    queues: dict[int, Queue],
    limit: int | None,
) -> dict[int, tuple[int, tuple[PendingEntry, ...]]]:
    """queue id -> (number pending, the first ``limit`` in rank order). Three queries."""
    rows = list(
        Job.objects.filter(queue_id__in=ids, state=Job.State.PENDING).values_list(
            "pk", "queue_id", "workers", "min_workers", "gpus_per_worker",
            "service_class__priority", "submitted_at",
        )
    )  # fmt: skip
    if limit == 0 or not rows:
        counts: dict[int, int] = defaultdict(int)
        for row in rows:
            counts[row[1]] += 1
        return {pk: (n, ()) for pk, n in counts.items()}
    flavor_ids: dict[int, list[int]] = defaultdict(list)
    for job_id, flavor_id in (
        JobFlavor.objects.filter(job__queue_id__in=ids, job__state=Job.State.PENDING)
        .order_by("job_id", "rank")
        .values_list("job_id", "flavor_id")
    ):
        flavor_ids[job_id].append(flavor_id)

    def within_nominal(row: tuple[Any, ...]) -> bool:
        pk, queue_id, workers, min_workers, g = row[:5]
        queue = queues[queue_id]
        if queue.cohort_id is None:
            return True  # never borrows: its jobs only wait for its own nominal
        units = (min_workers or workers) * g
        nominal = {x.flavor_id: x.nominal for x in queue.quotas.all()}
        used = usage.get(queue_id, {})
        return any(used.get(f, 0) + units <= nominal.get(f, 0) for f in flavor_ids[pk])

    ranked: dict[int, list[tuple[bool, tuple[Any, ...]]]] = defaultdict(list)
    for row in rows:
        ranked[row[1]].append((within_nominal(row), row))
    chosen: dict[int, list[tuple[int, bool]]] = {}
    for queue_id, items in ranked.items():
        # the engine's order within one queue (same fair-share score): nominal, priority, time
        items.sort(key=lambda item: (not item[0], -item[1][5], item[1][6], str(item[1][0])))
        top = items if limit is None else items[:limit]
        chosen[queue_id] = [(row[0], nominal) for nominal, row in top]
    wanted = [pk for items in chosen.values() for pk, _ in items]
    jobs = Job.objects.filter(pk__in=wanted).select_related("owner", "service_class", "runtime")
    by_pk = {job.pk: job for job in jobs}
    names = dict(Flavor.objects.values_list("pk", "name"))
    out: dict[int, tuple[int, tuple[PendingEntry, ...]]] = {}
    for queue_id, items in chosen.items():
        entries = []
        for position, (pk, nominal) in enumerate(items, start=1):
            job = by_pk[pk]
            runtime = getattr(job, "runtime", None)
            entries.append(
                PendingEntry(
                    position=position,
                    job_id=pk,
                    name=job.name,
                    owner=job.owner.get_username(),
                    service_class=job.service_class.name,
                    priority=job.service_class.priority,
                    workers=job.workers,
                    gpus_per_worker=job.gpus_per_worker,
                    flavors=tuple(names[f] for f in flavor_ids[pk]),
                    submitted_at=job.submitted_at,
                    within_nominal=nominal,
                    reason=runtime.pending_reason if runtime else "",
                    message=runtime.pending_message if runtime else "",
                    estimated_start=runtime.estimated_start if runtime else None,
                )
            )
        out[queue_id] = (len(ranked[queue_id]), tuple(entries))
    return out
