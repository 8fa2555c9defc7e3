"""The single-flight lease of the scheduling cycle: one row, taken with a conditional UPDATE.

``acquire`` succeeds when the lease is free, expired, or already held by the same holder; it is
one UPDATE ... WHERE, so two workers racing for it cannot both win on SQLite or PostgreSQL. A
worker that dies mid-cycle leaves a lease that expires after ``SCHEDULER_LEASE_SECONDS`` and is
then taken over. ``confirm`` re-checks (and extends) the lease inside the apply transaction: on
PostgreSQL it also locks the row, so a takeover waits until the apply has committed.

A cycle may work longer than the lease lasts (a first cycle launching 10,000 jobs). While it
works, ``Renewal`` extends the lease from a daemon thread every third of its period, as a
Kubernetes leader renews its Lease: a live holder never loses it, a dead one (the process and
its thread are gone) loses it one period after its last renewal.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from datetime import datetime, timedelta
from types import TracebackType

from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, connections, transaction
from django.db.models import Q
from django.utils import timezone

from queues.models import SchedulerLease

logger = logging.getLogger(__name__)

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


def renew(holder: str, *, name: str = CYCLE_LEASE, seconds: float | None = None) -> bool:
    """Extend the lease by a full period from now if ``holder`` still has it; False if not."""
    return (
        SchedulerLease.objects.filter(name=name, holder=holder).update(
            expires_at=timezone.now() + _ttl(seconds)
        )
        == 1
    )


class Renewal:
    """``with Renewal(holder):`` keeps ``holder``'s lease from expiring while the block works.

    A daemon thread renews it every third of the lease period, on its own database connection
    (closed when the block ends). A renewal that fails (the database busy: SQLite while the
    cycle writes) is tried again on the next tick; one that finds the lease taken over stops
    renewing and sets ``lost``. Inside a surrounding transaction (tests that wrap everything in
    one) another connection could neither see nor wait for the lease row, so no thread runs.
    """

    def __init__(
        self, holder: str, *, name: str = CYCLE_LEASE, seconds: float | None = None
    ) -> None:
        self.holder = holder
        self.name = name
        self.seconds = seconds
        self.interval = max(_ttl(seconds).total_seconds() / 3, 0.05)
        self.renewals = 0
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Renewal:
        if not connection.in_atomic_block:
            self._thread = threading.Thread(
                target=self._run, name=f"lease-renewal-{self.name}", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 10)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    kept = renew(self.holder, name=self.name, seconds=self.seconds)
                except OperationalError as error:
                    logger.debug("lease renewal postponed: %s", error)
                    continue
                if not kept:
                    self.lost = True
                    logger.warning(
                        "the %s lease was taken over from %s while it worked",
                        self.name,
                        self.holder,
                    )
                    return
                self.renewals += 1
        finally:
            connections.close_all()  # this thread's connections only
