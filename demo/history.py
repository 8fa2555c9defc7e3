"""Replay a month of demo work through the real live services with a moving clock.

For each step ``[t, t + step)`` from ``now - days`` to ``now`` (2 h, then 1 h over the last week,
10 min over the last day): the demo researchers submit the jobs ``demo.workload`` draws for the
step, each at its own moment inside it (``queues.services.submit_job(now=...)``), then one
scheduling cycle runs at the step's end (``queues.services.run_cycle(now=...)``: cluster sync,
engine, apply, the accounting accrual and the dashboards' rollup, all at that moment). Each
month that ends inside the replay is closed as final.

The simulated cluster runs at speed 1 during the replay (the replay's clock is already the
simulated time); at the end, the work still running is handed over to the live demo's
``SIMULATION_SPEED`` with its remaining run time kept.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_UP, Decimal

from django.conf import settings

from accounting.budgets import check_budgets, month_to_date_cost
from accounting.models import Budget
from accounting.services import close_month
from demo.submit import Submitter
from demo.workload import DEMO_SEED, draw_requests
from queues.models import Cluster, Job, SimulatedWorkload, Team
from queues.services import run_cycle
from queues.services.jobs import cycles_run_by_caller

# The replay's step shrinks towards now: every 2 hours of replayed time beyond a week ago, hourly
# over the last week, every 10 minutes over the last day (the dashboards' hour and day views).
# A month replays in about a minute of CPU time.
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


@contextmanager
def simulation_speed(speed: float) -> Iterator[None]:
    """Run the simulated clusters at ``speed`` inside the block (drivers read the setting)."""
    before = settings.SIMULATION_SPEED
    settings.SIMULATION_SPEED = speed
    try:
        yield
    finally:
        settings.SIMULATION_SPEED = before


@contextmanager
def cycle_logs_quiet() -> Iterator[None]:
    """Hundreds of replayed cycles would each log a line at INFO: keep warnings only."""
    loggers = [logging.getLogger(name) for name in ("queues.services", "accounting")]
    levels = [each.level for each in loggers]
    for each in loggers:
        each.setLevel(max(logging.WARNING, each.getEffectiveLevel()))
    try:
        yield
    finally:
        for each, level in zip(loggers, levels, strict=True):
            each.setLevel(level)


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
    rng = random.Random(seed)
    submitter = Submitter()
    t = _floor(now - timedelta(days=days), COARSE_STEP)
    with simulation_speed(1.0), cycles_run_by_caller(), cycle_logs_quiet():
        while t < now:
            step = step_at(t, now)
            end = min(t + step, now)
            # the step's jobs arrive during it; the cycle at its end schedules them
            requests = draw_requests(rng, t, end - t)
            offsets = sorted(rng.uniform(0, (end - t).total_seconds()) for _ in requests)
            for request, offset in zip(requests, offsets, strict=True):
                submitter.submit(request, t + timedelta(seconds=offset))
                report.jobs += 1
            _cycle(end, report)
            if _month_start(end) > t:  # a month ended during this step: close it as final
                _close_previous_month(end, report)
            if progress and end.date() != t.date():
                progress(f"  {end:%Y-%m-%d}: {report.jobs} jobs submitted so far")
            t = end
    hand_over_to_live_speed(now, float(settings.SIMULATION_SPEED))
    report.budget = _budget(now)
    return report


def step_at(t: datetime, now: datetime) -> timedelta:
    """The replay's step at ``t``: finer the closer it is to ``now``."""
    for within, step in STEPS:
        if t >= now - within:
            return step
    return COARSE_STEP


def _cycle(t: datetime, report: HistoryReport) -> None:
    run_cycle(now=t, worker="seed_demo --history")
    report.cycles += 1


def _floor(moment: datetime, step: timedelta) -> datetime:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return epoch + (moment - epoch) // step * step


def _month_start(moment: datetime) -> datetime:
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _close_previous_month(t: datetime, report: HistoryReport) -> None:
    previous: date = (_month_start(t) - timedelta(days=1)).date().replace(day=1)
    close_month(previous, t)
    report.closed_months.append(f"{previous:%Y-%m}")


def hand_over_to_live_speed(now: datetime, speed: float) -> None:
    """Rescale the simulated workloads' clocks from speed 1 to ``speed``: what remained of each
    run (and of each stop's grace period) still remains, in simulated time."""
    if speed == 1.0:
        return
    for row in SimulatedWorkload.objects.all():
        row.launched_at = now - (now - row.launched_at) / speed
        if row.stop_requested_at is not None:
            row.stop_requested_at = now - (now - row.stop_requested_at) / speed
        if row.gone_at is not None:
            row.gone_at = now + (row.gone_at - now) / speed
        row.save(update_fields=["launched_at", "stop_requested_at", "gone_at"])


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
