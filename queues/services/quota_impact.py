"""What lowering a queue's quota below its current usage would do, said before it is saved.

Quotas are admission rules: lowering one stops nothing by itself. The queue's running jobs above
the new nominal become *borrowing*: in a cohort, other queues' within-nominal jobs may reclaim
them (if their class is preemptible); without a cohort the queue simply starts nothing new in
that flavor until its usage drops under the new quota. The jobs named are those the engine's
preemption would stop first (docs/SCHEDULING.md rule 5, ``in_stop_order``).

Only flavors whose nominal goes down are about (raising one flavor says nothing of another that
was already above its nominal). Lowering a nominal also shrinks what can be admitted at all: a
cohort's pool is the sum of its members' nominals and a queue without a cohort uses at most its
own, so GPUs beyond the sum of all nominals stay idle while jobs wait for quota
(``stranded_gpus``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q, Sum
from django.utils import timezone

from gpusched.engine.preemption import victim_rank
from gpusched.engine.running import lost_work
from queues.models import Cohort, CohortQuota, Flavor, Job, Node, Queue, Quota
from queues.models.resources import usable_capacity
from queues.services import clock
from queues.services.queue_status import HOLDING_STATES, flavor_usage


@dataclass(frozen=True)
class AffectedJob:
    job_id: int
    name: str
    gpus: int
    preemptible: bool


@dataclass(frozen=True)
class QuotaImpact:
    flavor: str
    used: int
    old_nominal: int
    new_nominal: int
    jobs: tuple[AffectedJob, ...] = field(default_factory=tuple)
    cohort: str | None = None

    @property
    def above(self) -> int:
        return self.used - self.new_nominal

    @property
    def message(self) -> str:
        text = (
            f"{self.flavor}: the queue uses {self.used}; the new nominal {self.new_nominal} "
            f"(was {self.old_nominal}) leaves {self.above} above nominal."
        )
        if self.cohort:
            exposed = [j for j in self.jobs if j.preemptible]
            kept = [j for j in self.jobs if not j.preemptible]
            if exposed:
                names = ", ".join(f"{j.name} (#{j.job_id})" for j in exposed)
                text += (
                    f" These running jobs become borrowing and may be preempted to give "
                    f"GPUs back to other queues of cohort {self.cohort}: {names}."
                )
            if kept:
                names = ", ".join(f"{j.name} (#{j.job_id})" for j in kept)
                text += f" Not preemptible, they keep running: {names}."
        else:
            names = ", ".join(f"{j.name} (#{j.job_id})" for j in self.jobs)
            text += (
                f" Nothing is stopped ({names} keep running), but no new {self.flavor} job of "
                f"this queue starts until its usage drops under {self.new_nominal}."
            )
        return text


def in_stop_order(jobs: list[Job], moment: datetime) -> list[Job]:
    """One queue's jobs holding GPUs in the order the engine's preemption stops them (rule 5:
    ``victim_rank``; jobs need ``service_class`` and ``cluster`` loaded)."""

    def rank(job: Job) -> tuple[tuple[int, bool, float], int]:
        gpus = job.gpus_per_worker * sum(int(c) for c in job.placement.values())
        ran = (moment - job.started_at).total_seconds() if job.started_at else 0.0
        scale = clock.cluster_scale(job.cluster.driver) if job.cluster is not None else 1.0
        every = clock.wall_seconds(job.checkpoint_interval, scale)
        lost = lost_work(ran, gpus, every)
        return victim_rank(job.service_class.priority, job.preemption_count, lost), -job.pk

    return sorted(jobs, key=rank)


def quota_impact(
    queue: Queue, new_nominals: dict[int, int], *, now: datetime | None = None
) -> list[QuotaImpact]:
    """For each flavor id whose new nominal is below the queue's current usage, what happens.
    ``new_nominals``: flavor id -> the nominal about to be saved (0 for a removed quota)."""
    moment = now or timezone.now()
    usage = flavor_usage([queue.pk], moment).get(queue.pk, {})
    old = {q.flavor_id: q.nominal for q in queue.quotas.all()} if queue.pk else {}
    lowered = {f: n for f, n in new_nominals.items() if n < old.get(f, 0) and usage.get(f, 0) > n}
    if not lowered:
        return []
    names = dict(Flavor.objects.filter(pk__in=list(lowered)).values_list("pk", "name"))
    holding = (
        Job.objects.filter(queue=queue)
        .filter(Q(state__in=HOLDING_STATES) | Q(runtime__release_at__gt=moment))
        .exclude(cluster=None)
        .select_related("service_class", "runtime", "cluster")
    )
    jobs = in_stop_order(list(holding), moment)
    out = []
    for flavor_id, nominal in sorted(lowered.items(), key=lambda item: names[item[0]]):
        above = usage[flavor_id] - nominal
        affected: list[AffectedJob] = []
        covered = 0
        for job in jobs:
            runtime = getattr(job, "runtime", None)
            job_flavor = runtime.flavor_id if runtime is not None else None
            if job_flavor is not None and job_flavor != flavor_id:
                continue
            gpus = job.gpus_per_worker * sum(int(c) for c in job.placement.values())
            affected.append(AffectedJob(job.pk, job.name, gpus, job.service_class.preemptible))
            covered += gpus
            if covered >= above:
                break
        out.append(
            QuotaImpact(
                flavor=names[flavor_id],
                used=usage[flavor_id],
                old_nominal=old.get(flavor_id, 0),
                new_nominal=nominal,
                jobs=tuple(affected),
                cohort=queue.cohort.name if queue.cohort_id else None,
            )
        )
    return out


@dataclass(frozen=True)
class StrandedGpus:
    """GPUs of ``flavor`` that no nominal quota (a queue's, or a cohort's own: SCHEDULING.md
    section 2a) would cover after the change."""

    flavor: str
    capacity: int  # on ready nodes
    covered_before: int  # sum of every queue's and every cohort's own nominal
    covered_after: int

    @property
    def idle(self) -> int:
        return self.capacity - self.covered_after

    @property
    def message(self) -> str:
        return (
            f"{self.flavor}: the clusters have {self.capacity} ready, and after this change all "
            f"nominal quotas (queues' and cohorts' own) together cover {self.covered_after} "
            f"(now {self.covered_before}), so {self.idle} {self.flavor} would be in no queue's "
            f"quota. Jobs may wait for quota while those GPUs stay idle: a cohort shares only "
            f"nominal quotas. Raise another queue's or cohort's quota to keep them in use."
        )


def stranded_gpus(queue: Queue, new_nominals: dict[int, int]) -> list[StrandedGpus]:
    """For each flavor whose nominal goes down, the ready GPUs it would leave in no quota."""
    old = {q.flavor_id: q.nominal for q in queue.quotas.all()} if queue.pk else {}
    return _stranded(old, new_nominals)


def cohort_stranded_gpus(cohort: Cohort, new_nominals: dict[int, int]) -> list[StrandedGpus]:
    """The same for a cohort's own nominal quotas."""
    old = {q.flavor_id: q.nominal for q in cohort.quotas.all()} if cohort.pk else {}
    return _stranded(old, new_nominals)


def _stranded(old: dict[int, int], new_nominals: dict[int, int]) -> list[StrandedGpus]:
    lowered = {f: n for f, n in new_nominals.items() if n < old.get(f, 0)}
    if not lowered:
        return []
    names = dict(Flavor.objects.filter(pk__in=list(lowered)).values_list("pk", "name"))
    capacity = dict.fromkeys(names.values(), 0)
    for units, other in Node.objects.filter(ready=True).values_list("capacity", "other_usage"):
        for name, count in usable_capacity(units, other).items():
            if name in capacity:
                capacity[name] += int(count)
    totals: dict[int, int] = {}
    for model in (Quota, CohortQuota):  # every nominal quota, queues' and cohorts' own
        for flavor_id, total in (
            model.objects.filter(flavor_id__in=list(lowered))
            .values("flavor_id")
            .annotate(total=Sum("nominal"))
            .values_list("flavor_id", "total")
        ):
            totals[flavor_id] = totals.get(flavor_id, 0) + int(total or 0)
    out = []
    for flavor_id, nominal in sorted(lowered.items(), key=lambda item: names[item[0]]):
        before = totals.get(flavor_id, 0)
        after = before - old[flavor_id] + nominal
        name = names[flavor_id]
        if after < capacity[name]:
            out.append(StrandedGpus(name, capacity[name], before, after))
    return out
