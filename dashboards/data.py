"""From the database to plain data (dashboards.plain): each function runs a fixed number of
queries, whatever the number of teams, jobs or buckets."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Count, Q, Sum

from accounting import rating
from accounting.chargeback import Period, chargeback_rows
from accounting.models import Budget, UsageRecord
from accounting.pricing import RELATED, currency, interval_of, load_price_list
from dashboards.models import FIVE_MINUTES, ONE_HOUR, CapacitySample, RollupMark, UsageRollup
from dashboards.plain import (
    OTHER_WORKLOADS,
    BurnDown,
    CohortRow,
    FairShareRow,
    FlavorUtilization,
    MonthlyCosts,
    NodeSlots,
    PreemptionSeries,
    QuotaRow,
    Slot,
    TeamJob,
    UsageSeries,
    WaitRow,
    percentile,
)
from dashboards.rollup import USAGE_MARK, floor_to
from gpusched.engine import fairshare
from gpusched.engine.quota import lendable
from gpusched.engine.tree_usage import NodeUsage
from queues.models import Flavor, Job, JobEvent, JobFlavor, Node, Queue, Team
from queues.models.resources import usable_capacity
from queues.services.queue_status import (
    HOLDING_STATES,
    FlavorStatus,
    QueueStatus,
    cohort_tree_usage,
    queues_status,
)

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
OTHER_TEAMS = "other teams"


@dataclass(frozen=True)
class Range:
    name: str
    label: str
    length: timedelta
    bucket_seconds: int


RANGES = {
    "hour": Range("hour", "last hour", timedelta(hours=1), FIVE_MINUTES),
    "day": Range("day", "last day", timedelta(days=1), FIVE_MINUTES),
    "week": Range("week", "last week", timedelta(days=7), ONE_HOUR),
    "month": Range("month", "last 30 days", timedelta(days=30), ONE_HOUR),
}
DEFAULT_RANGE = "day"


def _buckets(
    now: datetime, span: Range, rolled_to: datetime | None = None
) -> tuple[list[datetime], float]:
    """The range's buckets, oldest first, up to what is known, and the seconds of the last one
    that are. Without a rollup mark (``rolled_to``): the complete buckets (the one in progress
    left out: its average would read as a drop). With one: up to the bucket holding the mark,
    its average taken over the part rolled up, so the chart neither lags a bucket behind nor
    ends in buckets the ledger has not reached yet (read as a false drop to zero)."""
    size = span.bucket_seconds
    step = timedelta(seconds=size)
    last, covered = floor_to(now, size) - step, float(size)
    if rolled_to is not None:
        end = min(now, rolled_to)
        last = floor_to(end, size)
        covered = (end - last).total_seconds()
        if covered <= 0:  # the mark is on a bucket's start: the bucket before is complete
            last, covered = last - step, float(size)
    count = int(span.length.total_seconds()) // size
    return [last - step * i for i in range(count - 1, -1, -1)], covered


# --- usage over time --------------------------------------------------------------------------
def usage_series(
    now: datetime,
    span: Range,
    *,
    team_ids: Sequence[int] | None = None,
    by: str = "team",
    top: int = 10,
    with_capacity: bool = True,
) -> UsageSeries:
    """Average GPU-equivalents in use per bucket, by team (the `top` largest, the rest summed as
    "other teams") or by flavor, with capacity and failed GPU-equivalents. Six queries."""
    mark = RollupMark.objects.filter(name=USAGE_MARK).values_list("at", flat=True).first()
    buckets, covered = _buckets(now, span, mark)
    position = {b: i for i, b in enumerate(buckets)}
    seconds_of = [float(span.bucket_seconds)] * (len(buckets) - 1) + [covered]
    field = "team_id" if by == "team" else "flavor_id"
    rows = UsageRollup.objects.filter(
        bucket_seconds=span.bucket_seconds,
        bucket_start__gte=buckets[0],
        bucket_start__lte=buckets[-1],
    )
    if team_ids is not None:
        rows = rows.filter(team_id__in=list(team_ids))
    model: type[Team] | type[Flavor] = Team if by == "team" else Flavor
    names: dict[int, str] = dict(model.objects.values_list("pk", "name"))
    totals = (
        rows.values(field).annotate(total=Sum("gpu_equivalent_seconds")).values_list(field, "total")
    )
    ranked = [key for key, _ in sorted(totals, key=lambda kv: (-kv[1], names.get(kv[0], "")))]
    shown, rest = ranked[:top], ranked[top:]
    values: dict[str, list[float]] = {names.get(k, str(k)): [0.0] * len(buckets) for k in shown}
    for bucket, key, seconds in (
        rows.filter(**{f"{field}__in": shown})
        .values("bucket_start", field)
        .annotate(total=Sum("gpu_equivalent_seconds"))
        .values_list("bucket_start", field, "total")
    ):
        i = position.get(bucket)
        if i is not None:
            values[names.get(key, str(key))][i] = seconds / seconds_of[i]
    stacks = {name: tuple(values[name]) for name in sorted(values)}
    other = [0.0] * len(buckets)
    for bucket, seconds in (
        rows.exclude(**{f"{field}__in": shown})
        .values("bucket_start")
        .annotate(total=Sum("gpu_equivalent_seconds"))
        .values_list("bucket_start", "total")
    ):
        i = position.get(bucket)
        if i is not None:
            other[i] = seconds / seconds_of[i]
    if rest:
        stacks[OTHER_TEAMS if by == "team" else "other flavors"] = tuple(other)
    capacity: tuple[float | None, ...] = ()
    failed: tuple[float | None, ...] = ()
    other_workloads: tuple[float | None, ...] = ()
    if with_capacity:
        cap: list[float | None] = [None] * len(buckets)
        bad: list[float | None] = [None] * len(buckets)
        held: list[float | None] = [None] * len(buckets)
        for bucket, total, down, others in (
            CapacitySample.objects.filter(
                bucket_seconds=span.bucket_seconds,
                bucket_start__gte=buckets[0],
                bucket_start__lte=buckets[-1],
            )
            .values("bucket_start")
            .annotate(
                total=Sum("capacity_gpu_equivalent"),
                down=Sum("failed_gpu_equivalent"),
                others=Sum("other_gpu_equivalent"),
            )
            .values_list("bucket_start", "total", "down", "others")
        ):
            i = position.get(bucket)
            if i is not None:
                cap[i], bad[i], held[i] = total, down, others
        capacity, failed = tuple(cap), tuple(bad)
        other_workloads = tuple(held) if any(held) else ()
    return UsageSeries(
        range_label=span.label,
        bucket_seconds=span.bucket_seconds,
        buckets=tuple(buckets),
        stacks=stacks,
        capacity=capacity,
        failed=failed,
        stacked_by=by,
        other=other_workloads,
    )


# --- what runs where now ----------------------------------------------------------------------
@dataclass(frozen=True)
class Holding:
    job_id: int
    name: str
    team: str
    cluster_id: int
    flavor_id: int
    units_by_node: dict[str, int]
    stopping: bool = False  # preempted, or ended and releasing its GPUs


def holdings(now: datetime) -> list[Holding]:
    """Jobs holding GPUs now (admitted, running or stopping), the units per node. Two queries."""
    rows = list(
        Job.objects.filter(Q(state__in=HOLDING_STATES) | Q(runtime__release_at__gt=now))
        .exclude(cluster=None)
        .values_list(
            "pk", "name", "queue__team__name", "cluster_id", "placement", "gpus_per_worker",
            "runtime__flavor_id", "state",
        )
    )  # fmt: skip
    missing = [row[0] for row in rows if row[6] is None]
    first = dict(
        JobFlavor.objects.filter(job_id__in=missing, rank=0).values_list("job_id", "flavor_id")
    )
    out = []
    for pk, name, team, cluster_id, placement, g, flavor_id, state in rows:
        flavor = flavor_id if flavor_id is not None else first.get(pk)
        if flavor is None:
            continue
        units = {node: int(count) * g for node, count in (placement or {}).items() if count}
        stopping = state not in ("admitted", "running")
        out.append(Holding(pk, name, team, cluster_id, flavor, units, stopping))
    return out


def flavor_utilization(now: datetime) -> list[FlavorUtilization]:
    """Per flavor: units on all nodes, held by jobs, on failed nodes. Four queries."""
    flavors = list(Flavor.objects.values_list("pk", "name"))
    capacity: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    other: dict[str, int] = defaultdict(int)
    names = dict(flavors)
    ready_units: dict[tuple[int, str, str], int] = {}  # (cluster, node, flavor): the platform's
    for cluster_id, node, units_by_flavor, held_by_others, ready in Node.objects.values_list(
        "cluster_id", "name", "capacity", "other_usage", "ready"
    ):
        usable = usable_capacity(units_by_flavor, held_by_others)
        for name, units in (units_by_flavor or {}).items():
            capacity[name] += units
            if not ready:
                failed[name] += units
            else:
                other[name] += units - usable[name]
                ready_units[(cluster_id, node, name)] = usable[name]
    # held units per node, on Ready nodes only (a failed node's units are failed) and never more
    # than the node has (a stopping job and its successor are not two GPUs)
    held: dict[tuple[int, str, str], int] = defaultdict(int)
    for holding in holdings(now):
        for node, units in holding.units_by_node.items():
            held[(holding.cluster_id, node, names[holding.flavor_id])] += units
    by_name: dict[str, int] = defaultdict(int)
    for key, units in held.items():
        by_name[key[2]] += min(units, ready_units.get(key, 0))
    used = {pk: by_name[name] for pk, name in flavors}
    return [
        FlavorUtilization(name, capacity[name], used[pk], failed[name], other[name])
        for pk, name in flavors
        if capacity[name] or used[pk]
    ]


def node_slots(now: datetime, job_teams: Collection[str] | None = None) -> list[NodeSlots]:
    """Every node's GPUs and MIG slices per flavor, each free, held by a team's job or by other
    workloads (pods the platform did not create), MIG nodes first; a slot names its job only
    for the teams in ``job_teams`` (None: every team), else only the team. Four queries."""
    flavors = {f.name: f for f in Flavor.objects.all()}
    by_id = {f.pk: f.name for f in flavors.values()}
    held: dict[tuple[int, str, str], list[Holding]] = defaultdict(list)
    for holding in holdings(now):
        for node in holding.units_by_node:
            held[(holding.cluster_id, node, by_id[holding.flavor_id])].append(holding)
    out = []
    for node in Node.objects.select_related("cluster"):
        for name, units in sorted((node.capacity or {}).items()):
            slots: list[Slot] = []
            # a failed node's GPUs are failed, whoever held them; running jobs come before
            # stopping ones, and a node never shows more slots than it has
            holders = held[(node.cluster_id, node.name, name)] if node.ready else []
            for holding in sorted(holders, key=lambda h: (h.stopping, h.job_id)):
                label = f"#{holding.job_id} {holding.name}"
                if job_teams is not None and holding.team not in job_teams:
                    label = None
                slots += [Slot(holding.team, label)] * holding.units_by_node[node.name]
            others = units - node.usable_capacity().get(name, units) if node.ready else 0
            slots = slots[: units - others] + [Slot(OTHER_WORKLOADS)] * others
            slots += [Slot()] * max(0, units - len(slots))
            flavor = flavors.get(name)
            out.append(
                NodeSlots(
                    node=f"{node.cluster.name}/{node.name}",
                    flavor=name,
                    mig_config=str((node.labels or {}).get(MIG_CONFIG_LABEL, "")),
                    ready=node.ready,
                    is_mig=bool(flavor and flavor.is_mig),
                    slots=tuple(slots),
                )
            )
    return sorted(out, key=lambda n: (not n.is_mig, n.node, n.flavor))


# --- quotas and fair share --------------------------------------------------------------------
def all_queue_statuses(now: datetime, queues: Iterable[Queue] | None = None) -> list[QueueStatus]:
    targets = Queue.objects.select_related("team") if queues is None else queues
    return queues_status(targets, now=now, pending_limit=0)


def team_statuses(team: Team, now: datetime, with_jobs: bool = True) -> list[QueueStatus]:
    """The team's queues with (up to 100 of) their pending jobs in rank order (``with_jobs``
    False: only their count)."""
    queues = Queue.objects.filter(team=team).select_related("team")
    return queues_status(queues, now=now, pending_limit=100 if with_jobs else 0)


def quota_rows(statuses: Sequence[QueueStatus]) -> list[QuotaRow]:
    return [
        QuotaRow(s.queue, f.flavor, f.nominal, f.used, f.borrowed, f.lent)
        for s in statuses
        for f in s.flavors
    ]


def cohort_rows(statuses: Sequence[QueueStatus]) -> list[CohortRow]:
    """Per cohort and GPU type: the pool, the members lending their unused nominal now and the
    members borrowing above theirs (the queue pages' lent and borrowed; no query)."""
    groups: dict[tuple[str, str], list[tuple[str, FlavorStatus]]] = defaultdict(list)
    for s in statuses:
        if s.cohort is not None:
            for f in s.flavors:
                groups[(s.cohort, f.flavor)].append((s.queue, f))
    return [
        CohortRow(
            cohort=cohort,
            flavor=flavor,
            pool=sum(lendable(f.nominal, f.lending_limit) for _, f in members),
            lenders=tuple((queue, f.lent) for queue, f in members if f.lent > 0),
            borrowers=tuple((queue, f.borrowed) for queue, f in members if f.borrowed > 0),
        )
        for (cohort, flavor), members in sorted(groups.items())
    ]


def cohort_tree_rows(now: datetime) -> list[NodeUsage]:
    """Every cohort tree, node by node and GPU type, with the engine's numbers (no formula
    here: ``gpusched.engine.tree_usage`` over the live quotas and usage)."""
    return cohort_tree_usage(now)


def fair_share_rows(statuses: Sequence[QueueStatus]) -> list[FairShareRow]:
    """Decayed usage, share and Slurm's factor per queue, from the statuses (no query)."""
    total_usage = sum(s.decayed_usage for s in statuses)
    total_weight = sum(s.weight for s in statuses)
    rows = []
    for s in statuses:
        usage_fraction = s.decayed_usage / total_usage if total_usage > 0 else 0.0
        share_fraction = s.weight / total_weight if total_weight > 0 else 0.0
        rows.append(
            FairShareRow(
                queue=s.queue,
                weight=s.weight,
                decayed_usage_hours=s.decayed_usage / 3600.0,
                usage_fraction=usage_fraction,
                share_fraction=share_fraction,
                factor=fairshare.slurm_factor(usage_fraction, share_fraction),
                score=s.fair_share_score,
                current_usage=s.usage_gpu_equivalent,
                pending=s.pending_count,
                share=s.share,
            )
        )
    return rows


# --- queue health -----------------------------------------------------------------------------
def wait_rows(now: datetime, days: int = 7) -> list[WaitRow]:
    """Per queue and class: pending jobs now, and p50/p95 of (started_at - submitted_at) over
    the jobs that started in the last `days` days. Three queries."""
    names = {q.pk: f"{q.team.name}/{q.name}" for q in Queue.objects.select_related("team")}
    pending: dict[tuple[int, str], int] = {}
    for queue_id, cls, count in (
        Job.objects.filter(state=Job.State.PENDING)
        .values("queue_id", "service_class__name")
        .annotate(count=Count("pk"))
        .values_list("queue_id", "service_class__name", "count")
    ):
        pending[(queue_id, cls)] = count
    waits: dict[tuple[int, str], list[float]] = defaultdict(list)
    for queue_id, cls, submitted, started in Job.objects.filter(
        started_at__gte=now - timedelta(days=days), started_at__lte=now
    ).values_list("queue_id", "service_class__name", "submitted_at", "started_at"):
        waits[(queue_id, cls)].append(max(0.0, (started - submitted).total_seconds() / 60.0))
    keys = sorted(set(pending) | set(waits), key=lambda k: (names.get(k[0], ""), k[1]))
    return [
        WaitRow(
            queue=names.get(queue_id, str(queue_id)),
            service_class=cls,
            pending=pending.get((queue_id, cls), 0),
            started=len(waits[(queue_id, cls)]),
            p50_minutes=percentile(waits[(queue_id, cls)], 50),
            p95_minutes=percentile(waits[(queue_id, cls)], 95),
        )
        for queue_id, cls in keys
    ]


def preemption_series(now: datetime, days: int = 14) -> PreemptionSeries:
    """Preemptions (and node-failure requeues) per UTC day and reason. One query.

    A preemption with a grace period is one stop: its PREEMPTED event carries the reason, and
    the REQUEUED event at the end of the grace period ("back in the queue", no reason) is not
    counted again. A gang requeued after a worker failure counts as ``worker-failure``."""
    today = now.astimezone(UTC).date()
    day_list = [today - timedelta(days=i) for i in range(days - 1, -1, -1)]
    start = datetime.combine(day_list[0], time.min, tzinfo=UTC)
    position = {d: i for i, d in enumerate(day_list)}
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * days)
    for at, data in JobEvent.objects.filter(
        kind__in=JobEvent.PREEMPTIONS, at__gte=start, at__lte=now
    ).values_list("at", "data"):
        data = data or {}
        if data.get("reason"):
            reason = str(data["reason"])
        elif "failures" in data:
            reason = "worker-failure"
        else:
            continue  # back in the queue after a preemption already counted
        i = position.get(at.astimezone(UTC).date())
        if i is not None:
            counts[reason][i] += 1
    return PreemptionSeries(
        days=tuple(day_list), by_reason={r: tuple(counts[r]) for r in sorted(counts)}
    )


# --- charges ----------------------------------------------------------------------------------
def month_starts(now: datetime, months: int) -> list[datetime]:
    first = rating.month_start(now)
    out = [first]
    for _ in range(months - 1):
        out.append(rating.month_start(out[-1] - timedelta(days=1)))
    return list(reversed(out))


def monthly_costs(now: datetime, months: int = 6) -> dict[str, MonthlyCosts]:
    """Cost per team and per flavor for each of the last `months` UTC months, from accounting's
    chargeback (exact: the numbers of the statements), one team x flavor grouping a month.
    Returns {"team": ..., "flavor": ...}. About four queries a month."""
    starts = month_starts(now, months)
    labels = tuple(f"{s:%Y-%m}" for s in starts)
    values: dict[str, dict[str, list[float]]] = {
        key: defaultdict(lambda: [0.0] * months) for key in ("team", "flavor")
    }
    for i, start in enumerate(starts):
        period = Period(start, rating.next_month_start(start))
        for row in chargeback_rows(UsageRecord.objects.all(), period, ["team", "flavor"]):
            for key in ("team", "flavor"):
                values[key][row.group[key]][i] += float(row.totals.cost)
    unit = currency()
    return {
        key: MonthlyCosts(
            currency=unit,
            months=labels,
            by_group={name: tuple(round(v, 2) for v in by[name]) for name in sorted(by)},
        )
        for key, by in values.items()
    }


def burn_downs(now: datetime) -> list[BurnDown]:
    """This month's budgets: what is left at the end of each day so far.

    A closed, priced ledger row's stored cost is spread over the UTC days it covers in
    proportion to its time in each; open or unpriced rows are rated with accounting.rating
    (clipped to the month so far) and spread the same way. The month's total is accounting's;
    a single day's share may differ from a day-by-day rating by rounding cents. Four queries
    plus the price list when a row needs rating."""
    month = rating.month_start(now)
    end = rating.next_month_start(now)
    budgets = list(Budget.objects.filter(month=month.date()).select_related("team"))
    if not budgets:
        return []
    team_ids = [b.team_id for b in budgets]
    overlapping = UsageRecord.objects.filter(team_id__in=team_ids, start__lt=now, end__gt=month)
    spent: dict[tuple[int, date], float] = defaultdict(float)

    def spread(team_id: int, start: datetime, stop: datetime, cost: float) -> None:
        whole = (stop - start).total_seconds()
        if whole <= 0:
            return
        for day, seconds in split_into_days(start, stop):
            spent[(team_id, day)] += cost * seconds / whole

    for team_id, start, stop, cost in overlapping.filter(
        closed=True, cost__isnull=False
    ).values_list("team_id", "start", "end", "cost"):
        lower, upper = max(start, month), min(stop, now)
        share = (upper - lower).total_seconds() / max((stop - start).total_seconds(), 1e-9)
        spread(team_id, lower, upper, float(cost) * share)
    unpriced = list(overlapping.exclude(closed=True, cost__isnull=False).select_related(*RELATED))
    if unpriced:
        intervals = [interval_of(r, month, now) for r in unpriced]
        costs: dict[int, float] = defaultdict(float)
        for index, charge in _rated(intervals):
            costs[index] += float(charge.cost)
        for index, record in enumerate(unpriced):
            spread(record.team_id, max(record.start, month), min(record.end, now), costs[index])
    days_in_month = (end - month).days
    today = now.astimezone(UTC).date()
    days = [month.date() + timedelta(days=i) for i in range((today - month.date()).days + 1)]
    out = []
    for budget in sorted(budgets, key=lambda b: b.team.name):
        amount = float(budget.amount)
        remaining: list[float] = []
        running = 0.0
        for day in days:
            running += spent.get((budget.team_id, day), 0.0)
            remaining.append(round(amount - running, 2))
        ideal = [amount * (1 - (i + 1) / days_in_month) for i in range(len(days))]
        out.append(
            BurnDown(
                team=budget.team.name,
                currency=budget.currency,
                budget=amount,
                days=tuple(days),
                remaining=tuple(remaining),
                ideal=tuple(ideal),
            )
        )
    return out


def split_into_days(start: datetime, stop: datetime) -> list[tuple[date, float]]:
    """(UTC day, seconds of [start, stop) in it)."""
    out = []
    moment = start
    while moment < stop:
        midnight = datetime.combine(moment.astimezone(UTC).date(), time.min, tzinfo=UTC)
        following = min(midnight + timedelta(days=1), stop)
        out.append((midnight.date(), (following - moment).total_seconds()))
        moment = following
    return out


def _rated(intervals: list[rating.UsageInterval]) -> list[tuple[int, rating.Charge]]:
    """(index of the interval, charge) for each charge line of the intervals."""
    prices = load_price_list()
    return [
        (index, charge)
        for index, interval in enumerate(intervals)
        for charge in rating.rate([interval], prices)
    ]


# --- a team's view ----------------------------------------------------------------------------
def team_jobs(statuses: Sequence[QueueStatus], username: str) -> list[TeamJob]:
    """The team's pending jobs with their position in their queue (statuses listed with their
    pending jobs); `mine` marks the user's own (no query: owner names come with the statuses)."""
    out = []
    for s in statuses:
        for p in s.pending:
            out.append(
                TeamJob(
                    job_id=p.job_id,
                    name=p.name,
                    queue=s.queue,
                    owner=p.owner,
                    position=p.position,
                    pending_in_queue=s.pending_count,
                    message=p.message,
                    mine=p.owner == username,
                )
            )
    return out
