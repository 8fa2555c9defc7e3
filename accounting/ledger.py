"""The usage ledger's writer: `accrue_usage(now)`, called once at the end of every live cycle.

What is billed: a job's units (workers x GPUs or MIG slices per worker, of its admitted flavor)
from the moment it starts RUNNING (`Job.started_at`) until the moment it stops running: the time
of its stop event (preempted, requeued after a worker failure, failed, succeeded, cancelled;
`finished_at` for ended jobs). A grace period after a stop request is not billed; an admitted job
that has not started is not billed. Workers are those actually there: a job starts only once
its whole gang runs, its `started` event counts them, and an elastic job that loses workers
gets a `scaled` event at the count it goes on with (queues/services/gang.py).

How: each job has at most one *open* row (the constraint `usage_record_one_open_per_job`). An
accrual reads the job and its events since the open row's start and
- extends the open row to `now` while the job runs on unchanged;
- closes it at the exact time of the job's stop event, or of a scale (then opens a new row with
  the new worker count from that moment);
- closes it at each UTC month boundary it passes and opens the next one there;
- opens a row from `started_at` for a running job that has none (the job's run began).
Only the jobs that changed since the last accrual are read (a run began, stopped or scaled; an
open row not as the last accrual left it; see `_changed_jobs`); every other open row ends at the
last accrual and is extended to `now` by one set-based UPDATE. An accrual's queries do not grow
with the running jobs; one that passes a UTC month boundary reads every open row (to cut it).
Idempotent: rows are keyed by (job, start) (unique constraint), a row is only ever written while
open (conditional UPDATE on `closed=False`), so re-running an accrual at the same or a later
moment never double-counts. A row is priced once, when it closes (`accounting.rating.rate`).
"""

from __future__ import annotations

import itertools
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F, Q

from accounting import rating
from accounting.models import AccrualMark, UsageRecord
from accounting.pricing import gpu_equivalent_of, load_price_list
from accounting.rating.money import exact_seconds
from queues.models import Cluster, Flavor, Job, JobEvent, ServiceClass

logger = logging.getLogger(__name__)

LEDGER_MARK = "usage-ledger"
Kind = JobEvent.Kind
# the events the ledger reads: those that end a run, scale it, place it and start it
TIMELINE_KINDS = (*JobEvent.RUN_ENDS, Kind.SCALED, Kind.ADMITTED, Kind.STARTED)


@dataclass(frozen=True)
class Segment:
    start: datetime
    end: datetime
    workers: int
    closed: bool
    run_start: datetime  # where the run (or the open row) this segment belongs to began


@dataclass
class AccrualReport:
    opened: int = 0
    extended: int = 0
    closed: int = 0
    unpriced: list[str] = field(default_factory=list)


def job_segments(
    job: Job,
    open_row: UsageRecord | None,
    events: Sequence[JobEvent],
    now: datetime,
    since: datetime | None,
) -> list[Segment]:
    """The job's segments from its open row's start, and from each run that began since the
    last accrual (`since`; None: ever), up to `now`."""
    runs: list[tuple[datetime, int]] = []
    if open_row is not None:
        runs.append((open_row.start, open_row.workers))
    for item in events:
        begun = item.kind == Kind.STARTED and item.at <= now and (since is None or item.at >= since)
        if begun and (not runs or item.at > runs[-1][0]):
            runs.append((item.at, _workers_at(job, item.at, events)))
    running = job.state == Job.State.RUNNING and job.started_at is not None
    if running and job.started_at <= now and (not runs or job.started_at > runs[-1][0]):
        runs.append((job.started_at, _workers_at(job, job.started_at, events)))
    segments: list[Segment] = []
    for index, (start, workers) in enumerate(runs):
        following = runs[index + 1][0] if index + 1 < len(runs) else None
        run_end, pieces = _follow_run(start, workers, events, following or now)
        if run_end is None and following is not None:
            run_end = following  # restarted without a recorded stop: close at the restart
        if run_end is None and not running:
            run_end = job.finished_at or now  # no stop event: fall back to the job's own times
        segments += _close(pieces, run_end, now, start)
    return segments


def _follow_run(
    start: datetime, workers: int, events: Sequence[JobEvent], now: datetime
) -> tuple[datetime | None, list[tuple[datetime, int]]]:
    """Walk the events from `start`: scale points [(from, workers)], and the stop moment.

    The walk begins after the run's `started` event: a stop recorded before it at the same
    instant (the previous run requeued, then restarted at once) ends the previous run, not this
    one. Events are in (at, pk) order."""
    pieces = [(start, workers)]
    for item in _after_start(events, start):
        if item.at > now:
            continue
        if item.kind in JobEvent.RUN_ENDS:
            return item.at, pieces
        if item.kind == Kind.SCALED:
            new = int(item.data.get("workers", pieces[-1][1]))
            if new != pieces[-1][1]:
                pieces.append((item.at, new))
    return None, pieces


def _after_start(events: Sequence[JobEvent], start: datetime) -> Sequence[JobEvent]:
    """The events from `start` on, less those before the run's `started` event at `start`."""
    begin = next((i for i, item in enumerate(events) if item.at >= start), len(events))
    after = begin
    for i in range(begin, len(events)):
        if events[i].at != start:
            break
        if events[i].kind == Kind.STARTED:
            after = i + 1
    return events[after:]


def _close(
    pieces: list[tuple[datetime, int]], run_end: datetime | None, now: datetime, run: datetime
) -> list[Segment]:
    out = []
    for index, (start, workers) in enumerate(pieces):
        last = index == len(pieces) - 1
        if not last:
            out.append(Segment(start, pieces[index + 1][0], workers, True, run))
        elif run_end is not None:
            out.append(Segment(start, max(start, run_end), workers, True, run))
        else:
            out.append(Segment(start, max(start, now), workers, False, run))
    return out


def _workers_at(job: Job, start: datetime, events: Sequence[JobEvent]) -> int:
    """Workers when a run began at `start`: those its `started` event counted (the workers
    there and running: an elastic job may start with fewer than admitted), else its
    admission's count, else the job's current count."""
    for item in events:
        if item.at == start and item.kind == Kind.STARTED and "workers" in item.data:
            return int(item.data["workers"])
    admitted = [e for e in events if e.kind == Kind.ADMITTED and e.at <= start]
    if admitted and "workers" in admitted[-1].data:
        return int(admitted[-1].data["workers"])
    return job.current_workers


def split_by_month(segment: Segment) -> list[Segment]:
    """Cut a segment at the UTC month boundaries it crosses; only its last piece may be open."""
    cuts: list[datetime] = []
    boundary = rating.next_month_start(segment.start)
    while boundary < segment.end:
        cuts.append(boundary)
        boundary = rating.next_month_start(boundary)
    bounds = [segment.start, *cuts, segment.end]
    return [
        Segment(a, b, segment.workers, segment.closed or index < len(cuts), segment.run_start)
        for index, (a, b) in enumerate(itertools.pairwise(bounds))
    ]


class _Writer:
    """Writes the jobs' segments: updates the open rows it extends or closes, and gathers the
    new rows in ``new`` (``accrue_usage`` inserts them at once: a month of history is thousands
    of rows)."""

    def __init__(
        self,
        now: datetime,
        report: AccrualReport,
        existing: dict[tuple[int, datetime], UsageRecord],
    ) -> None:
        self.now = now
        self.report = report
        self.existing = existing  # the rows of the jobs being accrued, by (job, start)
        self.new: list[UsageRecord] = []
        # open rows to rewrite, by what they get: rows extended to `now` from the same start
        # (the jobs that started together) are one UPDATE
        self.updates: dict[tuple[tuple[str, Any], ...], list[int]] = defaultdict(list)
        self.price_list: rating.PriceList | None = None
        self.flavors = {f.pk: f for f in Flavor.objects.all()}
        self.classes = {c.pk: c.name for c in ServiceClass.objects.all()}
        self.flavor_ids = {f.name: f.pk for f in self.flavors.values()}
        self.cluster_ids = dict(Cluster.objects.values_list("name", "pk"))

    def template(
        self, job: Job, open_row: UsageRecord | None, run_start: datetime, events: list[JobEvent]
    ) -> dict[str, Any] | None:
        """What a row of this run records besides its times: the open row's values for the
        run it continues; for a new run the job's, with the cluster and flavor of its
        admission (the job may have been requeued since and have none now)."""
        if open_row is not None and run_start == open_row.start:
            return {
                name: getattr(open_row, name)
                for name in (
                    "team_id",
                    "queue_id",
                    "user_id",
                    "cluster_id",
                    "flavor_id",
                    "service_class_id",
                    "gpu_equivalent",
                )
            } | {"per_worker": open_row.units // max(open_row.workers, 1)}
        admitted = [e for e in events if e.kind == Kind.ADMITTED and e.at <= run_start]
        data = admitted[-1].data if admitted else {}
        flavor_id = self.flavor_ids.get(str(data.get("flavor")))
        flavor_id = flavor_id or getattr(getattr(job, "runtime", None), "flavor_id", None)
        cluster_id = self.cluster_ids.get(str(data.get("cluster"))) or job.cluster_id
        if flavor_id is None or cluster_id is None:
            logger.warning(
                "job %s ran without a known flavor or cluster: not accrued",
                job.pk,
                extra={"job_id": job.pk},
            )
            return None
        return {
            "team_id": job.queue.team_id,
            "queue_id": job.queue_id,
            "user_id": job.owner_id,
            "cluster_id": cluster_id,
            "flavor_id": flavor_id,
            "service_class_id": job.service_class_id,
            "gpu_equivalent": gpu_equivalent_of(self.flavors[flavor_id]),
            "per_worker": job.gpus_per_worker,
        }

    def priced(self, values: dict[str, Any], segment: Segment, units: int) -> dict[str, Any]:
        if self.price_list is None:
            self.price_list = load_price_list()
        interval = rating.UsageInterval(
            job_id="ledger",
            team="t",
            queue="q",
            user="u",
            cluster="c",
            flavor=self.flavors[values["flavor_id"]].name,
            service_class=self.classes[values["service_class_id"]],
            units=units,
            gpu_equivalent=values["gpu_equivalent"],
            start=segment.start,
            end=segment.end,
        )
        try:
            charges = rating.rate([interval], self.price_list)
        except rating.RatingError as error:
            self.report.unpriced.append(str(error))
            logger.warning("usage not priced at closing (priced when queried): %s", error)
            return {}
        return {
            "unit_hours": sum((c.unit_hours for c in charges), Decimal(0)),
            "gpu_equivalent_hours": sum((c.gpu_equivalent_hours for c in charges), Decimal(0)),
            "cost": sum((c.cost for c in charges), Decimal(0)),
            "currency": self.price_list.currency,
        }

    def write(
        self,
        job: Job,
        open_row: UsageRecord | None,
        segments: list[Segment],
        events: list[JobEvent],
    ) -> None:
        for run_start in sorted({segment.run_start for segment in segments}):
            values = self.template(job, open_row, run_start, events)
            if values is not None:
                self._write_run(job, values, [s for s in segments if s.run_start == run_start])

    def _write_run(self, job: Job, values: dict[str, Any], segments: list[Segment]) -> None:
        per_worker = values.pop("per_worker")
        parts = [part for segment in segments for part in split_by_month(segment)]
        for part in parts:
            units = part.workers * per_worker
            fields: dict[str, Any] = {
                "end": part.end,
                "seconds": exact_seconds(part.end - part.start),
                "closed": part.closed,
            }
            if part.closed:
                fields |= self.priced(values, part, units)
            row = self.existing.get((job.pk, part.start))
            if row is not None:
                if row.closed:
                    continue  # closed rows are never rewritten
                self.updates[tuple(sorted(fields.items()))].append(row.pk)
                if part.closed:
                    self.report.closed += 1
                else:
                    self.report.extended += 1
                continue
            if part.closed and part.end == part.start:
                continue  # a run that stopped the moment it started uses nothing
            self.new.append(
                UsageRecord(
                    job=job, start=part.start, workers=part.workers, units=units, **values, **fields
                )
            )
            self.report.opened += 1
            if part.closed:
                self.report.closed += 1


def accrue_usage(now: datetime) -> AccrualReport:
    """Bring the ledger up to `now` (see the module docstring), then check team budgets."""
    report = AccrualReport()
    with transaction.atomic():
        mark, _ = AccrualMark.objects.select_for_update().get_or_create(name=LEDGER_MARK)
        since = mark.at
        whole = since is None or rating.next_month_start(since) <= now
        job_ids = _every_job(since, now) if whole else _changed_jobs(since, now)
        if job_ids:
            _accrue_jobs(job_ids, now, since, report)
        if since is not None and not whole and now > since:
            report.extended += _extend_unchanged(since, now)
        if since is None or now > since:
            AccrualMark.objects.filter(name=LEDGER_MARK).update(at=now)
    from accounting.budgets import check_budgets

    check_budgets(now)
    return report


def _every_job(since: datetime | None, now: datetime) -> set[int]:
    """Every job with an open row, running, or whose run began since the last accrual (the
    first accrual: ever), for the first accrual and one that passes a month boundary (each open
    row is cut there)."""
    begun = JobEvent.objects.filter(kind=Kind.STARTED, at__lte=now)
    if since is not None:
        begun = begun.filter(at__gte=since)
    running = Job.objects.filter(
        state=Job.State.RUNNING, started_at__isnull=False, started_at__lte=now
    ).values_list("pk", flat=True)
    opened = UsageRecord.objects.filter(closed=False).values_list("job_id", flat=True)
    return set(opened) | set(running) | set(begun.values_list("job_id", flat=True))


def _changed_jobs(since: datetime, now: datetime) -> set[int]:
    """The jobs whose rows may need more than an extension to `now`: a run began, stopped or
    scaled since the last accrual; an open row whose job no longer runs, or runs since a later
    start (restarted), or that was not extended to the last accrual; a running job without an
    open row. Three queries, whatever the number of running jobs."""
    events = JobEvent.objects.filter(
        kind__in=(*JobEvent.RUN_ENDS, Kind.SCALED, Kind.STARTED), at__gte=since, at__lte=now
    ).values_list("job_id", flat=True)
    stale = (
        UsageRecord.objects.filter(closed=False)
        .filter(
            ~Q(end=since)
            | ~Q(job__state=Job.State.RUNNING)
            | Q(job__started_at__isnull=True)
            | Q(job__started_at__gt=F("start"))
        )
        .values_list("job_id", flat=True)
    )
    unrecorded = (
        Job.objects.filter(state=Job.State.RUNNING, started_at__isnull=False, started_at__lte=now)
        .exclude(pk__in=UsageRecord.objects.filter(closed=False).values("job_id"))
        .values_list("pk", flat=True)
    )
    return set(events) | set(stale) | set(unrecorded)


def _extend_unchanged(since: datetime, now: datetime) -> int:
    """Extend every other open row from the last accrual to `now` in one UPDATE: such a row
    ends at `since` and its seconds are end - start, so both move by the same amount."""
    return UsageRecord.objects.filter(closed=False, end=since).update(
        end=now, seconds=F("seconds") + exact_seconds(now - since)
    )


def _accrue_jobs(
    job_ids: set[int], now: datetime, since: datetime | None, report: AccrualReport
) -> None:
    """Read these jobs, their open rows and timelines, and write their segments."""
    open_rows = {
        row.job_id: row for row in UsageRecord.objects.filter(closed=False, job_id__in=job_ids)
    }
    events: dict[int, list[JobEvent]] = defaultdict(list)
    for item in JobEvent.objects.filter(
        job_id__in=job_ids, kind__in=TIMELINE_KINDS, at__lte=now
    ).order_by("at", "pk"):
        events[item.job_id].append(item)
    existing = {
        (row.job_id, row.start): row
        for row in UsageRecord.objects.filter(job_id__in=job_ids).only(
            "pk", "job_id", "start", "closed"
        )
    }
    writer = _Writer(now, report, existing)
    jobs = Job.objects.filter(pk__in=job_ids).select_related("queue", "runtime")
    for job in jobs.order_by("pk"):
        open_row = open_rows.get(job.pk)
        segments = job_segments(job, open_row, events[job.pk], now, since)
        writer.write(job, open_row, segments, events[job.pk])
    for fields, pks in writer.updates.items():
        for at in range(0, len(pks), 500):
            UsageRecord.objects.filter(pk__in=pks[at : at + 500], closed=False).update(
                **dict(fields)
            )
    UsageRecord.objects.bulk_create(writer.new, batch_size=500)
