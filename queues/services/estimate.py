"""``estimate_submission``: what would happen to a job if it were submitted now.

The ENGINE decides, on a copy of the current state: the live snapshot (``build_snapshot``) plus
the candidate as one more pending job, through ``gpusched.engine.estimate.estimate``. Nothing
is written. The outcome is one of

- ``start``: it would be admitted within its queue's nominal quota;
- ``borrow``: it would be admitted on quota borrowed from the cohort;
- ``preempt``: it would be admitted once the listed jobs are stopped (after their grace period);
  jobs the user may not see (other teams') are counted, not named;
- ``wait``: it would stay pending, with the engine's plain-English reason and, when the engine
  can tell, an estimated start (the backfill reservation or the running jobs' estimated ends).

The UI's submit form and the REST API both call it. The request is checked by the submission
rules (queues/models/job_rules.py, as ``submit_job`` checks it). The decision is the engine
helper's, whole (its ``Admit``, its victims' ``Stop`` / ``Scale`` and its ``PendingInfo``); this
module only builds the candidate, translates engine names into job rows and engine times into
datetimes, adds the queue's quotas and says it in sentences.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from django.utils import timezone

from gpusched.engine import estimate as engine_estimate
from gpusched.engine import model as engine
from queues.models import Flavor, Job, Queue, ServiceClass
from queues.models.job_rules import Submission, check_submission
from queues.services import clock, messages
from queues.services.queue_status import flavor_usage
from queues.services.snapshot import LiveSnapshot, build_snapshot, queue_key, topology_levels

CANDIDATE = "candidate"  # engine name of the job being estimated (real jobs are numbers)
Outcome = Literal["start", "borrow", "preempt", "wait"]


@dataclass(frozen=True)
class FlavorQuota:
    """The queue's quota in one acceptable flavor, what it uses now and what the job needs."""

    flavor: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    used: int
    need: int

    @property
    def after(self) -> int:
        return self.used + self.need

    @property
    def within_nominal(self) -> bool:
        return self.after <= self.nominal


@dataclass(frozen=True)
class Victim:
    """A running job the candidate would stop (or shrink) to start. A job the user may not see
    (another team's: ``Job.objects.visible_to``) is not named: no id, name or queue."""

    job_id: int | None
    name: str
    queue: str
    reason: str  # reclaim, fair-share or priority
    shrink_to: int | None = None  # elastic victim shrunk to this many workers, else stopped


@dataclass(frozen=True)
class Estimate:
    outcome: Outcome
    summary: str  # one plain sentence for the form
    queue: str
    flavor: str = ""  # the flavor it would run on (start/borrow/preempt)
    cluster: str = ""
    workers: int = 0
    estimated_start: datetime | None = None
    reason: str = ""  # the engine's reason code when it waits
    message: str = ""  # the engine's plain-English explanation when it waits
    victims: tuple[Victim, ...] = ()
    quotas: tuple[FlavorQuota, ...] = field(default_factory=tuple)
    # what it would cost (accounting/job_money.py: the chargeback's prices and rating), on the
    # flavor it would run on (else the most preferred), from its estimated start (else now)
    currency: str = ""
    rate_per_hour: str | None = None  # None: no price in force for that flavor
    projected_cost: str | None = None  # of the estimated runtime; None without one

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (times as UTC ISO-8601)."""
        data = dataclasses.asdict(self)
        data["estimated_start"] = (
            self.estimated_start.isoformat() if self.estimated_start is not None else None
        )
        data["victims"] = [dataclasses.asdict(v) for v in self.victims]
        data["quotas"] = [
            {**dataclasses.asdict(q), "after": q.after, "within_nominal": q.within_nominal}
            for q in self.quotas
        ]
        return data


def _clock(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def estimate_submission(
    user: Any,
    queue: Queue,
    service_class: ServiceClass,
    flavors: Sequence[Flavor],
    workers: int,
    gpus_per_worker: int,
    min_workers: int | None = None,
    topology: tuple[str, str] | None = None,
    estimated_runtime: int | None = None,
    now: datetime | None = None,
) -> Estimate:
    """Estimate a submission of ``workers`` x ``gpus_per_worker`` of the first of ``flavors``
    that fits, to ``queue`` with ``service_class``. ``topology`` is ``(level, mode)`` with mode
    ``required`` or ``preferred``. Reads only; raises ValidationError naming the field when the
    submission breaks a rule of queues/models/job_rules.py (a queue ``user`` may not submit to
    included), as ``submit_job`` would."""
    level, mode = topology or ("", "")
    check_submission(
        user,
        Submission(
            queue=queue,
            service_class=service_class,
            flavors=list(flavors),
            workers=workers,
            gpus_per_worker=gpus_per_worker,
            min_workers=min_workers,
            topology_level=level,
            topology_mode=mode,
            estimated_runtime=estimated_runtime,
        ),
        estimate=True,
    )
    moment = now or timezone.now()
    live = build_snapshot(moment)
    candidate = engine.PendingJob(
        name=CANDIDATE,
        queue=queue_key(queue),
        service_class=service_class.name,
        submitted_at=moment.timestamp(),
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        flavors=tuple(f.name for f in flavors),
        min_workers=min_workers if min_workers is not None and min_workers < workers else None,
        topology=(
            engine.Topology(level=topology[0], required=topology[1] == "required")
            if topology
            else None
        ),
        estimated_runtime=clock.wall_seconds(
            estimated_runtime or None, clock.pending_scale(c.driver for c in live.clusters.values())
        ),
    )
    snapshot = dataclasses.replace(live.snapshot, topology_levels=_levels(live.snapshot, topology))
    quotas = _quotas(queue, flavors, workers, gpus_per_worker, moment)
    decided = engine_estimate.estimate(snapshot, candidate)
    named = [s.job for s in decided.stops] + [s.job for s in decided.scales]
    if decided.pending is not None and decided.pending.blocker:
        named.append(decided.pending.blocker)
    ids = [live.jobs[name].pk for name in named if name in live.jobs]
    seen = set(Job.objects.visible_to(user).filter(pk__in=ids).values_list("pk", flat=True))
    result = _outcome(live, decided, queue_key(queue), quotas, seen)
    return _priced(result, service_class, flavors, gpus_per_worker, candidate, moment)


def _priced(
    result: Estimate,
    service_class: ServiceClass,
    flavors: Sequence[Flavor],
    gpus_per_worker: int,
    candidate: engine.PendingJob,
    now: datetime,
) -> Estimate:
    """The estimate with its rate and projected cost (the candidate's runtime is already on the
    wall clock: one clock with the estimated start)."""
    from accounting.job_money import price

    flavor = next((f for f in flavors if f.name == result.flavor), flavors[0])
    workers = result.workers or candidate.workers
    start = max(result.estimated_start or now, now)
    quote = price(
        flavor, service_class, workers * gpus_per_worker, start, candidate.estimated_runtime
    )
    return dataclasses.replace(
        result,
        currency=quote.currency,
        rate_per_hour=quote.rate_text,
        projected_cost=quote.projected_text,
    )


def _levels(snapshot: engine.Snapshot, topology: tuple[str, str] | None) -> tuple[str, ...]:
    """The snapshot's levels plus the candidate's, by the live cycle's rule (a level no node
    carries does not take part), so the estimate places the job as the cycle would."""
    if not topology or topology[0] in snapshot.topology_levels:
        return snapshot.topology_levels
    labelled = {key for c in snapshot.clusters for n in c.nodes for key in n.labels}
    return topology_levels((*snapshot.topology_levels, topology[0]), labelled)


def _quotas(
    queue: Queue,
    flavors: Sequence[Flavor],
    workers: int,
    gpus_per_worker: int,
    now: datetime,
) -> tuple[FlavorQuota, ...]:
    quotas = {q.flavor_id: q for q in queue.quotas.all()}
    used = flavor_usage([queue.pk], now).get(queue.pk, {})
    need = workers * gpus_per_worker
    out = []
    for flavor in flavors:
        quota = quotas.get(flavor.pk)
        out.append(
            FlavorQuota(
                flavor=flavor.name,
                nominal=quota.nominal if quota else 0,
                borrowing_limit=quota.borrowing_limit if quota else None,
                lending_limit=quota.lending_limit if quota else None,
                used=used.get(flavor.pk, 0),
                need=need,
            )
        )
    return tuple(out)


def _victim(
    live: LiveSnapshot, name: str, reason: str, shrink_to: int | None, seen: set[int]
) -> Victim:
    job = live.jobs[name]
    if job.pk not in seen:
        return Victim(job_id=None, name="", queue="", reason=reason, shrink_to=shrink_to)
    queue = next((a.queue for a in live.snapshot.admitted if a.name == name), "")
    return Victim(
        job_id=job.pk,
        name=job.name,
        queue=queue,
        reason=reason,
        shrink_to=shrink_to,
    )


def _victim_names(victims: Sequence[Victim]) -> str:
    """The jobs the user may see by name, the others only counted: "a (#3, t/q) and 2 jobs of
    another team"."""
    names = [f"{v.name} (#{v.job_id}, {v.queue})" for v in victims if v.job_id is not None]
    hidden = sum(1 for v in victims if v.job_id is None)
    if hidden:
        names.append(f"{hidden} job{'s' if hidden > 1 else ''} of another team")
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _outcome(
    live: LiveSnapshot,
    decided: engine_estimate.Estimate,
    queue: str,
    quotas: tuple[FlavorQuota, ...],
    seen: set[int],
) -> Estimate:
    """The engine's decision in the estimate's terms; jobs whose ids are not in ``seen`` (the
    ones the user may not see) are counted, not named."""
    admit = decided.admit
    if admit is not None:
        victims = tuple(_victim(live, s.job, s.reason, None, seen) for s in decided.stops) + tuple(
            _victim(live, s.job, s.reason or "", s.workers, seen) for s in decided.scales
        )
        start = messages.when(admit.start_at)
        size = f"{admit.workers} worker(s) on {admit.flavor} in cluster {admit.cluster}"
        outcome: Outcome
        if decided.outcome == engine_estimate.PREEMPT:
            outcome = "preempt"
            names = _victim_names(victims)
            summary = (
                f"Would start by preempting {names}: {size}, at about {_clock(start)} "
                f"after their grace period."
            )
        elif decided.outcome == engine_estimate.BORROW:
            outcome = "borrow"
            summary = f"Would start now on quota borrowed from the cohort: {size}."
        else:
            outcome = "start"
            summary = f"Would start now within the queue's quota: {size}."
        return Estimate(
            outcome=outcome,
            summary=summary,
            queue=queue,
            flavor=admit.flavor,
            cluster=admit.cluster,
            workers=admit.workers,
            estimated_start=start,
            victims=victims,
            quotas=quotas,
        )
    info = decided.pending
    when: datetime | None = None
    message = ""
    reason = ""
    if info is not None:
        reason = info.reason
        if info.estimated_start is not None:
            when = messages.when(info.estimated_start)
        blocker = ""
        if info.blocker and info.blocker in live.jobs:
            row = live.jobs[info.blocker]
            blocker = f"{row.name} (#{row.pk})" if row.pk in seen else "of another team"
        message = dataclasses.replace(info, estimated_start=None, blocker=blocker).message
        message = message.replace(
            f"#{info.position} in queue", f"Would be #{info.position} in queue"
        )
        if when is not None:
            message += f" Estimated start: {_clock(when)}."
    summary = "Would wait" + (f" (estimated start {_clock(when)})" if when else "") + "."
    if info is not None and info.overdue:  # no time: the jobs it waits for are overdue
        summary = "Would wait until running jobs that have run past their estimated runtimes end."
    return Estimate(
        outcome="wait",
        summary=summary,
        queue=queue,
        estimated_start=when,
        reason=reason,
        message=message,
        quotas=quotas,
    )
