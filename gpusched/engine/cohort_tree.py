"""The static shape of the cohort tree (docs/SCHEDULING.md section 2a), per flavor.

For every cohort *k*: capacity ``C(k) = N(k) + sum of the children's lendable``, the lendable
``min(C, L)`` it offers its parent, the reserved ``C - lendable`` it never lends, and its own
limit (``C + B`` under a parent, no limit without ``B``; ``C`` for a root). A cohort a queue
names but the snapshot does not declare is a root without quota of its own, so a flat cohort's
capacity is the sum of its members' lendable nominal: section 2's pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpusched.engine.model import Cohort, Queue, Quota

UNLIMITED = 1 << 60


@dataclass(slots=True)
class Limits:
    nominal: int  # a queue's nominal; a cohort's capacity C
    limit: int  # most usage allowed at this node alone
    reserved: int  # never lent to the parent


def lendable(nominal: int, lending_limit: int | None) -> int:
    """What a node may lend its parent of ``nominal``: its lending limit (all without one),
    never more than ``nominal``."""
    lend = nominal if lending_limit is None else lending_limit
    return max(0, min(lend, nominal))


class CohortTree:
    """Chains, members and per-flavor limits of the cohorts of one set of queues."""

    def __init__(self, queues: Iterable[Queue], cohorts: Iterable[Cohort]) -> None:
        queues = list(queues)
        declared = {c.name: c for c in cohorts}
        self.parent: dict[str, str | None] = {n: c.parent for n, c in declared.items()}
        self.weight: dict[str, float] = {n: c.weight for n, c in declared.items()}
        self._most: dict[tuple[str, str], int] = {}  # memo of most(): static like the rest
        # a tree (not flat): some cohort has a parent or a quota of its own
        self.hierarchical = any(c.parent is not None or c.quotas for c in declared.values())
        self.chain: dict[str, tuple[str, ...]] = {}  # queue -> its cohort, parent, ..., root
        self.members: dict[str, list[str]] = {}  # root -> every queue under it, in order
        children: dict[str, list[str]] = {}  # cohort -> child cohorts
        for name, parent in self.parent.items():
            if parent is not None:
                children.setdefault(parent, []).append(name)
        for q in queues:
            if q.cohort is None:
                continue
            up: list[str] = []
            k: str | None = q.cohort
            while k is not None and k not in up:
                up.append(k)
                k = self.parent.get(k)
            self.chain[q.name] = tuple(up)
            self.members.setdefault(up[-1], []).append(q.name)
        flavors: set[str] = set()
        for q in queues:
            flavors.update(q.quotas)
        for c in declared.values():
            flavors.update(c.quotas)
        # capacity of a cohort: own nominal + what its queues and child cohorts lend it
        self.capacity: dict[tuple[str, str], int] = {}
        self.limits: dict[tuple[str, str], Limits] = {}
        queue_lend: dict[tuple[str, str], int] = {}
        for q in queues:
            if q.cohort is not None:
                for f, quota in q.quotas.items():
                    key = (q.cohort, f)
                    lend = lendable(quota.nominal, quota.lending_limit)
                    queue_lend[key] = queue_lend.get(key, 0) + lend
        if not self.hierarchical:
            self.capacity = queue_lend
            return
        names = set(declared) | {k for chain in self.chain.values() for k in chain}
        for f in sorted(flavors):
            for name in names:
                self._cohort_capacity(name, f, declared, children, queue_lend)

    def _cohort_capacity(
        self,
        name: str,
        flavor: str,
        declared: Mapping[str, Cohort],
        children: Mapping[str, list[str]],
        queue_lend: Mapping[tuple[str, str], int],
    ) -> Limits:
        key = (name, flavor)
        known = self.limits.get(key)
        if known is not None:
            return known
        cohort = declared.get(name)
        quota = cohort.quotas.get(flavor) if cohort is not None else None
        own = quota or Quota(0)
        cap = own.nominal + queue_lend.get(key, 0)
        for child in children.get(name, ()):
            child_lim = self._cohort_capacity(child, flavor, declared, children, queue_lend)
            cap += child_lim.nominal - child_lim.reserved
        lend = cap if own.lending_limit is None else max(0, min(own.lending_limit, cap))
        if self.parent.get(name) is None:
            limit = cap
        elif own.borrowing_limit is None:
            limit = UNLIMITED
        else:
            limit = cap + own.borrowing_limit
        lim = Limits(cap, limit, cap - lend)
        self.limits[key] = lim
        self.capacity[key] = cap
        return lim

    def cohort_limits(self, cohort: str, flavor: str) -> Limits:
        """A cohort's capacity, limit and reserved part in ``flavor`` (nothing declared: 0)."""
        lim = self.limits.get((cohort, flavor))
        if lim is None:
            cap = self.capacity.get((cohort, flavor), 0)
            limit = cap if self.parent.get(cohort) is None else UNLIMITED
            lim = Limits(cap, limit, 0)
        return lim

    def most(self, cohort: str, flavor: str) -> int:
        """The most usage ``cohort`` could reach with the rest of the tree idle."""
        key = (cohort, flavor)
        known = self._most.get(key)
        if known is not None:
            return known
        parent = self.parent.get(cohort)
        lim = self.cohort_limits(cohort, flavor)
        if parent is None:
            most = lim.nominal
        else:
            most = min(lim.limit, lim.reserved + self.most(parent, flavor))
        self._most[key] = most
        return most

    def meeting(self, mine: str, theirs: str) -> tuple[str | None, str, str]:
        """The lowest common cohort of two queues and the nodes just below it on each side
        (the queues themselves when they share their cohort); None when in different trees."""
        up_mine = (mine, *self.chain.get(mine, ()))
        up_theirs = (theirs, *self.chain.get(theirs, ()))
        at = {node: i for i, node in enumerate(up_mine)}
        for j, node in enumerate(up_theirs):
            i = at.get(node)
            if i is not None and j > 0:
                return node, up_mine[i - 1], up_theirs[j - 1]
        return None, mine, theirs
