"""Prometheus counters kept in the database (``MetricCounter``), so that the value a scrape
sees is the same whichever process serves ``/metrics`` and whichever worker ran the cycle."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from queues.models import MetricCounter


def label_string(labels: dict[str, str]) -> str:
    """Prometheus label text, keys sorted: ``queue="team-a/main",reason="x"``."""
    return ",".join(f'{key}="{_escape(value)}"' for key, value in sorted(labels.items()))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def increment(name: str, amount: float = 1.0, **labels: str) -> None:
    """Add ``amount`` (>= 0) to the counter ``name{labels}``."""
    if amount < 0:
        raise ValueError(f"amount: a counter only goes up, got {amount}")
    text = label_string(labels)
    if MetricCounter.objects.filter(name=name, labels=text).update(value=F("value") + amount):
        return
    try:
        with transaction.atomic():
            MetricCounter.objects.create(name=name, labels=text, value=amount)
    except IntegrityError:  # created meanwhile by another process
        MetricCounter.objects.filter(name=name, labels=text).update(value=F("value") + amount)
