"""Shared helpers of the live-cycle tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from django.contrib.auth.models import User

from queues.models import (
    Cluster,
    Cohort,
    Flavor,
    Job,
    Membership,
    Node,
    Queue,
    Quota,
    ServiceClass,
    Team,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def kinds(job: Job) -> list[str]:
    return list(job.events.order_by("at", "pk").values_list("kind", flat=True))


def last_message(job: Job, kind: str) -> str:
    event = job.events.filter(kind=kind).order_by("-at", "-pk").first()
    assert event is not None, f"job {job.pk} has no {kind} event; it has {kinds(job)}"
    return event.message


def build_world() -> SimpleNamespace:
    h100 = Flavor.objects.create(name="h100", resource="nvidia.com/gpu", gpu_equivalent=1.0)
    standard = ServiceClass.objects.create(name="standard", priority=100, min_runtime=0)
    # 1800 job seconds: 30 wall-clock seconds at SIMULATION_SPEED 60 (queues/services/clock.py)
    spot = ServiceClass.objects.create(name="spot", priority=10, grace_period=1800)
    production = ServiceClass.objects.create(
        name="production", priority=1000, preemptible=False, can_borrow=False
    )
    cohort = Cohort.objects.create(name="research")
    team_a = Team.objects.create(name="team-a")
    team_b = Team.objects.create(name="team-b")
    queue_a = Queue.objects.create(team=team_a, name="main", cohort=cohort)
    queue_b = Queue.objects.create(team=team_b, name="main", cohort=cohort)
    for queue in (queue_a, queue_b):
        Quota.objects.create(queue=queue, flavor=h100, nominal=8)
    cluster = Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)
    nodes = [
        Node.objects.create(
            cluster=cluster,
            name=f"n{i}",
            capacity={"h100": 8},
            labels={"rack": f"r{i}", "kubernetes.io/hostname": f"n{i}"},
        )
        for i in (1, 2)
    ]
    alice = User.objects.create_user("alice", password="x-alice-pass-1")
    bob = User.objects.create_user("bob", password="x-bob-pass-1")
    Membership.objects.create(user=alice, team=team_a)
    Membership.objects.create(user=bob, team=team_b)
    return SimpleNamespace(
        h100=h100,
        standard=standard,
        spot=spot,
        production=production,
        cohort=cohort,
        queue_a=queue_a,
        queue_b=queue_b,
        cluster=cluster,
        nodes=nodes,
        alice=alice,
        bob=bob,
    )
