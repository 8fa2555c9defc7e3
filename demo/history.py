"""Replay a month of demo work through the real live services with a moving clock.

For ``t`` from ``now - days`` to ``now`` in steps of ``step``: the demo researchers submit the
jobs ``demo.workload`` draws for that step (``queues.services.submit_job(now=t)``), then one
scheduling cycle runs at ``t`` (``queues.services.run_cycle(now=t)``: cluster sync, engine,
apply, the accounting accrual). The dashboards' rollup is recorded every hour of replayed time
(every cycle over the last day), and each month that ends inside the replay is closed as final.

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
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from accounting.budgets import check_budgets, month_to_date_cost
from accounting.models import Budget
from accounting.services import close_month
from dashboards.rollup import record_cycle
from demo.workload import DEMO_SEED, JobRequest, draw_requests
from queues.models import Flavor, Job, Queue, ServiceClass, SimulatedWorkload, Team
from queues.services import run_cycle, submit_job
from queues.services.jobs import cycles_run_by_caller

logger = logging.getLogger(__name__)

# One cycle per hour of replayed time, every 10 minutes over the last day (the hour and
# day views of the dashboards): a month replays in about a minute on a small machine.
COARSE_STEP = timedelta(hours=1)
FINE_STEP = timedelta(minutes=10)
FINE_SPAN = timedelta(days=1)
BUDGET_TEAM = "team-a"  # the heavy borrower gets a budget it has used 85 % of
BUDGET_SHARE_SPENT = Decimal("0.85")


@dataclass
class HistoryReport:
    skipped: bool = False
    cycles: int = 0
    jobs: int = 0
    closed_months: list[str] = field(default_factory=list)
    budget: str = ""

    def summary(self) -> str:
        if self.skipped:
            return "The cluster already has jobs: no history replayed (it exists already)."
        months = ", ".join(self.closed_months) or "none"
        return (
            f"Replayed {self.cycles} scheduling cycles and {self.jobs} job submissions; "
            f"months closed as final: {months}. {self.budget}"
        )


class Submitter:
    """Turns a ``JobRequest`` into ``submit_job`` arguments (looked up once, then cached)."""

    def __init__(self) -> None:
        self.users: dict[str, Any] = {}
        self.queues = {(q.team.name, q.name): q for q in Queue.objects.select_related("team")}
        self.classes = {c.name: c for c in ServiceClass.objects.all()}
        self.flavors = {f.name: f for f in Flavor.objects.all()}

    def submit(self, request: JobRequest, now: datetime) -> Job:
        user = self.users.get(request.user)
        if user is None:
            user = get_user_model().objects.get(username=request.user)
            self.users[request.user] = user
        runtime = request.runtime_seconds
        return submit_job(
            owner=user,
            queue=self.queues[(request.team, request.queue)],
            service_class=self.classes[request.service_class],
            name=request.name,
            image="registry.example.org/research/trainer:1.4",
            command=["python", "-m", request.name.rsplit("-", 1)[0].replace("-", "_")],
            flavors=[self.flavors[name] for name in request.flavors],
            workers=request.workers,
            gpus_per_worker=request.gpus_per_worker,
            # users over-estimate: backfill plans with the estimate, the run takes `runtime`
            estimated_runtime=int(runtime * 1.25) // 600 * 600 + 600,
            duration_hint=runtime,
            now=now,
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
        report.skipped = True
        return report
    rng = random.Random(seed)
    submitter = Submitter()
    t = _floor(now - timedelta(days=days), COARSE_STEP)
    fine_from = now - FINE_SPAN
    with simulation_speed(1.0), cycles_run_by_caller():
        while t < now:
            step = FINE_STEP if t >= fine_from else COARSE_STEP
            end = min(t + step, now)
            # the step's jobs arrive during it; the cycle at its end schedules them
            requests = draw_requests(rng, t, end - t)
            offsets = sorted(rng.uniform(0, (end - t).total_seconds()) for _ in requests)
            for request, offset in zip(requests, offsets, strict=True):
                submitter.submit(request, t + timedelta(seconds=offset))
                report.jobs += 1
            _cycle(end, report)
            record_cycle(end)
            if _month_start(end) > t:  # a month ended during this step: close it as final
                _close_previous_month(end, report)
            if progress and end.date() != t.date():
                progress(f"  {end:%Y-%m-%d}: {report.jobs} jobs submitted so far")
            t = end
    hand_over_to_live_speed(now, float(settings.SIMULATION_SPEED))
    report.budget = _budget(now)
    return report


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
    return f"Budget of {team.name} this month: {amount} (spent {spent})."
