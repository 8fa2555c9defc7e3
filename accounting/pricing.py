"""From the database to the pure rating package: the price list in force and ledger rows as
`UsageInterval`s. All arithmetic is `accounting.rating`'s; nothing is rated here.

Rules:
- A flavor is priced by its own `FlavorPrice` rows; a MIG flavor (resource nvidia.com/mig-*) with
  no own row in force is priced at its gpu_equivalent x the price of its parent whole-GPU flavor,
  the non-MIG flavor with the same `gpu_model`.
- A service class is rated at its `ClassMultiplier` in force; before its first row (or with no
  rows) at `ServiceClass.price_multiplier` (the seeded default).
- One currency: `settings.ACCOUNTING_CURRENCY` (default USD), 2 minor units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from accounting import rating
from accounting.models import ClassMultiplier, FlavorPrice, UsageRecord
from queues.models import Cluster, Flavor, Queue, ServiceClass, Team

BEGINNING = datetime(1970, 1, 1, tzinfo=UTC)
GPU_EQUIVALENT_QUANTUM = Decimal("0.000001")


def currency() -> str:
    return str(getattr(settings, "ACCOUNTING_CURRENCY", "USD"))


def gpu_equivalent_of(flavor: Flavor) -> Decimal:
    """The flavor's (float) GPU-equivalent as a Decimal with 6 places (1/7 -> 0.142857)."""
    return Decimal(repr(float(flavor.gpu_equivalent))).quantize(GPU_EQUIVALENT_QUANTUM)


def mig_parents(flavors: Iterable[Flavor]) -> dict[str, str]:
    """MIG flavor name -> the whole-GPU flavor of the same gpu_model (when there is one)."""
    flavors = list(flavors)
    whole = {f.gpu_model: f.name for f in flavors if not f.is_mig and f.gpu_model}
    return {f.name: whole[f.gpu_model] for f in flavors if f.is_mig and f.gpu_model in whole}


def load_price_list(
    flavors: Iterable[Flavor] | None = None, service_classes: Iterable[ServiceClass] | None = None
) -> rating.PriceList:
    """Every price and multiplier row, with the service classes' defaults before their rows.
    ``flavors`` and ``service_classes``: every flavor and class, when the caller has read them
    already (else they are read here)."""
    flavors = list(Flavor.objects.all() if flavors is None else flavors)
    classes = list(ServiceClass.objects.all() if service_classes is None else service_classes)
    flavor_names = {flavor.pk: flavor.name for flavor in flavors}
    class_names = {service_class.pk: service_class.name for service_class in classes}
    unit = currency()
    prices = tuple(
        rating.FlavorPrice(
            flavor=flavor_names[row.flavor_id],
            price_per_unit_hour=row.price_per_unit_hour,
            effective_from=row.effective_from,
            currency=row.currency,
        )
        for row in FlavorPrice.objects.all()
    )
    rows = list(ClassMultiplier.objects.all())
    multipliers = [
        rating.ClassMultiplier(
            class_names[row.service_class_id], row.multiplier, row.effective_from
        )
        for row in rows
    ]
    starts = {(class_names[row.service_class_id], row.effective_from) for row in rows}
    for service_class in classes:
        if (service_class.name, BEGINNING) not in starts:
            multipliers.append(
                rating.ClassMultiplier(
                    service_class.name, Decimal(service_class.price_multiplier), BEGINNING
                )
            )
    return rating.PriceList(
        currency=unit,
        prices=prices,
        multipliers=tuple(multipliers),
        mig_parents=mig_parents(flavors),
    )


def interval_of(
    record: UsageRecord, start: datetime | None = None, end: datetime | None = None
) -> rating.UsageInterval:
    """The ledger row (optionally clipped to [start, end)) as a rating interval. Needs the row's
    team, queue, user, cluster, flavor and service class loaded (select_related)."""
    lower = max(record.start, start) if start is not None else record.start
    upper = min(record.end, end) if end is not None else record.end
    return rating.UsageInterval(
        job_id=str(record.job_id),
        team=record.team.name,
        queue=f"{record.team.name}/{record.queue.name}",
        user=record.user.get_username(),
        cluster=record.cluster.name,
        flavor=record.flavor.name,
        service_class=record.service_class.name,
        units=record.units,
        gpu_equivalent=record.gpu_equivalent,
        start=lower,
        end=max(lower, upper),
    )


PRICE_FIELDS = (
    "flavor",
    "service_class",
    "price_per_unit_hour",
    "multiplier",
    "currency",
    "effective_from",
)


def record_price_change(actor: Any, instance: FlavorPrice | ClassMultiplier) -> None:
    """A new price or multiplier row goes to the change history (audit app)."""
    import audit

    after = {name: str(getattr(instance, name)) for name in PRICE_FIELDS if hasattr(instance, name)}
    audit.record_changes(actor, instance, {}, after)


RELATED = ("team", "queue", "user", "cluster", "flavor", "service_class")


class Related:
    """The rows of the small tables ledger rows refer to (RELATED), read once, set on each
    ledger row read without joins so `interval_of` finds them. Reading the ledger with
    select_related(*RELATED) instead lets SQLite's planner walk the ledger once per user,
    flavor, class and cluster: a minute for a month of a 1M-row ledger (0.2 s without)."""

    def __init__(self) -> None:
        user = get_user_model()
        self.objects: dict[str, dict[int, Any]] = {
            "team": {t.pk: t for t in Team.objects.only("pk", "name")},
            "queue": {q.pk: q for q in Queue.objects.only("pk", "name", "team_id")},
            "user": {u.pk: u for u in user.objects.only("pk", user.USERNAME_FIELD)},
            "cluster": {c.pk: c for c in Cluster.objects.only("pk", "name")},
            "flavor": {f.pk: f for f in Flavor.objects.all()},
            "service_class": {c.pk: c for c in ServiceClass.objects.only("pk", "name")},
        }

    def attach(self, record: UsageRecord) -> UsageRecord:
        for name, objects in self.objects.items():
            setattr(record, name, objects[getattr(record, f"{name}_id")])
        return record

    def interval(
        self, row: Mapping[str, Any], start: datetime, end: datetime
    ) -> rating.UsageInterval:
        """`interval_of` for a ledger row read as values (VALUE_FIELDS), clipped to
        [start, end): no model instance, for the reads that price many rows."""
        team = self.objects["team"][row["team_id"]].name
        lower, upper = max(row["start"], start), min(row["end"], end)
        return rating.UsageInterval(
            job_id=str(row["job_id"]),
            team=team,
            queue=f"{team}/{self.objects['queue'][row['queue_id']].name}",
            user=self.objects["user"][row["user_id"]].get_username(),
            cluster=self.objects["cluster"][row["cluster_id"]].name,
            flavor=self.objects["flavor"][row["flavor_id"]].name,
            service_class=self.objects["service_class"][row["service_class_id"]].name,
            units=row["units"],
            gpu_equivalent=row["gpu_equivalent"],
            start=lower,
            end=max(lower, upper),
        )


VALUE_FIELDS = (
    *(f"{name}_id" for name in ("job", *RELATED)),
    "units",
    "gpu_equivalent",
    "start",
    "end",
)
