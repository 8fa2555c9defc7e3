"""``seed_demo --history`` replays demo work through the scheduling engine and writes it as the
live services would have: the dashboards, the ledger, the chargeback export, the job history and
the simulated cluster then agree with each other and with the replay.

The seeding (3 days, a few seconds) runs once for the module, committed, and the database is
flushed afterwards (as pytest-django's transactional tests do); each test runs in a transaction
that is rolled back."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Q
from django.test import Client
from django.utils import timezone

from accounting.ledger import LEDGER_MARK
from accounting.models import AccrualMark, Budget, BudgetAlert, FlavorPrice, Statement, UsageRecord
from dashboards.models import CapacitySample, UsageRollup
from demo.history import draw_history, history_start, simulate_history
from demo.workload import DEMO_SEED
from queues.management.commands.seed_demo import Command as SeedDemo
from queues.models import CycleRun, Job, JobEvent, Node, Queue, SimulatedWorkload, Team
from queues.services import run_cycle

pytestmark = pytest.mark.django_db

HISTORY_DAYS = 3


@pytest.fixture(scope="module")
def seeded(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with django_db_blocker.unblock():
        out = StringIO()
        call_command("seed_demo", history=HISTORY_DAYS, stdout=out, allow_production=True)
        yield out.getvalue()
        call_command("flush", interactive=False, verbosity=0)


def client_for(username: str) -> Client:
    client = Client()
    client.force_login(User.objects.get(username=username))
    return client


def counts() -> dict[str, int]:
    models = [Job, JobEvent, UsageRecord, Statement, UsageRollup, CapacitySample, Budget]
    return {model.__name__: model.objects.count() for model in models} | {
        "BudgetAlert": BudgetAlert.objects.count(),
        "CycleRun": CycleRun.objects.count(),
    }


def test_seed_demo_replays_thirty_days_by_default() -> None:
    parser = SeedDemo().create_parser("manage.py", "seed_demo")
    assert parser.parse_args([]).history == 30


def test_history_has_jobs_of_every_team_and_preemptions(seeded: str) -> None:
    assert "Replayed" in seeded
    teams = set(Job.objects.values_list("queue__team__name", flat=True))
    assert teams == {"team-a", "team-b", "team-c", "team-d"}
    assert Job.objects.filter(state=Job.State.SUCCEEDED).count() > 50
    oldest = Job.objects.order_by("submitted_at").first()
    assert oldest is not None
    assert oldest.submitted_at < timezone.now() - timedelta(days=HISTORY_DAYS - 1)
    kinds = set(JobEvent.objects.values_list("kind", flat=True))
    assert {"submitted", "admitted", "started", "succeeded", "preempted"} <= kinds
    mig_jobs = Job.objects.filter(queue__team__name="team-d", state=Job.State.SUCCEEDED)
    assert mig_jobs.exists()


def billed_unit_seconds_from_events(job: Job, until: datetime) -> float:
    """Units x seconds from each `started` event to the next stop event (or `until`)."""
    total, started = 0.0, None
    for event in job.events.order_by("at", "pk"):
        if event.kind == JobEvent.Kind.STARTED and started is None:
            started = event.at
        elif event.kind in JobEvent.RUN_ENDS and started is not None:
            total += (event.at - started).total_seconds()
            started = None
    if started is not None:
        total += (until - started).total_seconds()
    return total * job.workers * job.gpus_per_worker


def ledger_unit_seconds() -> dict[int, float]:
    ledger: dict[int, float] = {}
    for job_id, units, start, end in UsageRecord.objects.values_list(
        "job_id", "units", "start", "end"
    ):
        ledger[job_id] = ledger.get(job_id, 0.0) + units * (end - start).total_seconds()
    return ledger


def seeded_at() -> datetime:
    """The moment the history was replayed up to (the ledger's last accrual)."""
    mark = AccrualMark.objects.get(name=LEDGER_MARK).at
    assert mark is not None
    return mark


def test_ledger_hours_match_the_runs_in_the_job_events(seeded: str) -> None:
    ledger = ledger_unit_seconds()
    jobs = Job.objects.filter(Q(started_at__isnull=False) | Q(pk__in=ledger))
    assert jobs.count() > 50
    for job in jobs:
        expected = billed_unit_seconds_from_events(job, seeded_at())
        # an open row reaches the last accrual: to the microsecond
        assert abs(ledger.get(job.pk, 0.0) - expected) < 0.01, job


def test_ledger_gpu_hours_equal_what_the_simulator_ran(seeded: str) -> None:
    # the same replay again, in memory: every job's billed GPU-seconds are the simulator's runs
    now = seeded_at()
    start = history_start(HISTORY_DAYS, now)
    requests = draw_history(start, now, DEMO_SEED)
    sim = simulate_history(requests, start, now)
    jobs = list(Job.objects.order_by("pk"))
    assert [job.name for job in jobs] == [request.name for _, request in requests]
    ledger = ledger_unit_seconds()
    ran_in_all = 0.0
    for index, job in enumerate(jobs):
        ran, began = 0.0, None
        for moment in sim.stories[str(index)].moments:
            if moment.kind == JobEvent.Kind.STARTED:
                began = moment.at
            elif moment.kind in JobEvent.RUN_ENDS and began is not None:
                ran, began = ran + moment.at - began, None
        if began is not None:
            ran += now.timestamp() - began
        ran *= job.workers * job.gpus_per_worker
        assert abs(ledger.get(job.pk, 0.0) - ran) < 0.01, job
        ran_in_all += ran
    assert ran_in_all > 0
    assert abs(sum(ledger.values()) - ran_in_all) < 0.01 * len(jobs)


def price_of(row: UsageRecord) -> Decimal:
    """The cost of one ledger row from the seed's prices (MIG: its GPU share of the H100)."""
    h100 = FlavorPrice.objects.get(flavor__name="h100").price_per_unit_hour
    prices = {p.flavor.name: p.price_per_unit_hour for p in FlavorPrice.objects.all()}
    per_unit = prices.get(row.flavor.name, Decimal(str(row.flavor.gpu_equivalent)) * h100)
    hours = Decimal(row.units) * Decimal(int((row.end - row.start).total_seconds())) / 3600
    cost = hours * per_unit * row.service_class.price_multiplier
    return cost.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


def test_chargeback_totals_equal_the_sum_of_ledger_costs(seeded: str) -> None:
    start = (timezone.now() - timedelta(days=HISTORY_DAYS + 2)).date()
    end = (timezone.now() + timedelta(days=1)).date()
    response = client_for("fiona").get(
        "/api/v1/chargeback/", {"start": start, "end": end, "group_by": "team"}
    )
    assert response.status_code == 200
    body = response.json()
    rows = UsageRecord.objects.select_related("flavor", "service_class")
    expected = sum((row.cost if row.closed else price_of(row) for row in rows), Decimal(0))
    assert expected > 0
    total = Decimal(body["totals"]["cost"])
    assert abs(total - expected) <= Decimal("0.01") * rows.filter(closed=False).count()
    assert {row["team"] for row in body["rows"]} == {"team-a", "team-b", "team-c", "team-d"}

    exported = client_for("fiona").get(
        "/api/v1/chargeback/",
        {"start": start, "end": end, "group_by": "team", "format": "csv"},
    )
    lines = list(csv.reader(io.StringIO(b"".join(exported.streaming_content).decode())))
    header, total_line = lines[0], lines[-1]
    assert total_line[0] == "TOTAL"
    assert Decimal(total_line[header.index("cost")]) == total


def chart(payload: dict[str, Any], chart_id: str) -> dict[str, Any]:
    return next(c for c in payload["charts"] if c["id"] == chart_id)


def total_of(payload: dict[str, Any], chart_id: str, traces: set[str]) -> float:
    """The sum of the numbers plotted by the named traces of one chart."""
    return sum(
        value
        for trace in chart(payload, chart_id)["figure"]["data"]
        if trace.get("name") in traces
        for value in trace.get("y") or []
        if isinstance(value, int | float)
    )


TEAMS = {"team-a", "team-b", "team-c", "team-d"}

# (dashboard, query, chart, traces that only the replayed history can fill)
HISTORY_CHARTS = [
    ("cluster", {"range": "hour"}, "usage", TEAMS),
    ("cluster", {"range": "day"}, "usage", TEAMS),
    ("cluster", {"range": "week"}, "usage", TEAMS),
    ("cluster", {"range": "month"}, "usage", TEAMS),
    ("cluster", {}, "flavors", {"Used"}),
    ("quotas", {}, "quota", {"Used"}),
    ("quotas", {}, "share", {"Decayed usage share"}),
    ("health", {}, "waits", {"p95 wait"}),
    ("health", {}, "preemptions", {"fair-share", "priority", "reclaim"}),
    ("charges", {}, "team-costs", TEAMS),
    ("charges", {}, "flavor-costs", {"h100", "a100-80gb", "h100-1g.10gb", "h100-3g.40gb"}),
]


@pytest.mark.parametrize("slug, query, chart_id, traces", HISTORY_CHARTS)
def test_every_cluster_dashboard_shows_the_history(
    seeded: str, slug: str, query: dict[str, str], chart_id: str, traces: set[str]
) -> None:
    response = client_for("admin").get(f"/dashboards/{slug}/data/", query)
    assert response.status_code == 200
    assert total_of(response.json(), chart_id, traces) > 0


def test_gpu_map_shows_the_jobs_running_now(seeded: str) -> None:
    response = client_for("admin").get("/dashboards/mig/data/")
    assert response.status_code == 200
    running = Job.objects.filter(state=Job.State.RUNNING)
    assert running.exists()
    cells = str(chart(response.json(), "whole")["figure"]["data"][0]["text"]) + str(
        chart(response.json(), "mig")["figure"]["data"][0]["text"]
    )
    assert all(f"#{job.pk} " in cells for job in running)


@pytest.mark.parametrize("span", ["day", "week"])
def test_alices_team_dashboard_shows_her_teams_usage(seeded: str, span: str) -> None:
    team = Team.objects.get(name="team-a")
    response = client_for("alice").get("/dashboards/team/data/", {"team": team.pk, "range": span})
    assert response.status_code == 200
    assert total_of(response.json(), "usage", {"h100", "a100-80gb"}) > 0


def test_the_budget_of_the_heavy_borrower_has_crossed_eighty_percent(seeded: str) -> None:
    budget = Budget.objects.get(team__name="team-a")
    assert list(budget.alerts.values_list("threshold", flat=True)) == [80]


def test_seeding_twice_changes_nothing(seeded: str) -> None:
    before = counts()
    out = StringIO()
    call_command("seed_demo", history=HISTORY_DAYS, stdout=out, allow_production=True)
    assert "No history replayed: the cluster already has jobs" in out.getvalue()
    assert counts() == before


def test_alice_sees_her_history_on_the_jobs_page(seeded: str) -> None:
    response = client_for("alice").get("/jobs/", {"state": "succeeded"})
    assert response.status_code == 200
    job = Job.objects.filter(queue__team__name="team-a", state="succeeded").latest("pk")
    assert job.name in response.content.decode()


def test_the_simulated_cluster_runs_what_the_database_says_runs(seeded: str) -> None:
    holding = Job.objects.filter(state__in=[Job.State.RUNNING, Job.State.PREEMPTED])
    on_cluster = set(SimulatedWorkload.objects.values_list("job_id", flat=True))
    assert on_cluster == {str(pk) for pk in holding.values_list("pk", flat=True)}
    assert all(q.decayed_usage_at == seeded_at() for q in Queue.objects.all())


def admissions_without_a_stop_between(job: Job) -> int:
    """How many times the job was admitted again while it still held its earlier admission."""
    twice, holding = 0, False
    for kind in job.events.order_by("at", "pk").values_list("kind", flat=True):
        if kind == JobEvent.Kind.ADMITTED:
            twice += holding
            holding = True
        elif kind in JobEvent.RUN_ENDS:
            holding = False
    return twice


def test_a_live_cycle_right_after_seeding_keeps_the_running_jobs_and_admits_nothing_twice(
    seeded: str, settings: Any
) -> None:
    # at the instant the history ends: a moment later a job may end and the engine may rightly
    # preempt for the GPUs it frees (a new decision, not the hand-over; with 5 s it failed for
    # a few minutes of each day, e.g. a seed at 12:29:25-12:29:35 UTC on 2026-11-25)
    moment = seeded_at()
    speed = float(settings.SIMULATION_SPEED)
    running = {}
    for row in SimulatedWorkload.objects.filter(stop_requested_at__isnull=True):
        if (moment - row.launched_at).total_seconds() * speed < row.run_seconds:
            running[int(row.job_id)] = Job.objects.get(pk=int(row.job_id)).placement
    assert running  # the demo ends with work on the cluster
    last_event = JobEvent.objects.order_by("-pk").values_list("pk", flat=True)[0]

    report = run_cycle(now=moment)

    assert report.ran
    for pk, placement in running.items():
        job = Job.objects.get(pk=pk)
        assert (job.state, job.placement) == (Job.State.RUNNING, placement), job
        assert not job.events.filter(pk__gt=last_event).exists(), job
    assert not [j for j in Job.objects.all() if admissions_without_a_stop_between(j)]
    used: dict[tuple[str, str], int] = {}
    for job in Job.objects.filter(state__in=["admitted", "running", "preempted"]):
        flavor = job.runtime.flavor.name
        for node, workers in job.placement.items():
            key = (node, flavor)
            used[key] = used.get(key, 0) + workers * job.gpus_per_worker
    capacity = {(n.name, f): units for n in Node.objects.all() for f, units in n.capacity.items()}
    assert all(units <= capacity[key] for key, units in used.items()), used
