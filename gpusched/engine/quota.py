"""Quota accounting (docs/SCHEDULING.md section 2): nominal, borrowing and lending limits.

For a queue with nominal ``N``, borrowing limit ``B`` and lending limit ``L`` in a flavor:
its usage never exceeds ``N + B`` (``N`` without a cohort); ``N - L`` is reserved for it; the part
of its usage above ``N - L`` comes from the cohort pool, whose size is the sum of the members'
``L``. ``QuotaState`` keeps usage and pool usage up to date as a cycle admits and stops jobs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpusched.engine import explain
from gpusched.engine.model import Queue

UNLIMITED = 1 << 60


@dataclass(slots=True)
class _Limits:
    nominal: int
    limit: int  # N + B, or N without a cohort
    reserved: int  # N - L: never lent


class QuotaStatics:
    """What a set of queues' quotas implies, independent of usage (an ``EngineState`` keeps it
    while the quotas stay the same)."""

    def __init__(self, queues: Iterable[Queue]) -> None:
        self.queues = {q.name: q for q in queues}
        self.cohort: dict[str, str | None] = {}
        self.members: dict[str, list[str]] = {}
        self.limits: dict[tuple[str, str], _Limits] = {}
        self.pool_size: dict[tuple[str, str], int] = {}
        self.flavors: set[str] = set()  # every flavor some queue has a quota in
        for q in self.queues.values():
            self.cohort[q.name] = q.cohort
            if q.cohort is not None:
                self.members.setdefault(q.cohort, []).append(q.name)
            for f, quota in q.quotas.items():
                self.flavors.add(f)
                lend = lendable(quota.nominal, quota.lending_limit)
                if q.cohort is None:
                    limit = quota.nominal
                elif quota.borrowing_limit is None:
                    limit = UNLIMITED
                else:
                    limit = quota.nominal + quota.borrowing_limit
                self.limits[(q.name, f)] = _Limits(quota.nominal, limit, quota.nominal - lend)
                if q.cohort is not None:
                    key = (q.cohort, f)
                    self.pool_size[key] = self.pool_size.get(key, 0) + lend


class QuotaState:
    """Mutable usage per queue and flavor, with the cohort pools it draws from."""

    def __init__(
        self,
        queues: Sequence[Queue],
        usage: Mapping[tuple[str, str], int] | None = None,
        static: QuotaStatics | None = None,
    ) -> None:
        """``static``: these queues' ``QuotaStatics`` when the caller keeps them."""
        if static is None:
            static = QuotaStatics(queues)
        self.static = static
        self.queues = static.queues
        self.cohort = static.cohort
        self.members = static.members
        self._limits = static.limits  # shared: limits() only adds what the statics imply
        self.pool_size = static.pool_size
        self.pool_used: dict[tuple[str, str], int] = {}
        self.usage: dict[tuple[str, str], int] = {}
        # every flavor a queue may have usage above nominal in (for share)
        self.flavors = set(static.flavors)
        for (q, f), units in (usage or {}).items():
            self.add(q, f, units)

    def copy(self) -> QuotaState:
        """An independent copy of the usage over the same quotas."""
        other = copy.copy(self)  # shares the static parts
        other.pool_used = dict(self.pool_used)
        other.usage = dict(self.usage)
        other.flavors = set(self.flavors)
        return other

    def limits(self, queue: str, flavor: str) -> _Limits:
        lim = self._limits.get((queue, flavor))
        if lim is None:
            # no quota in this flavor: nominal 0; may still borrow from its cohort
            limit = 0 if self.cohort.get(queue) is None else UNLIMITED
            lim = _Limits(0, limit, 0)
            self._limits[(queue, flavor)] = lim
        return lim

    def used(self, queue: str, flavor: str) -> int:
        return self.usage.get((queue, flavor), 0)

    def nominal(self, queue: str, flavor: str) -> int:
        return self.limits(queue, flavor).nominal

    def add(self, queue: str, flavor: str, units: int) -> None:
        """Change usage by ``units`` (negative to release)."""
        if units == 0:
            return
        key = (queue, flavor)
        before = self.usage.get(key, 0)
        after = before + units
        self.usage[key] = after
        self.flavors.add(flavor)
        cohort = self.cohort.get(queue)
        if cohort is not None:
            reserved = self.limits(queue, flavor).reserved
            delta = max(0, after - reserved) - max(0, before - reserved)
            if delta:
                pkey = (cohort, flavor)
                self.pool_used[pkey] = self.pool_used.get(pkey, 0) + delta

    def headroom(self, queue: str, flavor: str) -> int:
        """Most units the queue may still add in ``flavor`` (queue limit and cohort pool)."""
        lim = self.limits(queue, flavor)
        used = self.usage.get((queue, flavor), 0)
        room = lim.limit - used
        cohort = self.cohort.get(queue)
        if cohort is not None:
            pkey = (cohort, flavor)
            pool_free = self.pool_size.get(pkey, 0) - self.pool_used.get(pkey, 0)
            room = min(room, max(0, lim.reserved - used) + pool_free)
        return room

    def within_nominal(self, queue: str, flavor: str, units: int) -> bool:
        return self.usage.get((queue, flavor), 0) + units <= self.limits(queue, flavor).nominal

    def borrowing(self, queue: str, flavor: str) -> bool:
        return self.usage.get((queue, flavor), 0) > self.limits(queue, flavor).nominal

    def blocked_reason(self, queue: str, flavor: str, units: int, can_borrow: bool) -> str | None:
        """None when ``units`` more fit the quota; otherwise the explain reason code."""
        lim = self.limits(queue, flavor)
        used = self.usage.get((queue, flavor), 0)
        after = used + units
        cohort = self.cohort.get(queue)
        if after <= lim.nominal:
            if cohort is None:
                return None
            pkey = (cohort, flavor)
            pool_free = self.pool_size.get(pkey, 0) - self.pool_used.get(pkey, 0)
            need = max(0, after - lim.reserved) - max(0, used - lim.reserved)
            return None if need <= pool_free else explain.COHORT_POOL
        if self.cohort.get(queue) is None:
            return explain.QUOTA_NOMINAL
        if not can_borrow:
            return explain.CANNOT_BORROW
        if after > lim.limit:
            return explain.BORROWING_LIMIT
        if units > self.headroom(queue, flavor):
            return explain.COHORT_POOL
        return None

    def never_fits(self, queue: str, flavor: str, units: int, can_borrow: bool) -> bool:
        """True when ``units`` exceed what the queue could hold even with its whole cohort idle."""
        lim = self.limits(queue, flavor)
        if units <= lim.nominal:
            return False
        cohort = self.cohort.get(queue)
        if cohort is None or not can_borrow:
            return True
        pool = self.pool_size.get((cohort, flavor), 0)
        return units > min(lim.limit, lim.reserved + pool)

    def share(self, queue: str, extra_flavor: str | None = None, extra: int = 0) -> float:
        """Kueue-style share: max over flavors of (usage above nominal) / pool / weight.

        ``extra`` units in ``extra_flavor`` are counted as if already added (may be negative).
        """
        cohort = self.cohort.get(queue)
        weight = self.queues[queue].weight if queue in self.queues else 1.0
        best = 0.0
        for f in self.flavors if extra_flavor is None else self.flavors | {extra_flavor}:
            used = self.usage.get((queue, f), 0) + (extra if f == extra_flavor else 0)
            above = used - self.limits(queue, f).nominal
            if above <= 0:
                continue
            pool = self.pool_size.get((cohort, f), 0) if cohort is not None else 0
            value = above / pool / weight if pool > 0 else float("inf")
            best = max(best, value)
        return best

    def pool_numbers(self, queue: str, flavor: str) -> tuple[int, int]:
        cohort = self.cohort.get(queue)
        if cohort is None:
            return (0, 0)
        key = (cohort, flavor)
        return (self.pool_size.get(key, 0), self.pool_used.get(key, 0))


def lendable(nominal: int, lending_limit: int | None) -> int:
    """What a queue may lend to its cohort of its nominal ``N``: its lending limit ``L`` (all of
    ``N`` without one), never more than ``N``."""
    lend = nominal if lending_limit is None else lending_limit
    return max(0, min(lend, nominal))


def lent_by_member(
    quotas: Mapping[str, tuple[int, int | None]], used: Mapping[str, int]
) -> dict[str, int]:
    """For one cohort and flavor: how much of each member's unused lendable nominal the
    cohort's borrowers use now (the queue pages' "lent").

    ``quotas``: member -> (nominal, lending limit); ``used``: member -> units held. What the
    members use above their nominal is spread over the members with unused lendable nominal in
    proportion to what each can lend now, in whole units (largest remainder, then name)."""
    available: dict[str, int] = {}
    borrowed = 0
    for name, (nominal, lending_limit) in quotas.items():
        units = used.get(name, 0)
        borrowed += max(0, units - nominal)
        available[name] = max(0, min(lendable(nominal, lending_limit), nominal - units))
    total = sum(available.values())
    if borrowed == 0 or total == 0:
        return dict.fromkeys(quotas, 0)
    lend = min(borrowed, total)
    shares = {name: lend * units / total for name, units in available.items()}
    out = {name: int(share) for name, share in shares.items()}
    rest = lend - sum(out.values())
    for name in sorted(out, key=lambda n: (-(shares[n] - out[n]), n))[:rest]:
        out[name] += 1
    return out
