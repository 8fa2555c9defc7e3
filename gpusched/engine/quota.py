"""Quota accounting (docs/SCHEDULING.md section 2): nominal, borrowing and lending limits.

For a queue with nominal ``N``, borrowing limit ``B`` and lending limit ``L`` in a flavor:
its usage never exceeds ``N + B`` (``N`` without a cohort); ``N - L`` is reserved for it; the part
of its usage above ``N - L`` comes from the cohort pool, whose size is the sum of the members'
``L``. ``QuotaState`` keeps usage and pool usage up to date as a cycle admits and stops jobs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence

from gpusched.engine import explain
from gpusched.engine.cohort_tree import UNLIMITED, CohortTree, lendable
from gpusched.engine.cohort_tree import Limits as _Limits
from gpusched.engine.model import Cohort, Queue

__all__ = ["UNLIMITED", "QuotaState", "QuotaStatics", "lendable", "lent_by_member"]


class QuotaStatics:
    """What a set of queues' quotas (and the cohort tree) imply, independent of usage (an
    ``EngineState`` keeps it while the quotas stay the same)."""

    def __init__(self, queues: Iterable[Queue], cohorts: Iterable[Cohort] = ()) -> None:
        self.queues = {q.name: q for q in queues}
        self.cohort: dict[str, str | None] = {}
        self.members: dict[str, list[str]] = {}
        self.limits: dict[tuple[str, str], _Limits] = {}
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
        self.tree = CohortTree(self.queues.values(), cohorts)
        # a cohort's capacity: a flat cohort's pool, the sum of its members' lendable nominal
        self.pool_size: dict[tuple[str, str], int] = self.tree.capacity
        # (queue, flavor, units, may borrow) -> QuotaState.never_fits, which only the quotas
        # decide: asked for most jobs the walk passes over, every cycle
        self.never: dict[tuple[str, str, int, bool], bool] = {}


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
        self.tree = static.tree
        self._never = static.never
        self.pool_used: dict[tuple[str, str], int] = {}  # a cohort's usage U (section 2a)
        self.usage: dict[tuple[str, str], int] = {}
        # usage changes so far, and the count at each queue's latest (to know what is stale)
        self.changes = 0
        self.changes_of: dict[str, int] = {}
        # every flavor a queue may have usage above nominal in (for share)
        self.flavors = set(static.flavors)
        for (q, f), units in (usage or {}).items():
            self.add(q, f, units)

    def copy(self) -> QuotaState:
        """An independent copy of the usage over the same quotas."""
        other = copy.copy(self)  # shares the static parts
        other.pool_used = dict(self.pool_used)
        other.usage = dict(self.usage)
        other.changes_of = dict(self.changes_of)
        other.flavors = set(self.flavors)
        return other

    def change_counts(self) -> tuple[int, dict[str, int]]:
        """The usage change counts, to restore after trying changes that were all undone."""
        return self.changes, dict(self.changes_of)

    def restore_change_counts(self, counts: tuple[int, dict[str, int]]) -> None:
        self.changes, self.changes_of = counts[0], counts[1]

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
        self.changes += 1
        self.changes_of[queue] = self.changes
        self.flavors.add(flavor)
        cohort = self.cohort.get(queue)
        if cohort is not None:
            reserved = self.limits(queue, flavor).reserved
            delta = max(0, after - reserved) - max(0, before - reserved)
            parent = self.tree.parent
            while delta:
                pkey = (cohort, flavor)
                was = self.pool_used.get(pkey, 0)
                self.pool_used[pkey] = was + delta
                up = parent.get(cohort)
                if up is None:
                    break
                # what the cohort asks of its parent: its usage above its reserved part
                reserved = self.tree.cohort_limits(cohort, flavor).reserved
                delta = max(0, was + delta - reserved) - max(0, was - reserved)
                cohort = up

    def headroom(self, queue: str, flavor: str) -> int:
        """Most units the queue may still add in ``flavor`` (queue limit and cohort pool)."""
        lim = self.limits(queue, flavor)
        used = self.usage.get((queue, flavor), 0)
        room = lim.limit - used
        cohort = self.cohort.get(queue)
        if cohort is not None:
            room = min(room, max(0, lim.reserved - used) + self.cohort_room(cohort, flavor))
        return room

    def cohort_room(self, cohort: str, flavor: str) -> int:
        """How much more usage ``cohort`` may take in ``flavor``: its capacity left for a root
        (a flat cohort's free pool); under a parent, its own limit and, above its reserved part,
        what its parent may still give."""
        pkey = (cohort, flavor)
        used = self.pool_used.get(pkey, 0)
        parent = self.tree.parent.get(cohort)
        if parent is None:
            return self.pool_size.get(pkey, 0) - used
        lim = self.tree.cohort_limits(cohort, flavor)
        return min(lim.limit - used, max(0, lim.reserved - used) + self.cohort_room(parent, flavor))

    def usage_stamp(self, queue: str, flavors: Sequence[str]) -> list[int]:
        """The usage of the queue and of its cohorts (section 2a) in these flavors: with the
        quotas, all that decides whether a job of a class that may borrow fits them."""
        used, pools = self.usage, self.pool_used
        cohorts = self.tree.chain.get(queue, ())
        stamp = []  # a plain loop: cheaper than comprehensions for a flavor or two
        for f in flavors:
            stamp.append(used.get((queue, f), 0))
            for c in cohorts:
                stamp.append(pools.get((c, f), 0))
        return stamp

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
            need = max(0, after - lim.reserved) - max(0, used - lim.reserved)
            return None if need <= self.cohort_room(cohort, flavor) else explain.COHORT_POOL
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
        """True when ``units`` exceed what the queue could hold even with its whole cohort idle
        (kept in the statics: it depends on the quotas alone)."""
        key = (queue, flavor, units, can_borrow)
        known = self._never.get(key)
        if known is None:
            known = self._never[key] = self._never_fits(queue, flavor, units, can_borrow)
        return known

    def _never_fits(self, queue: str, flavor: str, units: int, can_borrow: bool) -> bool:
        lim = self.limits(queue, flavor)
        if units <= lim.nominal:
            return False
        cohort = self.cohort.get(queue)
        if cohort is None or not can_borrow:
            return True
        pool = self.tree.most(cohort, flavor)
        return units > min(lim.limit, lim.reserved + pool)

    def share(self, queue: str, extra_flavor: str | None = None, extra: int = 0) -> float:
        """Kueue-style share: max over flavors of (usage above nominal) / pool / weight.

        ``extra`` units in ``extra_flavor`` are counted as if already added (may be negative).
        """
        cohort = self.cohort.get(queue)
        weight = self.queues[queue].weight if queue in self.queues else 1.0
        best = 0.0
        flavors = self.flavors
        if extra_flavor is not None and extra_flavor not in flavors:
            flavors = flavors | {extra_flavor}
        usage = self.usage
        limits = self._limits  # read directly: rule 3 asks for shares in every search
        for f in flavors:
            used = usage.get((queue, f), 0)
            if f == extra_flavor:
                used += extra
            if used <= 0:  # nothing above a nominal, which is never negative
                continue
            lim = limits.get((queue, f))
            above = used if lim is None else used - lim.nominal  # no quota there: nominal 0
            if above <= 0:
                continue
            pool = self.share_pool(cohort, f) if cohort is not None else 0
            value = above / pool / weight if pool > 0 else float("inf")
            if value > best:
                best = value
        return best

    def share_pool(self, cohort: str, flavor: str) -> int:
        """Rule 3's denominator among the children of ``cohort``: a flat cohort's pool; in a
        tree, the most the cohort could ever use (its capacity plus what it may borrow above),
        so that a cohort without capacity of its own still weighs its children's borrowing."""
        if not self.tree.hierarchical:
            return self.pool_size.get((cohort, flavor), 0)
        return self.tree.most(cohort, flavor)

    # -- the cohort tree (section 2a) ------------------------------------------------------
    def root_of(self, queue: str) -> str | None:
        """The root cohort of the queue's tree (a flat cohort is its own root)."""
        chain = self.tree.chain.get(queue)
        return chain[-1] if chain else None

    def tree_members(self, queue: str) -> Sequence[str]:
        """Every queue of the queue's tree (a flat cohort's members), in snapshot order."""
        root = self.root_of(queue)
        return self.tree.members.get(root, ()) if root is not None else ()

    def meeting(self, mine: str, theirs: str) -> tuple[str | None, str, str]:
        """Lowest common cohort of two queues and the nodes just below it on each side."""
        if not self.tree.hierarchical:
            return self.cohort.get(mine), mine, theirs
        return self.tree.meeting(mine, theirs)

    def node_usage(self, queue: str, node: str, flavor: str, extra: int = 0) -> int:
        """Usage of ``node`` (the queue or one of its cohorts) with ``extra`` more units at the
        queue."""
        before = self.usage.get((queue, flavor), 0)
        if node == queue:
            return before + extra
        reserved = self.limits(queue, flavor).reserved
        delta = max(0, before + extra - reserved) - max(0, before - reserved)
        for cohort in self.tree.chain[queue]:
            was = self.pool_used.get((cohort, flavor), 0)
            if cohort == node:
                return was + delta
            reserved = self.tree.cohort_limits(cohort, flavor).reserved
            delta = max(0, was + delta - reserved) - max(0, was - reserved)
        raise ValueError(f"{node} is not above {queue}")

    def node_capacity(self, queue: str, node: str, flavor: str) -> int:
        if node == queue:
            return self.limits(queue, flavor).nominal
        return self.tree.cohort_limits(node, flavor).nominal

    def within_up_to(self, queue: str, flavor: str, units: int, top: str) -> bool:
        """Whether ``units`` more keep the queue and each of its cohorts up to ``top`` within
        capacity (rule 2 across the tree)."""
        if not self.within_nominal(queue, flavor, units):
            return False
        if top == queue:
            return True
        for cohort in self.tree.chain[queue]:
            used = self.node_usage(queue, cohort, flavor, units)
            if used > self.tree.cohort_limits(cohort, flavor).nominal:
                return False
            if cohort == top:
                break
        return True

    def borrowing_up_to(self, queue: str, flavor: str, top: str) -> bool:
        """Whether the queue and each of its cohorts up to ``top`` borrow in ``flavor``."""
        if not self.borrowing(queue, flavor):
            return False
        if top == queue:
            return True
        for cohort in self.tree.chain[queue]:
            limits = self.tree.cohort_limits(cohort, flavor)
            if self.pool_used.get((cohort, flavor), 0) <= limits.nominal:
                return False
            if cohort == top:
                break
        return True

    def level_share(
        self,
        queue: str,
        node: str,
        at: str | None,
        extra_flavor: str | None = None,
        extra: int = 0,
    ) -> float:
        """Rule 3's share of ``node`` (the queue or one of its cohorts) among the children of
        cohort ``at``: max over flavors of (usage above capacity) / capacity of ``at`` / weight,
        with ``extra`` units in ``extra_flavor`` counted as added at the queue."""
        if node == queue:
            return self.share(queue, extra_flavor, extra)
        weight = self.tree.weight.get(node, 1.0)
        best = 0.0
        for f in self.flavors if extra_flavor is None else self.flavors | {extra_flavor}:
            above = self.node_usage(queue, node, f, extra if f == extra_flavor else 0)
            above -= self.node_capacity(queue, node, f)
            if above <= 0:
                continue
            pool = self.share_pool(at, f) if at is not None else 0
            best = max(best, above / pool / weight if pool > 0 else float("inf"))
        return best

    def pool_numbers(self, queue: str, flavor: str) -> tuple[int, int]:
        cohort = self.cohort.get(queue)
        if cohort is None:
            return (0, 0)
        key = (cohort, flavor)
        return (self.pool_size.get(key, 0), self.pool_used.get(key, 0))


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
