"""The single-flight lease of the scheduling cycle: one row, taken with a conditional UPDATE.

``acquire`` succeeds when the lease is free, expired, or already held by the same holder; it is
one UPDATE ... WHERE, so two workers racing for it cannot both win on SQLite or PostgreSQL. A
worker that dies mid-cycle leaves a lease that expires after ``SCHEDULER_LEASE_SECONDS`` and is
then taken over. ``confirm`` re-checks (and extends) the lease inside the apply transaction: on
PostgreSQL it also locks the row, so a takeover waits until the apply has committed.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from queues.models import SchedulerLease

CYCLE_LEASE = "scheduling-cycle"


class LeaseLost(RuntimeError):
    """Another worker took the lease over (this one ran past its lease): nothing was applied."""


def new_holder() -> str:
    """A name unique to this attempt: host, process and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _ttl(seconds: float | None) -> timedelta:
    return timedelta(seconds=settings.SCHEDULER_LEASE_SECONDS if seconds is None else seconds)


def acquire(
    holder: str,
    *,
    name: str = CYCLE_LEASE,
    now: datetime | None = None,
    seconds: float | None = None,
) -> bool:
    """Take the lease for ``holder``; False when someone else holds an unexpired one."""
    moment = now or timezone.now()
    if not SchedulerLease.objects.filter(name=name).exists():
        try:
            with transaction.atomic():
                SchedulerLease.objects.create(name=name, holder="", expires_at=moment)
        except IntegrityError:
            pass  # created by a concurrent worker
    try:
        taken = (
            SchedulerLease.objects.filter(name=name)
            .filter(Q(holder="") | Q(holder=holder) | Q(expires_at__lte=moment))
            .update(holder=holder, expires_at=moment + _ttl(seconds))
        )
    except OperationalError as error:
        if "locked" not in str(error):  # SQLite: another process is writing (a cycle runs)
            raise
        return False
    return taken == 1


def confirm(
    holder: str,
    *,
    name: str = CYCLE_LEASE,
    now: datetime | None = None,
    seconds: float | None = None,
) -> None:
    """Extend the lease if ``holder`` still has it; raise ``LeaseLost`` otherwise."""
    moment = now or timezone.now()
    kept = SchedulerLease.objects.filter(name=name, holder=holder).update(
        expires_at=moment + _ttl(seconds)
    )
    if kept != 1:
        raise LeaseLost(f"the {name} lease is no longer held by {holder}")


def release(holder: str, *, name: str = CYCLE_LEASE, now: datetime | None = None) -> None:
    """Give the lease back (only if ``holder`` still has it)."""
    SchedulerLease.objects.filter(name=name, holder=holder).update(
        holder="", expires_at=now or timezone.now()
    )
