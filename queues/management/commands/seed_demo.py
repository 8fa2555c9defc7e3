"""``python manage.py seed_demo [--history DAYS]``: the demo world of ``make demo``.

Refused with DEBUG off (the demo logins' passwords are published) unless ``--allow-production``.

Idempotent: objects that already exist (matched by name) are left as they are, and the history
(``demo.history``: DAYS of multi-team work replayed through the scheduling engine and written as
the live services would have, default 30; a few seconds) is replayed only into a cluster that
has no jobs yet, so running it twice changes nothing."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from accounting.models import FlavorPrice
from gpuplatform.access import FINANCE_GROUP, PLATFORM_ADMIN_GROUP
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

H100_PRODUCT = "NVIDIA-H100-80GB-HBM3"
A100_PRODUCT = "NVIDIA-A100-SXM4-80GB"

# Fixed demo passwords, documented in README.md. Never use them outside a demo.
DEMO_USERS: list[dict[str, Any]] = [
    {"username": "admin", "password": "admin-demo", "role": "platform admin", "admin": True},
    {"username": "alice", "password": "alice-demo", "role": "researcher, team-a"},
    {"username": "bob", "password": "bob-demo", "role": "researcher, team-b"},
    {"username": "carol", "password": "carol-demo", "role": "researcher, team-c"},
    {"username": "dave", "password": "dave-demo", "role": "researcher, team-d (MIG)"},
    {"username": "fiona", "password": "fiona-demo", "role": "finance", "finance": True},
]

FLAVORS: list[dict[str, Any]] = [
    {
        "name": "h100",
        "resource": "nvidia.com/gpu",
        "gpu_model": H100_PRODUCT,
        "gpu_equivalent": 1.0,
        "node_selector": {"nvidia.com/gpu.product": H100_PRODUCT},
    },
    {
        "name": "a100-80gb",
        "resource": "nvidia.com/gpu",
        "gpu_model": A100_PRODUCT,
        "gpu_equivalent": 1.0,
        "node_selector": {"nvidia.com/gpu.product": A100_PRODUCT},
    },
    {
        "name": "h100-1g.10gb",
        "resource": "nvidia.com/mig-1g.10gb",
        "gpu_model": H100_PRODUCT,
        "mig_profile": "1g.10gb",
        "gpu_equivalent": 1 / 7,
        "node_selector": {"nvidia.com/gpu.product": H100_PRODUCT},
    },
    {
        "name": "h100-3g.40gb",
        "resource": "nvidia.com/mig-3g.40gb",
        "gpu_model": H100_PRODUCT,
        "mig_profile": "3g.40gb",
        "gpu_equivalent": 3 / 7,
        "node_selector": {"nvidia.com/gpu.product": H100_PRODUCT},
    },
]

SERVICE_CLASSES: list[dict[str, Any]] = [
    {
        "name": "production",
        "priority": 1000,
        "preemptible": False,
        "can_borrow": False,
        "grace_period": 300,
        "price_multiplier": Decimal("1.5"),
    },
    {
        "name": "standard",
        "priority": 100,
        "preemptible": True,
        "can_borrow": True,
        "min_runtime": 600,
        "grace_period": 120,
        "price_multiplier": Decimal("1.0"),
    },
    {
        "name": "spot",
        "priority": 10,
        "preemptible": True,
        "can_borrow": True,
        "grace_period": 30,
        "price_multiplier": Decimal("0.4"),
    },
]

# team -> (description, queue name, quotas per flavor, members)
TEAMS: dict[str, dict[str, Any]] = {
    "team-a": {
        "description": "Vision research",
        "queue": "main",
        "cohort": "research",
        "quotas": {"h100": 16, "a100-80gb": 4, "h100-1g.10gb": 2, "h100-3g.40gb": 1},
        "members": ["alice"],
    },
    "team-b": {
        "description": "Language models",
        "queue": "main",
        "cohort": "research",
        "quotas": {"h100": 8, "a100-80gb": 8, "h100-1g.10gb": 4, "h100-3g.40gb": 0},
        "members": ["bob"],
    },
    "team-c": {
        "description": "Robotics",
        "queue": "main",
        "cohort": "research",
        "quotas": {"h100": 8, "a100-80gb": 4, "h100-1g.10gb": 2, "h100-3g.40gb": 1},
        "members": ["carol"],
    },
    "team-d": {
        "description": "Inference and notebooks (MIG slices)",
        "queue": "main",
        "cohort": "services",
        "quotas": {"h100": 0, "a100-80gb": 0, "h100-1g.10gb": 6, "h100-3g.40gb": 2},
        "members": ["dave"],
    },
}

# Price per unit-hour of the whole-GPU flavors (MIG slices: their GPU share of the H100 price).
PRICES: dict[str, Decimal] = {"h100": Decimal("4.00"), "a100-80gb": Decimal("2.50")}
PRICES_FROM = datetime(2020, 1, 1, tzinfo=UTC)

DEFAULT_HISTORY_DAYS = 30

# The cohort tree (docs/SCHEDULING.md section 2a): an organisation over two departments, whose
# queues are the third level. No cohort quota of its own: every department lends all its unused
# quota to the other through ``org``, as the one flat cohort did, and fair sharing compares the
# departments first, then the teams inside one.
ORG = "org"
COHORTS: dict[str, str] = {
    "research": "Vision, language and robotics research: lends to and borrows from services.",
    "services": "Inference and notebooks: lends to and borrows from research.",
}
CLUSTER = "sim-east"


def _nodes() -> list[tuple[str, dict[str, int], dict[str, str]]]:
    """(name, capacity, labels): 4 x 8 H100, 2 x 8 A100, 1 MIG-partitioned H100 node."""
    nodes = []
    for index in range(4):
        name = f"h100-{index}"
        labels = {
            "kubernetes.io/hostname": name,
            "nvidia.com/gpu.product": H100_PRODUCT,
            "topology.kubernetes.io/zone": "east-1",
            "block": "b1",
            "rack": f"r{index // 2 + 1}",
        }
        nodes.append((name, {"h100": 8}, labels))
    for index in range(2):
        name = f"a100-{index}"
        labels = {
            "kubernetes.io/hostname": name,
            "nvidia.com/gpu.product": A100_PRODUCT,
            "topology.kubernetes.io/zone": "east-1",
            "block": "b2",
            "rack": "r3",
        }
        nodes.append((name, {"a100-80gb": 8}, labels))
    mig_labels = {
        "kubernetes.io/hostname": "h100-mig-0",
        "nvidia.com/gpu.product": H100_PRODUCT,
        "nvidia.com/mig.config": "custom-mixed",
        "topology.kubernetes.io/zone": "east-1",
        "block": "b2",
        "rack": "r4",
    }
    nodes.append(("h100-mig-0", {"h100-1g.10gb": 14, "h100-3g.40gb": 4}, mig_labels))
    return nodes


class Command(BaseCommand):
    help = (
        "Create the demo users, flavors, service classes, teams, queues, prices and simulated "
        "cluster, and replay DAYS of history through the scheduling engine."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--history",
            type=int,
            default=DEFAULT_HISTORY_DAYS,
            metavar="DAYS",
            help=f"Days of demo work to replay, ending now (default {DEFAULT_HISTORY_DAYS}; "
            "0: none). Skipped when the cluster already has jobs.",
        )
        parser.add_argument(
            "--allow-production",
            action="store_true",
            help="Seed although DEBUG is off (a throwaway demo deployment only: the demo "
            "logins' passwords are published).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["allow_production"]:
            raise CommandError(
                "seed_demo creates logins with published passwords (admin/admin-demo, a "
                "superuser, and the demo researchers): it refuses to run with DEBUG off, the "
                "production setting. Set DEBUG=true for a local demo, or pass "
                "--allow-production for a throwaway demo deployment."
            )
        days = options["history"]
        if days < 0:
            raise CommandError("--history: must be 0 or more days")
        created = self._seed_world()
        if created:
            self.stdout.write(f"Created {len(created)} demo objects.")
        else:
            self.stdout.write("The demo data already exists; nothing changed.")
        if days:
            from demo.history import replay_history

            self.stdout.write(f"Replaying {days} days of demo work (seeded, deterministic)...")
            began = time.perf_counter()
            report = replay_history(days, timezone.now(), progress=self.stdout.write)
            self.stdout.write(f"{report.summary()} ({time.perf_counter() - began:.1f} s)")
        self.stdout.write("Demo logins (fixed demo passwords, see README.md):")
        for spec in DEMO_USERS:
            self.stdout.write(f"  {spec['username']:<8} {spec['password']:<12} {spec['role']}")

    @transaction.atomic
    def _seed_world(self) -> list[str]:
        created: list[str] = []

        def note(obj: object, was_created: bool) -> None:
            if was_created:
                created.append(f"{type(obj).__name__} {obj}")

        admin_group, made = Group.objects.get_or_create(name=PLATFORM_ADMIN_GROUP)
        note(admin_group, made)
        finance_group, made = Group.objects.get_or_create(name=FINANCE_GROUP)
        note(finance_group, made)

        user_model = get_user_model()
        users = {}
        for spec in DEMO_USERS:
            is_admin = bool(spec.get("admin"))
            user, made = user_model.objects.get_or_create(
                username=spec["username"],
                defaults={"is_staff": is_admin, "is_superuser": is_admin},
            )
            if made:
                user.set_password(spec["password"])
                user.save(update_fields=["password"])
                if is_admin:
                    user.groups.add(admin_group)
                if spec.get("finance"):
                    user.groups.add(finance_group)
            note(user, made)
            users[spec["username"]] = user

        flavors = {}
        for spec in FLAVORS:
            fields = dict(spec)
            flavor, made = Flavor.objects.get_or_create(name=fields.pop("name"), defaults=fields)
            note(flavor, made)
            flavors[flavor.name] = flavor

        classes = []
        for spec in SERVICE_CLASSES:
            fields = dict(spec)
            service_class, made = ServiceClass.objects.get_or_create(
                name=fields.pop("name"), defaults=fields
            )
            note(service_class, made)
            classes.append(service_class)

        org, made = Cohort.objects.get_or_create(
            name=ORG, defaults={"description": "The organisation: every department's parent."}
        )
        note(org, made)
        cohorts = {}
        for name, description in COHORTS.items():
            cohorts[name], made = Cohort.objects.get_or_create(
                name=name, defaults={"description": description, "parent": org}
            )
            note(cohorts[name], made)

        for team_name, spec in TEAMS.items():
            team, made = Team.objects.get_or_create(
                name=team_name, defaults={"description": spec["description"]}
            )
            note(team, made)
            queue, made = Queue.objects.get_or_create(
                team=team, name=spec["queue"], defaults={"cohort": cohorts[spec["cohort"]]}
            )
            if made:
                queue.allowed_service_classes.set(classes)
            note(queue, made)
            for flavor_name, nominal in spec["quotas"].items():
                quota, made = Quota.objects.get_or_create(
                    queue=queue, flavor=flavors[flavor_name], defaults={"nominal": nominal}
                )
                note(quota, made)
            for username in spec["members"]:
                membership, made = Membership.objects.get_or_create(user=users[username], team=team)
                note(membership, made)

        cluster, made = Cluster.objects.get_or_create(
            name=CLUSTER, defaults={"driver": Cluster.Driver.SIMULATED}
        )
        note(cluster, made)
        for name, capacity, labels in _nodes():
            node, made = Node.objects.get_or_create(
                cluster=cluster, name=name, defaults={"capacity": capacity, "labels": labels}
            )
            note(node, made)

        for flavor_name, price in PRICES.items():
            flavor_price, made = FlavorPrice.objects.get_or_create(
                flavor=flavors[flavor_name],
                effective_from=PRICES_FROM,
                defaults={"price_per_unit_hour": price},
            )
            note(flavor_price, made)
        return created
