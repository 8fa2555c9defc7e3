"""Estimated starts of pending jobs (docs/SCHEDULING.md section 4, "Estimated start").

What the explanations tell a waiting job, never a decision: like Slurm's ``squeue --start``, an
estimate from the running jobs' estimated ends (``backfill.release_schedule``):

- held by GPUs (``capacity``, ``topology``): when enough GPUs of its flavor are free;
- held back by reservations (``behind-reservation``): when enough are free once each reserved
  job of its flavor has started at its reservation and run its estimated runtime;
- held by the cohort's pool (``cohort-pool``): when the cohort's jobs ending have given back
  enough of the pool, by the quota's own arithmetic (``Quota.add``), and the GPUs are free.

A reserved job's own estimate is its reservation's start (explain_pass.py).

An estimate is a time only when it does not move with the clock. The release schedule clamps the
ends of running jobs that have outrun their estimated runtimes to now, so a start that needs
their GPUs would be "now" in every cycle, a time that moves on while the job waits: such a start
is *overdue* (``told``): no time, only that the job starts once those jobs end. So is the start
of a job held back by a reservation that is itself overdue, when it is that reserved job's
estimated end (now plus its runtime, moving as well).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from gpusched.engine import explain
from gpusched.engine.backfill import (
    estimated_free_time,
    estimated_start_behind,
    release_schedule,
)

if TYPE_CHECKING:
    from gpusched.engine.context import CycleContext
    from gpusched.engine.quota import QuotaState

Events = list[tuple[float, int, int, str]]


class StartEstimates:
    """The estimated starts of one explanation pass, on the cycle's final state (read only).

    An estimate depends on the reason, the flavor, the units needed and, for the cohort's pool,
    the queue: each is computed once per pass, as is each flavor's release schedule."""

    __slots__ = ("_ctx", "_free", "_known", "_pools", "_schedules")

    def __init__(self, ctx: CycleContext) -> None:
        self._ctx = ctx
        self._schedules: dict[str, Events] = {}
        self._free: dict[str, tuple[int, int]] = {}
        self._known: dict[tuple[str, str, int, str], float | None] = {}
        self._pools: dict[tuple[str, str], PoolTimes] = {}  # (queue, flavor) -> its walk

    def free_of(self, flavor: str) -> tuple[int, int]:
        """The flavor's free units now, and the most free on one node."""
        known = self._free.get(flavor)
        if known is None:
            cap = self._ctx.cap
            known = self._free[flavor] = (cap.free_total(flavor), cap.largest_block(flavor))
        return known

    def told(self, queue: str, need: int, reason: str, flavor: str) -> tuple[float | None, bool]:
        """The estimated start as told to the user: (a time, False), or (None, True) when it is
        overdue (see the module's doc), or (None, False) when none can be told."""
        return self.overdue_or(self.start(queue, need, reason, flavor), reason)

    def overdue_or(self, estimate: float | None, reason: str) -> tuple[float | None, bool]:
        """``estimate``, or (None, True) when it moves with the clock (overdue)."""
        if estimate is None:
            return None, False
        now = self._ctx.now
        if estimate <= now:
            return None, True
        if reason == explain.BEHIND_RESERVATION and any(
            r.start <= now and estimate == r.end for r in self._ctx.reservations
        ):
            return None, True
        return estimate, False

    def start(self, queue: str, need: int, reason: str, flavor: str) -> float | None:
        """The estimated start of a pending job of ``queue`` needing ``need`` units, blocked
        for ``reason`` in ``flavor``, or None when none can be told."""
        if reason not in (
            explain.CAPACITY, explain.TOPOLOGY, explain.BEHIND_RESERVATION, explain.COHORT_POOL
        ):  # fmt: skip
            return None
        kind = reason
        if reason != explain.COHORT_POOL:
            queue = ""  # only the pool's estimate depends on the queue
            if reason == explain.TOPOLOGY:
                kind = explain.CAPACITY  # both wait for enough free GPUs
        key = (kind, flavor, need, queue)
        if key in self._known:
            return self._known[key]
        estimate = self._known[key] = self._estimate(queue, need, reason, flavor)
        return estimate

    def _estimate(self, queue: str, need: int, reason: str, flavor: str) -> float | None:
        ctx = self._ctx
        events = self._schedules.get(flavor)
        if events is None:
            events = self._schedules[flavor] = release_schedule(ctx, flavor)
        free = self.free_of(flavor)[0]
        if reason == explain.BEHIND_RESERVATION:
            reservations = ctx.reservations.of_flavor(flavor)
            if not reservations:
                return None
            return estimated_start_behind(events, free, need, reservations)
        if reason == explain.COHORT_POOL:
            pool = self._pools.get((queue, flavor))
            if pool is None:
                pool = PoolTimes(ctx.quota, events, queue, flavor, free)
                self._pools[(queue, flavor)] = pool
            return pool.first(need)
        return estimated_free_time(events, free, need)


class PoolTimes:
    """When more units of ``flavor`` fit ``queue``'s quota and cohort pool as the cohort's
    running jobs end, with the GPUs free then (ignores packing): the estimate of a job held by
    the cohort's pool, for any number of units.

    At each release time the units that fit make a range (up to the least of what the queue's
    limit, the free GPUs and the pool leave), so the first time ``need`` units fit is the first
    time that bound reached ``need``. The walk over the releases goes only as far as the
    largest need asked for, and serves every job of the queue and flavor."""

    __slots__ = (
        "_cohort", "_events", "_flavor", "_free", "_k", "_limits", "_most", "_pool_size",
        "_pool_used", "_queue", "_quota", "_times", "_used",
    )  # fmt: skip

    def __init__(
        self, quota: QuotaState, events: Events, queue: str, flavor: str, free_now: int
    ) -> None:
        self._quota = quota
        self._cohort = quota.cohort.get(queue)
        self._events = events
        self._queue = queue
        self._flavor = flavor
        self._limits = quota.limits(queue, flavor)
        self._pool_size, self._pool_used = quota.pool_numbers(queue, flavor)
        self._used = {queue: quota.used(queue, flavor)}
        self._free = free_now
        self._k = 0  # the next release to take
        self._times: list[float] = []  # release times at which the bound rose ...
        self._most: list[int] = []  # ... to these units (increasing)

    def first(self, need: int) -> float | None:
        """The first release time at which ``need`` more units fit; None if none does."""
        if self._cohort is None:
            return None
        most = self._most
        if most and most[-1] >= need:
            return self._times[bisect.bisect_left(most, need)]
        quota = self._quota
        cohort = self._cohort
        flavor = self._flavor
        events = self._events
        used = self._used
        limit, reserved_own = self._limits.limit, self._limits.reserved
        pool_size, pool_used = self._pool_size, self._pool_used
        free = self._free
        k = self._k
        found: float | None = None
        while k < len(events):
            t = events[k][0]
            while k < len(events) and events[k][0] == t:  # every release at one time together
                _, _, units, owner = events[k]
                k += 1
                free += units
                if quota.cohort.get(owner) != cohort:
                    continue
                before = used.setdefault(owner, quota.used(owner, flavor))
                after = before - units
                reserved = quota.limits(owner, flavor).reserved
                pool_used += max(0, after - reserved) - max(0, before - reserved)
                used[owner] = after
            own = used[self._queue]
            # the units that fit now: within the limit, free, and borrowing what the pool has
            # (the units up to the queue's reserved part borrow nothing)
            room = pool_size - pool_used
            if room >= 0 and own < reserved_own:
                room += reserved_own - own
            bound = min(limit - own, free, room)
            if not most or bound > most[-1]:
                self._times.append(t)
                most.append(bound)
                if bound >= need:
                    found = t
                    break
        self._k, self._free, self._pool_used = k, free, pool_used
        return found
