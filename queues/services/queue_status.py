"""``queue_status``: where a queue stands, per flavor and in fair share, and who waits in it.

Per flavor (Kueue's meanings, docs/SCHEDULING.md sections 2 and 2a): ``nominal``, ``used`` (GPUs
held by its admitted, running or stopping jobs), ``borrowed`` (used above nominal), ``lent`` (its
unused lendable nominal that other queues of its cohort, or through its cohort's parents the rest
of its cohort tree, use now: ``gpusched.engine.tree_usage``), and the borrowing / lending limits.
Fair share (section 5): decayed usage ``H(q)``, the score ``(H/tau + U)/weight`` and Slurm's
factor, and the engine's ``share`` (``SHARE_MEANING``: the one meaning of "over its share" on
every page). Pending jobs in the engine's rank order within the queue (within-nominal jobs first,
then class priority, then submission time), each with its position and the why-pending text the
last cycle stored. A fixed number of queries, whatever the number of jobs.

Used by the queue pages, the REST status endpoint and dashboards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Prefetch, Q
from django.utils import timezone

from gpusched.engine import fairshare
from gpusched.engine import model as engine
from gpusched.engine.quota import QuotaState, QuotaStatics
from gpusched.engine.tree_usage import NodeUsage, queue_lent, tree_usage
from queues.models import Flavor, Job, JobFlavor, Queue, Quota
from queues.services.snapshot import HOLDING_STATES, cohort_tree, queue_key

DEFAULT_PENDING_LIMIT = 100
SHARE_MEANING = (
    "A queue's share is the scheduler's own: the GPUs it uses above its nominal quota, divided "
    "by its cohort's pool and by its weight (the largest over GPU types); 0 means it is within "
    "its quota. Jobs within their queue's quota go first (the queue with the lower score, its "
    "use over time, first); among jobs that borrow, the queue whose share after admitting the "
    "job is lowest goes first, and jobs of the queue with the highest share may be preempted "
    "to give GPUs back: one share for both."
)


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
    position: int | None  # 1-based, the engine's rank in its queue (None: not ranked yet)
    job_id: int
    name: str
    owner: str
    service_class: str
    priority: int
    workers: int
    gpus_per_worker: int
    flavors: tuple[str, ...]
    submitted_at: datetime
    within_nominal: bool | None  # the engine ranked it within nominal (None: not ranked yet)
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
    share: float = 0.0  # the engine's (gpusched.engine.quota.QuotaState.share): SHARE_MEANING
    cohort_parents: tuple[str, ...] = ()  # the cohort's parent, its parent, ... up to the root

    @property
    def over_share(self) -> bool:
        """Borrowing above its nominal quota: fair sharing may reclaim from it."""
        return self.share > 0

    @property
    def share_label(self) -> str:
        return share_label(self.share)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (times as UTC ISO-8601)."""
        return {
            "queue_id": self.queue_id,
            "queue": self.queue,
            "team": self.team,
            "cohort": self.cohort,
            "cohort_parents": list(self.cohort_parents),
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
    flavor_rows = list(Flavor.objects.values_list("pk", "name", "gpu_equivalent"))
    flavor_names = {pk: name for pk, name, _ in flavor_rows}
    cohorts = cohort_tree(flavor_names)
    parent = {c.name: c.parent for c in cohorts}
    trees = {_root(q.cohort.name, parent) for q in targets if q.cohort is not None}
    in_trees = [c.name for c in cohorts if _root(c.name, parent) in trees]
    related = list(
        Queue.objects.filter(Q(pk__in=ids) | Q(cohort__name__in=in_trees))
        .select_related("team", "cohort")
        .prefetch_related(
            Prefetch("quotas", queryset=Quota.objects.select_related("flavor").order_by("flavor"))
        )
    )
    by_id = {q.pk: q for q in related}
    usage = flavor_usage(list(by_id), moment)
    geq = {pk: equivalent for pk, _, equivalent in flavor_rows}
    weights: dict[int, float] = {}
    decayed: dict[int, float] = {}
    for pk, weight, h in Queue.objects.values_list("pk", "weight", "decayed_usage"):
        weights[pk], decayed[pk] = weight, h
    slurm = fairshare.slurm_factors(
        {str(k): v for k, v in decayed.items()}, {str(k): v for k, v in weights.items()}
    )
    pending = _pending(ids, pending_limit)
    state = _quota_state(related, usage, cohorts, flavor_names)
    lent = queue_lent(state)

    half_life = float(settings.FAIRSHARE_HALF_LIFE)  # the engine's (snapshot.half_life)
    out = []
    for target in targets:
        q = by_id[target.pk]
        used = usage.get(q.pk, {})
        flavors = []
        for quota in q.quotas.all():
            u = used.get(quota.flavor_id, 0)
            flavors.append(
                FlavorStatus(
                    flavor=quota.flavor.name,
                    nominal=quota.nominal,
                    borrowing_limit=quota.borrowing_limit,
                    lending_limit=quota.lending_limit,
                    used=u,
                    borrowed=max(0, u - quota.nominal),
                    lent=lent.get((queue_key(q), quota.flavor.name), 0),
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
                fair_share_score=fairshare.score(q.decayed_usage, u_geq, q.weight, half_life),
                slurm_factor=slurm.get(str(q.pk), 0.0),
                pending_count=count,
                pending=entries,
                share=state.share(queue_key(q)),
                cohort_parents=_parents(q.cohort.name, parent) if q.cohort else (),
            )
        )
    return out


def share_label(share: float) -> str:
    """The engine's share in words: "0 (within its quota)", "0.25", or, above nominal with no
    cohort pool to borrow from (a quota lowered below usage), "above its quota, no pool"."""
    if share <= 0:
        return "0 (within its quota)"
    if share == float("inf"):
        return "above its quota, no pool"
    return f"{share:.3g}"


def _root(cohort: str, parent: dict[str, str | None]) -> str:
    return ([cohort, *_parents(cohort, parent)])[-1]


def _parents(cohort: str, parent: dict[str, str | None]) -> tuple[str, ...]:
    """The cohort's parent, its parent, ... up to the root (a cycle stops the walk)."""
    up: list[str] = []
    k = parent.get(cohort)
    while k is not None and k not in up and k != cohort:
        up.append(k)
        k = parent.get(k)
    return tuple(up)


def _quota_state(
    related: list[Queue],
    usage: dict[int, dict[int, int]],
    cohorts: Sequence[engine.Cohort],
    names: dict[int, str],
) -> QuotaState:
    """The engine's quota accounting of ``related`` (every queue of their cohort trees) with
    what each holds now, over the cohort tree (the live snapshot's: ``cohort_tree``)."""
    queues = [
        engine.Queue(
            name=queue_key(q),
            team=q.team.name,
            cohort=q.cohort.name if q.cohort else None,
            weight=q.weight,
            quotas={
                names[quota.flavor_id]: engine.Quota(
                    nominal=quota.nominal,
                    borrowing_limit=quota.borrowing_limit,
                    lending_limit=quota.lending_limit,
                )
                for quota in q.quotas.all()
            },
        )
        for q in related
    ]
    held = {
        (queue_key(q), names[f]): units
        for q in related
        for f, units in usage.get(q.pk, {}).items()
        if units
    }
    return QuotaState(queues, held, QuotaStatics(queues, cohorts))


def cohort_tree_usage(now: datetime | None = None) -> list[NodeUsage]:
    """Every cohort tree now, node by node and flavor (``gpusched.engine.tree_usage``): the
    engine's arithmetic over every queue with a cohort and what it holds (fixed query count)."""
    moment = now or timezone.now()
    names = dict(Flavor.objects.values_list("pk", "name"))
    related = list(
        Queue.objects.exclude(cohort=None)
        .select_related("team", "cohort")
        .prefetch_related("quotas")
    )
    usage = flavor_usage([q.pk for q in related], moment)
    return tree_usage(_quota_state(related, usage, cohort_tree(names), names))


def queue_status(
    queue: Queue, *, now: datetime | None = None, pending_limit: int | None = DEFAULT_PENDING_LIMIT
) -> QueueStatus:
    """Status of one queue with (up to ``pending_limit``) of its pending jobs in rank order."""
    return queues_status([queue], now=now, pending_limit=pending_limit)[0]


def _pending(ids: list[int], limit: int | None) -> dict[int, tuple[int, tuple[PendingEntry, ...]]]:
    """queue id -> (number pending, the first ``limit`` in the engine's rank order). Three
    queries.

    The order and the within-nominal flag are the ones the engine computed at the last cycle
    (``JobRuntime.pending_position`` / ``pending_within_nominal``); nothing is ranked here. Jobs
    the engine has not ranked yet (submitted since the last cycle, or backing off after a gang
    requeue) follow, in submission order, with no position."""
    rows = list(
        Job.objects.filter(queue_id__in=ids, state=Job.State.PENDING).values_list(
            "pk", "queue_id", "submitted_at", "runtime__pending_position"
        )
    )
    counts: dict[int, int] = defaultdict(int)
    for row in rows:
        counts[row[1]] += 1
    if limit == 0 or not rows:
        return {pk: (n, ()) for pk, n in counts.items()}
    by_queue: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        by_queue[row[1]].append(row)
    chosen: dict[int, list[int]] = {}
    for queue_id, items in by_queue.items():
        items.sort(key=lambda r: (r[3] is None, r[3] or 0, r[2], r[0]))
        top = items if limit is None else items[:limit]
        chosen[queue_id] = [row[0] for row in top]
    wanted = [pk for pks in chosen.values() for pk in pks]
    jobs = Job.objects.filter(pk__in=wanted).select_related("owner", "service_class", "runtime")
    by_pk = {job.pk: job for job in jobs}
    flavor_ids: dict[int, list[int]] = defaultdict(list)
    for job_id, flavor_id in (
        JobFlavor.objects.filter(job_id__in=wanted)
        .order_by("job_id", "rank")
        .values_list("job_id", "flavor_id")
    ):
        flavor_ids[job_id].append(flavor_id)
    names = dict(Flavor.objects.values_list("pk", "name"))
    out: dict[int, tuple[int, tuple[PendingEntry, ...]]] = {}
    for queue_id, pks in chosen.items():
        entries = []
        for pk in pks:
            job = by_pk[pk]
            runtime = getattr(job, "runtime", None)
            entries.append(
                PendingEntry(
                    position=runtime.pending_position if runtime else None,
                    job_id=pk,
                    name=job.name,
                    owner=job.owner.get_username(),
                    service_class=job.service_class.name,
                    priority=job.service_class.priority,
                    workers=job.workers,
                    gpus_per_worker=job.gpus_per_worker,
                    flavors=tuple(names[f] for f in flavor_ids[pk]),
                    submitted_at=job.submitted_at,
                    within_nominal=runtime.pending_within_nominal if runtime else None,
                    reason=runtime.pending_reason if runtime else "",
                    message=runtime.pending_message if runtime else "",
                    estimated_start=runtime.estimated_start if runtime else None,
                )
            )
        out[queue_id] = (counts[queue_id], tuple(entries))
    return out
