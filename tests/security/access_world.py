"""The world the access matrix (test_access_matrix.py) walks: two teams with one object of each
kind, and a client signed in as each role.

``build_world()`` returns the ids the matrix's URL templates name: ``{job_a}``, ``{team_b}``,
``{token_a}`` (researcher A's own token) and so on; ``clients()`` one client per role (a session:
the API is walked as the browser and a script both use it; tokens are tested elsewhere).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from accounting.models import (
    Budget,
    ClassMultiplier,
    FlavorPrice,
    Statement,
    StatementLine,
    UsageRecord,
)
from queues.models import (
    Cluster,
    Cohort,
    Flavor,
    Job,
    Membership,
    Node,
    Queue,
    ServiceClass,
    Team,
    WhatIfRun,
)
from tokens.models import ApiToken

ROLES = (
    "anonymous",
    "outsider",
    "researcher_a",
    "team_admin_a",
    "researcher_b",
    "finance",
    "platform_admin",
)
"""The columns of the matrix, in this order."""

JOB_NAMES = {
    "pending-job-of-team-a": ("researcher_a", "team_admin_a", "platform_admin"),
    "pending-job-of-team-b": ("researcher_b", "platform_admin"),
}
"""The world's jobs, by name, and the roles that may read that name (Job.objects.visible_to)."""


def _usage(job: Job, owner: User, cluster: Cluster, flavor: Flavor) -> UsageRecord:
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    return UsageRecord.objects.create(
        job=job, team=job.queue.team, queue=job.queue, user=owner, cluster=cluster,
        flavor=flavor, service_class=job.service_class, workers=1, units=1,
        gpu_equivalent=Decimal(1), start=start, end=start.replace(hour=10),
        seconds=Decimal(3600), closed=True,
    )  # fmt: skip


def _adjustment(statement: Statement) -> int:
    line = StatementLine.objects.create(
        statement=statement, kind=StatementLine.Kind.ADJUSTMENT, description="credit", cost=-5
    )
    return int(line.pk)


def build_world(users: dict[str, User], fixtures: dict[str, Any]) -> dict[str, int]:
    """Everything the matrix names, from the conftest personas and world (``fixtures``)."""
    queue_a: Queue = fixtures["queue_a"]
    queue_b: Queue = fixtures["queue_b"]
    cluster: Cluster = fixtures["sim_cluster"]
    flavor: Flavor = fixtures["flavor_h100"]
    make_job = fixtures["make_job"]
    job_a = make_job(queue=queue_a, owner=users["researcher_a"], name="pending-job-of-team-a")
    job_b = make_job(queue=queue_b, owner=users["researcher_b"], name="pending-job-of-team-b")
    team_a: Team = queue_a.team
    team_b: Team = queue_b.team
    token, _ = ApiToken.issue(user=users["researcher_a"], name="a's token")
    price = FlavorPrice.objects.create(
        flavor=flavor,
        price_per_unit_hour=Decimal(4),
        effective_from=datetime(2026, 1, 1, tzinfo=UTC),
    )
    multiplier = ClassMultiplier.objects.create(
        service_class=fixtures["service_class_std"], multiplier=Decimal(1),
        effective_from=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    statement_a = Statement.objects.create(team=team_a, month=date(2026, 3, 1))
    statement_b = Statement.objects.create(team=team_b, month=date(2026, 3, 1))
    return {
        "job_a": job_a.pk,
        "job_b": job_b.pk,
        "queue_a": queue_a.pk,
        "queue_b": queue_b.pk,
        "team_a": team_a.pk,
        "team_b": team_b.pk,
        "membership_a": Membership.objects.get(user=users["researcher_a"]).pk,
        "membership_b": Membership.objects.get(user=users["researcher_b"]).pk,
        "token_a": token.pk,
        "usage_a": _usage(job_a, users["researcher_a"], cluster, flavor).pk,
        "usage_b": _usage(job_b, users["researcher_b"], cluster, flavor).pk,
        "statement_a": statement_a.pk,
        "statement_b": statement_b.pk,
        "adjustment_a": _adjustment(statement_a),
        "adjustment_b": _adjustment(statement_b),
        "budget_a": Budget.objects.create(team=team_a, month=date(2026, 3, 1), amount=100).pk,
        "budget_b": Budget.objects.create(team=team_b, month=date(2026, 3, 1), amount=100).pk,
        "cohort": Cohort.objects.get().pk,
        "flavor": flavor.pk,
        "service_class": ServiceClass.objects.get().pk,
        "cluster": cluster.pk,
        "node": Node.objects.order_by("pk").first().pk,  # type: ignore[union-attr]
        "price": price.pk,
        "multiplier": multiplier.pk,
        "what_if_run": str(  # the platform admin's own replay (a UUID)
            WhatIfRun.objects.create(created_by=users["platform_admin"], proposal={"days": 1}).pk
        ),
    }


def clients(users: dict[str, User]) -> dict[str, APIClient]:
    out = {}
    for role in ROLES:
        client = APIClient(raise_request_exception=False)
        if role != "anonymous":
            client.force_login(users[role])
        out[role] = client
    return out
