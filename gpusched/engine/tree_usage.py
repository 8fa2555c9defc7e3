"""The cohort tree as it stands now (docs/SCHEDULING.md section 2a), node by node and flavor.

Per node (a cohort or a queue) and flavor: ``nominal`` (a queue's nominal; a cohort's capacity
``C``: its own nominal plus what its children lend it), ``used`` (a queue's usage; a cohort's
``U``: the part of its children's usage their reserved quota does not cover), ``borrowed``
(``U - C`` when above: what it takes from its parent beyond what it owns) and ``lent`` (how much
of its unused lendable capacity the rest of its parent's subtree uses now). ``held`` is what the
queues below the node hold together. All of it is ``QuotaState``'s arithmetic; "lent" spreads, at
every cohort, what its children borrow and what it lends its own parent over the children with
unused lendable capacity (``lent_by_member``), its own nominal counted first.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpusched.engine.quota import QuotaState, lendable, lent_by_member

OWN = "(own nominal)"  # a cohort's own nominal, lent first to its children's borrowers
PARENT = "(lent to parent)"  # what the cohort lends its parent: drawn from its children


@dataclass(frozen=True, slots=True)
class NodeUsage:
    name: str  # a cohort's name, or a queue's
    is_queue: bool
    depth: int  # 0: a root cohort
    path: tuple[str, ...]  # root ... this node
    flavor: str
    nominal: int
    used: int
    borrowed: int
    lent: int
    held: int


def tree_usage(state: QuotaState) -> list[NodeUsage]:
    """Every cohort of ``state``'s tree with its queues, depth first (cohorts by name, then a
    cohort's child cohorts before its queues), one row per flavor it has capacity or usage in."""
    tree = state.tree
    cohorts: set[str] = set(tree.parent)
    for chain in tree.chain.values():
        cohorts.update(chain)
    child_cohorts: dict[str, list[str]] = defaultdict(list)
    for name in sorted(cohorts):
        parent = tree.parent.get(name)
        if parent is not None:
            child_cohorts[parent].append(name)
    queues: dict[str, list[str]] = defaultdict(list)
    for queue in sorted(tree.chain):
        queues[tree.chain[queue][0]].append(queue)
    flavors = sorted(state.flavors | {f for _, f in tree.limits} | {f for _, f in tree.capacity})

    held: dict[tuple[str, str], int] = defaultdict(int)
    for queue, chain in tree.chain.items():
        for f in flavors:
            for cohort in chain:
                held[(cohort, f)] += state.used(queue, f)

    lent: dict[tuple[str, str], int] = {}  # node, flavor -> lent (root cohorts: 0)

    def spread(cohort: str, f: str) -> None:
        """Split what ``cohort``'s pool gives away over its children (then theirs)."""
        quotas: dict[str, tuple[int, int | None]] = {}
        used: dict[str, int] = {}
        own = state.tree.cohort_limits(cohort, f).nominal
        for child in child_cohorts.get(cohort, ()):
            lim = tree.cohort_limits(child, f)
            quotas[child] = (lim.nominal, lim.nominal - lim.reserved)
            used[child] = state.pool_used.get((child, f), 0)
            own -= lim.nominal - lim.reserved
        for queue in queues.get(cohort, ()):
            lim = state.limits(queue, f)
            quota = state.queues[queue].quotas.get(f)
            quotas[queue] = (lim.nominal, None if quota is None else quota.lending_limit)
            used[queue] = state.used(queue, f)
            own -= lendable(lim.nominal, None if quota is None else quota.lending_limit)
        if own > 0:
            quotas[OWN] = (own, None)
        up = lent.get((cohort, f), 0)
        if up:
            quotas[PARENT], used[PARENT] = (0, None), up
        lent.update({(name, f): units for name, units in lent_by_member(quotas, used).items()})
        for child in child_cohorts.get(cohort, ()):
            spread(child, f)

    roots = sorted(name for name in cohorts if tree.parent.get(name) is None)
    for f in flavors:
        for root in roots:
            spread(root, f)

    rows: list[NodeUsage] = []

    def visit(cohort: str, path: tuple[str, ...]) -> None:
        path = (*path, cohort)
        for f in flavors:
            nominal = tree.cohort_limits(cohort, f).nominal
            used = state.pool_used.get((cohort, f), 0)
            if nominal or used or held[(cohort, f)]:
                rows.append(
                    NodeUsage(
                        cohort, False, len(path) - 1, path, f, nominal, used,
                        max(0, used - nominal), lent.get((cohort, f), 0), held[(cohort, f)],
                    )
                )  # fmt: skip
        for child in child_cohorts.get(cohort, ()):
            visit(child, path)
        for queue in queues.get(cohort, ()):
            for f in flavors:
                nominal, used = state.nominal(queue, f), state.used(queue, f)
                if f in state.queues[queue].quotas or used:
                    rows.append(
                        NodeUsage(
                            queue, True, len(path), (*path, queue), f, nominal, used,
                            max(0, used - nominal), lent.get((queue, f), 0), used,
                        )
                    )  # fmt: skip

    for root in roots:
        visit(root, ())
    return rows


def queue_lent(state: QuotaState) -> dict[tuple[str, str], int]:
    """(queue, flavor) -> how much of the queue's unused lendable nominal the rest of its tree
    uses now (the queue pages' "lent"; a flat cohort's: ``lent_by_member``'s)."""
    return {(r.name, r.flavor): r.lent for r in tree_usage(state) if r.is_queue}
