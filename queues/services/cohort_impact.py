"""What lowering a cohort's own nominal would do, said before it is saved (the cohort editor).

A cohort's capacity is its own nominal plus what its children lend it (docs/SCHEDULING.md
section 2a); its usage is what its subtree uses beyond its queues' (and child cohorts')
reserved parts. Lowering the nominal below that usage stops nothing by itself: the cohort then
*borrows* the difference from its parent (up to its borrowing limit), so the running jobs of its
queues that are above their own nominal become borrowing at every level up to it and may be
reclaimed by other cohorts under the same parent (if their class is preemptible). A root
cohort, or one past its borrowing limit, starts nothing new that needs the shared quota until
its subtree's usage drops under its limit. Lowering a cohort's nominal also lowers what it lends
its parent, so its ancestors are looked at too.

The arithmetic is the engine's (``gpusched.engine.quota``), on today's usage and tree with the
cohort's proposed parent and quotas; nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from gpusched.engine import model as engine
from gpusched.engine.quota import UNLIMITED, QuotaState, QuotaStatics
from queues.models import Cohort, Flavor, Job, Queue
from queues.services.queue_status import flavor_usage
from queues.services.quota_impact import AffectedJob, in_stop_order
from queues.services.snapshot import HOLDING_STATES, cohort_tree, queue_key


@dataclass(frozen=True)
class BorrowingQueue:
    queue: str  # "<team>/<queue>"
    above: int  # its usage above its own nominal
    jobs: tuple[AffectedJob, ...]  # its jobs rule 5 stops first, covering ``above``


@dataclass(frozen=True)
class CohortImpact:
    cohort: str
    flavor: str
    used: int  # U: what the subtree uses beyond the reserved parts below
    old_capacity: int
    new_capacity: int
    parent: str | None
    limit: int | None  # the most usage allowed after the change; None: no limit of its own
    queues: tuple[BorrowingQueue, ...] = field(default_factory=tuple)

    @property
    def borrowed(self) -> int:
        return self.used - self.new_capacity

    @property
    def over_limit(self) -> bool:
        return self.limit is not None and self.used > self.limit

    @property
    def message(self) -> str:
        text = (
            f"{self.flavor}: cohort {self.cohort}'s subtree uses {self.used} beyond its queues' "
            f"reserved parts; after this change the cohort has {self.new_capacity} "
            f"(was {self.old_capacity}), {self.borrowed} short."
        )
        if self.over_limit:
            assert self.limit is not None
            where = (
                f"{self.cohort} is a root cohort" if self.parent is None
                else f"{self.cohort} may use at most {self.limit} (its borrowing limit)"
            )  # fmt: skip
            return text + (
                f" Nothing is stopped ({where}), but no new {self.flavor} job of its subtree "
                f"that needs the shared quota starts until the subtree's usage drops under "
                f"{self.limit}."
            )
        text += f" It borrows {self.borrowed} from its parent {self.parent}."
        exposed = [(q, j) for q in self.queues for j in q.jobs if j.preemptible]
        kept = [(q, j) for q in self.queues for j in q.jobs if not j.preemptible]
        if exposed:
            text += (
                " These running jobs become borrowing and may be preempted to give GPUs back "
                f"to other cohorts under {self.parent}: {_names(exposed)}."
            )
        if kept:
            text += f" Not preemptible, they keep running: {_names(kept)}."
        return text


def _names(jobs: list[tuple[BorrowingQueue, AffectedJob]]) -> str:
    return ", ".join(f"{j.name} (#{j.job_id}, {q.queue})" for q, j in jobs)


def cohort_impact(
    cohort: Cohort,
    proposed: Mapping[str, engine.Quota],
    *,
    now: datetime | None = None,
) -> list[CohortImpact]:
    """For each flavor whose own nominal ``cohort`` lowers (``proposed``: flavor name -> the
    quota about to be saved; a flavor left out is removed), the cohorts from it up to its root
    that its subtree's usage would put beyond their capacity. ``cohort`` carries the parent
    about to be saved."""
    moment = now or timezone.now()
    flavor_names = dict(Flavor.objects.values_list("pk", "name"))
    today = cohort_tree(flavor_names)
    saved_name = Cohort.objects.filter(pk=cohort.pk).values_list("name", flat=True).first()
    mine = next((c for c in today if c.name == saved_name), None)
    if mine is None:
        return []
    lowered = [
        f for f, q in mine.quotas.items()
        if q.nominal > (proposed[f].nominal if f in proposed else 0)
    ]  # fmt: skip
    if not lowered:
        return []
    parent = cohort.parent.name if cohort.parent_id is not None and cohort.parent else None
    changed = replace(mine, parent=parent, quotas=dict(proposed))
    after_tree = tuple(changed if c.name == mine.name else c for c in today)
    rows = list(
        Queue.objects.exclude(cohort=None).select_related("team", "cohort")
        .prefetch_related("quotas")
    )  # fmt: skip
    queues = [
        engine.Queue(
            name=queue_key(q),
            quotas={
                flavor_names[x.flavor_id]: engine.Quota(
                    x.nominal, x.borrowing_limit, x.lending_limit
                )
                for x in q.quotas.all()
            },
            cohort=q.cohort.name if q.cohort is not None else None,
        )
        for q in rows
    ]
    held = flavor_usage([q.pk for q in rows], moment)
    usage = {
        (queue_key(q), flavor_names[f]): units
        for q in rows
        for f, units in held.get(q.pk, {}).items()
    }
    before = QuotaStatics(queues, today)
    state = QuotaState(queues, usage, QuotaStatics(queues, after_tree))
    chain = [mine.name]
    while (up := state.tree.parent.get(chain[-1])) is not None and up not in chain:
        chain.append(up)
    out = []
    for flavor in sorted(lowered):
        for name in chain:
            used = state.pool_used.get((name, flavor), 0)
            new = state.tree.cohort_limits(name, flavor)
            old = before.tree.cohort_limits(name, flavor).nominal
            if used <= new.nominal or new.nominal >= old:
                continue
            out.append(
                CohortImpact(
                    cohort=name,
                    flavor=flavor,
                    used=used,
                    old_capacity=old,
                    new_capacity=new.nominal,
                    parent=state.tree.parent.get(name),
                    limit=None if new.limit >= UNLIMITED else new.limit,
                    queues=_borrowing_queues(state, name, flavor, rows, moment),
                )
            )
    return out


def _borrowing_queues(
    state: QuotaState, cohort: str, flavor: str, rows: list[Queue], moment: datetime
) -> tuple[BorrowingQueue, ...]:
    """The queues under ``cohort`` above their own nominal in ``flavor`` and borrowing at every
    cohort up to ``cohort`` (those other cohorts' reclaim may reach), with the jobs the engine's
    preemption would stop first (rule 5)."""
    out = []
    by_name = {queue_key(q): q for q in rows}
    for name, chain in sorted(state.tree.chain.items()):
        if cohort not in chain:
            continue
        above = state.used(name, flavor) - state.nominal(name, flavor)
        below = chain[: chain.index(cohort)]
        borrowing = all(
            state.pool_used.get((k, flavor), 0) > state.tree.cohort_limits(k, flavor).nominal
            for k in below
        )
        if above > 0 and borrowing:
            out.append(
                BorrowingQueue(name, above, _first_stopped(by_name[name], flavor, above, moment))
            )
    return tuple(out)


def _first_stopped(
    queue: Queue, flavor: str, above: int, moment: datetime
) -> tuple[AffectedJob, ...]:
    holding = (
        Job.objects.filter(queue=queue)
        .filter(Q(state__in=HOLDING_STATES) | Q(runtime__release_at__gt=moment))
        .filter(Q(runtime__flavor__name=flavor) | Q(runtime__flavor=None))
        .exclude(cluster=None)
        .select_related("service_class", "cluster")
    )
    jobs = in_stop_order(list(holding), moment)
    out: list[AffectedJob] = []
    covered = 0
    for job in jobs:
        gpus = job.gpus_per_worker * sum(int(c) for c in job.placement.values())
        out.append(AffectedJob(job.pk, job.name, gpus, job.service_class.preemptible))
        covered += gpus
        if covered >= above:
            break
    return tuple(out)
