"""Replay a month of demo work through the real scheduling engine, then write it at once.

1. Draw the work: the demo researchers' jobs from ``now - days`` to ``now`` (``demo.workload``,
   seeded), each submitted at its own moment.
2. Decide it: the pure engine's simulator replays the month in simulated time
   (``demo.replay.HistorySimulator``, on the platform as the live cycle sees it:
   ``queues.services.snapshot.build_snapshot``): a cycle at every submission, end, release and
   timer, as the live platform queues them; the simulated cluster's worker failures as its
   driver draws them.
3. Write it in bulk (``demo.history_rows``): jobs in their final state and placement, the
   job-event timeline in the live services' own words, runtimes, the workers still on the
   simulated cluster (on the live demo's ``SIMULATION_SPEED`` clock, so the live demo carries on
   where the replay stops), the queues' decayed usage, a ``CycleRun`` per replayed cycle and
   the metric counters.
4. Derive the rest with the real code, once: the usage ledger (``accrue_usage``), the months
   that ended closed as final (``close_month``, at each month's end), the dashboards' usage
   rollups and capacity samples, and the heavy borrower's budget.

All of it in one transaction: a failure leaves no half history behind. A month replays in a
few seconds.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_UP, Decimal

from django.conf import settings
from django.db import transaction

from accounting.budgets import check_budgets, month_to_date_cost
from accounting.models import Budget
from accounting.services import accrue_usage, close_month
from dashboards.rollup import rebuild_usage_rollups, sample_capacity_between
from demo.history_rows import HistoryWriter
from demo.replay import HistorySimulator, scenario_of, world_of
from demo.workload import DEMO_SEED, JobRequest, draw_requests
from queues.models import Cluster, Job, Team
from queues.services import clock
from queues.services.snapshot import build_snapshot

# The draws' time resolution (the rates follow the time of day and week): every 2 hours of
# replayed time beyond a week ago, hourly over the last week, every 10 minutes over the last day.
STEPS = (
    (timedelta(days=1), timedelta(minutes=10)),
    (timedelta(days=7), timedelta(hours=1)),
)
COARSE_STEP = timedelta(hours=2)
BUDGET_TEAM = "team-a"  # the heavy borrower gets a budget it has used 85 % of
BUDGET_SHARE_SPENT = Decimal("0.85")


@dataclass
class HistoryReport:
    skipped: str = ""  # why nothing was replayed
    cycles: int = 0
    jobs: int = 0
    closed_months: list[str] = field(default_factory=list)
    budget: str = ""

    def summary(self) -> str:
        if self.skipped:
            return f"No history replayed: {self.skipped}"
        months = ", ".join(self.closed_months) or "none"
        return (
            f"Replayed {self.cycles} scheduling cycles and {self.jobs} job submissions; "
            f"months closed as final: {months}. {self.budget}"
        )


def history_exists() -> bool:
    return Job.objects.exists()


def replay_history(
    days: int,
    now: datetime,
    *,
    seed: int = DEMO_SEED,
    progress: Callable[[str], None] | None = None,
) -> HistoryReport:
    """Replay ``days`` of demo work ending at ``now``; does nothing if any job exists."""
    report = HistoryReport()
    if days <= 0:
        return report
    if history_exists():
        report.skipped = "the cluster already has jobs (the history exists already)."
        return report
    if Cluster.objects.exclude(driver=Cluster.Driver.SIMULATED).exists():
        report.skipped = "a real (non-simulated) cluster is registered; the replay would run on it."
        return report
    start = history_start(days, now)
    requests = draw_history(start, now, seed)
    sim = simulate_history(requests, start, now)
    _say(progress, f"  decided {len(requests)} jobs in {len(sim.cycles)} engine cycles")
    with transaction.atomic():
        HistoryWriter(sim, requests, now, float(settings.SIMULATION_SPEED)).write()
        _say(progress, "  wrote the jobs, their events and the simulated cluster's workers")
        accrue_usage(now)
        report.closed_months = _close_months(start, now)
        rebuild_usage_rollups(now)
        sample_capacity_between(start, now)
        _say(progress, "  derived the usage ledger, statements and dashboards' time series")
        report.budget = _budget(now)
    report.cycles, report.jobs = len(sim.cycles), len(requests)
    return report


def history_start(days: int, now: datetime) -> datetime:
    """Where a replay of ``days`` ending at ``now`` begins (on a whole 2-hour step)."""
    return _floor(now - timedelta(days=days), COARSE_STEP)


def draw_history(start: datetime, now: datetime, seed: int) -> list[tuple[datetime, JobRequest]]:
    """The jobs the demo teams submit from ``start`` to ``now``, with their submission times."""
    rng = random.Random(seed)
    out: list[tuple[datetime, JobRequest]] = []
    t = start
    while t < now:
        end = min(t + step_at(t, now), now)
        requests = draw_requests(rng, t, end - t)
        offsets = sorted(rng.uniform(0, (end - t).total_seconds()) for _ in requests)
        out += [(t + timedelta(seconds=o), r) for r, o in zip(requests, offsets, strict=True)]
        t = end
    return out


def simulate_history(
    requests: list[tuple[datetime, JobRequest]], start: datetime, now: datetime
) -> HistorySimulator:
    """Replay the requests through the engine on the platform as it is now (no writes)."""
    # the replay runs on the jobs' own clock: the snapshot's wall seconds back into job seconds
    world = world_of(build_snapshot(now).snapshot, clock.class_scale())
    scenario = scenario_of(
        world,
        [(at.timestamp(), request) for at, request in requests],
        start.timestamp(),
        now.timestamp(),
        cycle_interval=float(settings.CYCLE_INTERVAL),
    )
    sim = HistorySimulator(scenario, float(settings.SIMULATION_FAILURE_RATE))
    sim.run()
    return sim


def step_at(t: datetime, now: datetime) -> timedelta:
    """The draws' step at ``t``: finer the closer it is to ``now``."""
    for within, step in STEPS:
        if t >= now - within:
            return step
    return COARSE_STEP


def _say(progress: Callable[[str], None] | None, line: str) -> None:
    if progress is not None:
        progress(line)


def _floor(moment: datetime, step: timedelta) -> datetime:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return epoch + (moment - epoch) // step * step


def _month_start(moment: datetime) -> datetime:
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _close_months(start: datetime, now: datetime) -> list[str]:
    """Close each month that ended during the replay as final, at its end."""
    closed = []
    boundary = _month_start(start)
    while True:
        boundary = _month_start(boundary + timedelta(days=32))
        if boundary > now:
            return closed
        previous: date = (boundary - timedelta(days=1)).date().replace(day=1)
        close_month(previous, boundary)
        closed.append(f"{previous:%Y-%m}")


def _budget(now: datetime) -> str:
    """A budget for this month that the heavy borrower has spent 85 % of (alert at 80 %)."""
    team = Team.objects.filter(name=BUDGET_TEAM).first()
    if team is None:
        return ""
    spent = month_to_date_cost([team.pk], now).get(team.name, Decimal(0))
    if spent <= 0:
        return f"No budget for {team.name}: it has spent nothing this month yet."
    amount = (spent / BUDGET_SHARE_SPENT).quantize(Decimal("1"), rounding=ROUND_UP)
    Budget.objects.get_or_create(
        team=team, month=_month_start(now).date(), defaults={"amount": amount}
    )
    check_budgets(now)
    return f"Budget of {team.name} this month: {amount} (spent {spent.quantize(Decimal('0.01'))})."
