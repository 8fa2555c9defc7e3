"""``manage.py seed_demo`` builds the demo world and is idempotent."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.core.serializers import serialize

from gpuplatform import access
from queues.models import (
    Cluster,
    Cohort,
    Flavor,
    Membership,
    Node,
    Queue,
    Quota,
    ServiceClass,
    Team,
)

pytestmark = pytest.mark.django_db

MODELS = [User, Group, Flavor, ServiceClass, Cohort, Team, Queue, Quota, Membership, Cluster, Node]


def snapshot() -> str:
    return "".join(serialize("json", model.objects.order_by("pk")) for model in MODELS)


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", history=0, stdout=out, allow_production=True)
    return out.getvalue()


def test_seed_demo_twice_changes_nothing() -> None:
    first_output = seed()
    after_first = snapshot()
    second_output = seed()
    assert snapshot() == after_first
    assert "Created" in first_output
    assert "nothing changed" in second_output


def test_seed_demo_prints_the_demo_logins_and_they_work() -> None:
    output = seed()
    for username, password in [
        ("admin", "admin-demo"),
        ("alice", "alice-demo"),
        ("bob", "bob-demo"),
        ("fiona", "fiona-demo"),
    ]:
        assert f"{username:<8} {password}" in output
        assert authenticate(username=username, password=password) is not None


def test_seed_demo_gives_each_persona_its_role() -> None:
    seed()
    admin, alice, bob, fiona = (
        User.objects.get(username=n) for n in ["admin", "alice", "bob", "fiona"]
    )
    assert access.is_platform_admin(admin)
    assert access.is_finance(fiona) and not access.is_platform_admin(fiona)
    assert [t.name for t in access.member_teams(alice)] == ["team-a"]
    assert [t.name for t in access.member_teams(bob)] == ["team-b"]


def test_seed_demo_builds_flavors_classes_queues_and_cluster() -> None:
    seed()
    assert set(Flavor.objects.values_list("name", flat=True)) == {
        "h100",
        "a100-80gb",
        "h100-1g.10gb",
        "h100-3g.40gb",
    }
    classes = {c.name: c for c in ServiceClass.objects.all()}
    assert (classes["production"].priority, classes["production"].preemptible) == (1000, False)
    assert classes["standard"].priority == 100
    assert (classes["spot"].priority, classes["spot"].preemptible) == (10, True)
    assert classes["spot"].price_multiplier < classes["standard"].price_multiplier
    queues = Queue.objects.all()
    assert queues.count() == 4
    cohorts = {str(q): (q.cohort.name, q.cohort.parent.name) for q in queues if q.cohort}
    assert cohorts == {  # three levels: org, its two departments, the teams' queues
        "team-a/main": ("research", "org"),
        "team-b/main": ("research", "org"),
        "team-c/main": ("research", "org"),
        "team-d/main": ("services", "org"),
    }
    assert all(q.quotas.count() == 4 for q in queues)
    cluster = Cluster.objects.get()
    assert cluster.driver == "simulated"
    totals: dict[str, int] = {}
    for node in Node.objects.filter(cluster=cluster):
        for flavor, count in node.capacity.items():
            totals[flavor] = totals.get(flavor, 0) + count
    assert totals == {"h100": 32, "a100-80gb": 16, "h100-1g.10gb": 14, "h100-3g.40gb": 4}


def test_seeded_objects_pass_validation() -> None:
    seed()
    for model in [Flavor, ServiceClass, Cohort, Team, Queue, Quota, Membership, Cluster, Node]:
        for obj in model.objects.all():
            obj.full_clean()


def test_seed_demo_refuses_with_debug_off_naming_the_setting(settings: Any) -> None:
    """Its logins' passwords are published (admin/admin-demo is a superuser): never on a
    production database unless asked for by name."""
    settings.DEBUG = False
    with pytest.raises(CommandError, match="refuses to run with DEBUG off") as refused:
        call_command("seed_demo", history=0, stdout=StringIO())
    assert "--allow-production" in str(refused.value)
    assert not User.objects.filter(username="admin").exists()


def test_seed_demo_runs_with_debug_on_without_the_flag(settings: Any) -> None:
    settings.DEBUG = True
    call_command("seed_demo", history=0, stdout=StringIO())
    assert User.objects.filter(username="admin").exists()
