"""The cohort tree as the checker reads it (docs/SCHEDULING.md section 2a), from the scenario
alone and without the engine's code.

Bottom-up per flavor: a cohort's capacity is its own nominal plus what each child queue and
child cohort lends it; its usage is what its children use beyond their reserved part (a queue
reserves its nominal minus its lending limit; a cohort its capacity minus its lending limit).
A root may use its capacity; a cohort under a parent its capacity plus its borrowing limit (no
bound of its own without one). A flat cohort (named by queues, not declared) is a root without
quota of its own: its capacity is the pool of section 2 and its usage what the pool lends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpusched.sim.scenario import QuotaSpec, Scenario


@dataclass(frozen=True, slots=True)
class Level:
    cohort: str
    capacity: int
    used: int
    limit: int | None  # None: no bound at this node (its parent's still holds)
    reserved: int  # never lent to the parent

    @property
    def borrowing(self) -> bool:
        return self.used > self.capacity


def _lent(quota: QuotaSpec | None, capacity: int) -> int:
    if quota is None or quota.lending_limit is None:
        return capacity
    return max(0, min(quota.lending_limit, capacity))


class Tree:
    def __init__(self, scenario: Scenario) -> None:
        self.declared = {c.name: c for c in scenario.cohorts}
        self.queues = {q.name: q for q in scenario.queues}
        self.child_queues: dict[str, list[str]] = {}
        for q in scenario.queues:
            if q.cohort is not None:
                self.child_queues.setdefault(q.cohort, []).append(q.name)
        self.child_cohorts: dict[str, list[str]] = {}
        for c in scenario.cohorts:
            if c.parent is not None:
                self.child_cohorts.setdefault(c.parent, []).append(c.name)

    def parent(self, cohort: str) -> str | None:
        spec = self.declared.get(cohort)
        return spec.parent if spec is not None else None

    def path(self, queue: str) -> list[str]:
        """The queue's cohort, its parent, ..., the root (empty without a cohort)."""
        out: list[str] = []
        cohort = self.queues[queue].cohort
        while cohort is not None:
            out.append(cohort)
            cohort = self.parent(cohort)
        return out

    def nested(self, queue: str) -> bool:
        """Whether the queue sits in a real tree (not a flat cohort)."""
        path = self.path(queue)
        return (
            len(path) > 1
            or any((spec := self.declared.get(c)) is not None and spec.quotas for c in path)
            or any(self.child_cohorts.get(c) for c in path)
        )

    def level(self, cohort: str, flavor: str, usage: Mapping[tuple[str, str], int]) -> Level:
        spec = self.declared.get(cohort)
        own = spec.quotas.get(flavor) if spec is not None else None
        capacity = own.nominal if own is not None else 0
        used = 0
        for name in self.child_queues.get(cohort, ()):
            quota = self.queues[name].quotas.get(flavor)
            nominal = quota.nominal if quota is not None else 0
            lend = _lent(quota, nominal)
            capacity += lend
            used += max(0, usage.get((name, flavor), 0) - (nominal - lend))
        for child in self.child_cohorts.get(cohort, ()):
            below = self.level(child, flavor, usage)
            capacity += below.capacity - below.reserved
            used += max(0, below.used - below.reserved)
        if spec is None or spec.parent is None:
            limit: int | None = capacity
        elif own is not None and own.borrowing_limit is not None:
            limit = capacity + own.borrowing_limit
        else:
            limit = None
        return Level(cohort, capacity, used, limit, capacity - _lent(own, capacity))

    def levels(self, queue: str, flavor: str, usage: Mapping[tuple[str, str], int]) -> list[Level]:
        return [self.level(c, flavor, usage) for c in self.path(queue)]

    def over(self, queue: str, flavor: str, usage: Mapping[tuple[str, str], int]) -> bool:
        """Whether some cohort above the queue uses more than it may."""
        return any(
            lv.limit is not None and lv.used > lv.limit for lv in self.levels(queue, flavor, usage)
        )

    def meeting(self, mine: str, theirs: str) -> tuple[str | None, str, str]:
        """The lowest common cohort of two queues and the nodes just below it on each side."""
        up_mine = [mine, *self.path(mine)]
        up_theirs = [theirs, *self.path(theirs)]
        for j, node in enumerate(up_theirs):
            if j > 0 and node in up_mine:
                return node, up_mine[up_mine.index(node) - 1], up_theirs[j - 1]
        return None, mine, theirs

    def reach(self, cohort: str, flavor: str) -> int:
        """The most ``cohort`` could use with the rest of the tree idle: rule 3's denominator
        among its children (a flat cohort's pool)."""
        level = self.level(cohort, flavor, {})
        parent = self.parent(cohort)
        if parent is None:
            return level.capacity
        above = level.reserved + self.reach(parent, flavor)
        return above if level.limit is None else min(level.limit, above)
