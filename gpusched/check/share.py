"""Rule 3 of docs/SCHEDULING.md (fair sharing), checked on a replayed report.

A fair-share stop or shrink of a victim in queue V for a preemptor in queue P is allowed only
when ``share(P after admitting) <= share(V after the removal)`` or ``share(P after admitting) <
share(V before the removal)``, on the state with the preemptor's earlier victims removed, where
``share(q)`` is the most, over flavors, of (usage above nominal) / (cohort pool) / weight.
Across a cohort tree the two sides just below the queues' lowest common cohort are compared
(section 2a): a cohort's share is its usage above its capacity / the most the common cohort
could use / its weight (for a flat cohort: its pool).

The report lists a cycle's shrinks, then its stops, then its admissions, not the order the
engine decided them in; where that order matters the check takes the reading most favourable to
the engine: the instant's admissions count for V and not for P, and the instant's shrinks of V's
queue count as not yet made (in a tree: of every queue on V's side).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gpusched.check.jobs import EPS, fmt
from gpusched.sim.scenario import JobSpec, QuotaSpec

if TYPE_CHECKING:
    from gpusched.check.replay import Replay


def share(replay: Replay, usage: Mapping[tuple[str, str], int], queue: str) -> float:
    spec = replay.queues[queue]
    best = 0.0
    for flavor in replay.flavors:
        quota = spec.quotas.get(flavor)
        above = usage.get((queue, flavor), 0) - (quota.nominal if quota else 0)
        if above <= 0:
            continue
        pool = replay.tree.reach(spec.cohort, flavor) if spec.cohort is not None else 0
        best = max(best, above / pool / spec.weight if pool > 0 else math.inf)
    return best


def lent(quota: QuotaSpec | None) -> int:
    """What a queue lends its cohort's pool of a flavor: its nominal, unless a lending limit
    says less (the rest is never lent)."""
    if quota is None:
        return 0
    lend = quota.nominal if quota.lending_limit is None else quota.lending_limit
    return max(0, min(lend, quota.nominal))


def pool_of(
    replay: Replay, cohort: str | None, flavor: str, usage: Mapping[tuple[str, str], int]
) -> tuple[int, int]:
    """The cohort's pool of ``flavor`` (its capacity, section 2a) and how much of it the
    members' ``usage`` draws."""
    if cohort is None:
        return 0, 0
    level = replay.tree.level(cohort, flavor, usage)
    return level.capacity, level.used


def side_share(
    replay: Replay, usage: Mapping[tuple[str, str], int], queue: str, node: str, at: str | None
) -> float:
    """Rule 3 across a tree: the share of ``node`` (the queue itself, or one of its cohorts
    just below their lowest common cohort ``at``) among ``at``'s children."""
    if node == queue:
        return share(replay, usage, queue)
    spec = replay.tree.declared.get(node)
    weight = spec.weight if spec is not None else 1.0
    best = 0.0
    for flavor in replay.flavors:
        level = replay.tree.level(node, flavor, usage)
        above = level.used - level.capacity
        if above <= 0:
            continue
        pool = replay.tree.reach(at, flavor) if at is not None else 0
        best = max(best, above / pool / weight if pool > 0 else math.inf)
    return best


def fair_share_problem(
    replay: Replay, t: float, victim: JobSpec, flavor: str, removed: int, by: JobSpec
) -> str | None:
    """Why rule 3 forbids this removal, or None when one of its two tests passes (or the
    report does not say how much the preemptor takes)."""
    admits = replay.conservation.admits.get(by.name, [])
    taken = next((a for a in admits if a[0] >= t - EPS), None)
    if taken is None or taken[1] != flavor:
        return None
    usage: dict[tuple[str, str], int] = defaultdict(int, replay.queue_used)
    for name, w in replay.conservation.waiting.items():  # preemptors admitted earlier
        if name != by.name and w.flavor is not None:
            usage[replay.jobs[name].queue, w.flavor] += sum(w.placement.values())
    for end, alloc in replay.stopping:  # the preemptor's victims chosen before this one
        earlier = alloc.job in replay.conservation.stopped_now
        if earlier and end > t + EPS and replay.held_by.get(alloc.job) == by.name:
            usage[alloc.queue, alloc.flavor] -= sum(alloc.placement.values())
    mine_usage = dict(usage)
    mine_usage[by.queue, flavor] = mine_usage.get((by.queue, flavor), 0) + sum(taken[2].values())
    at, mine_node, their_node = replay.tree.meeting(by.queue, victim.queue)
    mine = side_share(replay, mine_usage, by.queue, mine_node, at)
    theirs_usage = dict(usage)
    # the victim's side: its queue, or every queue under its cohort below the common one
    side = {q for q in replay.queues if q == their_node or their_node in replay.tree.path(q)}
    for (queue, f), units in replay.coming.items():
        if queue in side and units > 0:
            theirs_usage[queue, f] = theirs_usage.get((queue, f), 0) + units
    for (queue, f), units in replay.conservation.shrunk_now.items():
        if queue in side:
            theirs_usage[queue, f] = theirs_usage.get((queue, f), 0) + units
    before = side_share(replay, theirs_usage, victim.queue, their_node, at)
    theirs_usage[victim.queue, flavor] = theirs_usage.get((victim.queue, flavor), 0) - removed
    after = side_share(replay, theirs_usage, victim.queue, their_node, at)
    if mine <= after + 1e-9 or mine < before:  # the same arithmetic as the engine: exact
        return None
    return (
        f"fair-share for {by.name}, but {mine_node}'s share after admitting it ({fmt(mine)}) is "
        f"above {their_node}'s after the stop ({fmt(after)}) and not below it before "
        f"({fmt(before)})"
    )
