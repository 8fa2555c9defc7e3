"""A job held by its cohort's pool is told when it could start (``start_estimates.PoolTimes``):
the walk over the releases, shared by every job of a queue and flavor and taken only as far as
asked, answers what a walk of its own for each job answers, asked in any order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.engine.model import Queue, Quota
from gpusched.engine.quota import QuotaState
from gpusched.engine.start_estimates import Events, PoolTimes

FLAVOR = "h100"
QUEUES = ("a", "b", "c", "solo")


def _walked(quota: QuotaState, events: Events, queue: str, need: int, free: int) -> float | None:
    """The rule, one job at a time: at each release time (all its releases together), the
    first at which ``need`` more units stay within the queue's limit, are free, and borrow no
    more than the pool has left."""
    cohort = quota.cohort.get(queue)
    if cohort is None:
        return None
    limits = quota.limits(queue, FLAVOR)
    pool_size, pool_used = quota.pool_numbers(queue, FLAVOR)
    used = {queue: quota.used(queue, FLAVOR)}
    k = 0
    while k < len(events):
        t = events[k][0]
        while k < len(events) and events[k][0] == t:
            _, _, units, owner = events[k]
            k += 1
            free += units
            if quota.cohort.get(owner) != cohort:
                continue
            before = used.setdefault(owner, quota.used(owner, FLAVOR))
            after = before - units
            reserved = quota.limits(owner, FLAVOR).reserved
            pool_used += max(0, after - reserved) - max(0, before - reserved)
            used[owner] = after
        own = used[queue]
        if own + need > limits.limit or free < need:
            continue
        borrow = max(0, own + need - limits.reserved) - max(0, own - limits.reserved)
        if borrow <= pool_size - pool_used:
            return t
    return None


quotas = st.builds(
    Quota,
    nominal=st.integers(min_value=0, max_value=16),
    borrowing_limit=st.one_of(st.none(), st.integers(min_value=0, max_value=16)),
    lending_limit=st.one_of(st.none(), st.integers(min_value=0, max_value=16)),
)
worlds = st.tuples(
    st.lists(quotas, min_size=len(QUEUES), max_size=len(QUEUES)),
    st.lists(st.integers(min_value=0, max_value=24), min_size=len(QUEUES), max_size=len(QUEUES)),
    st.lists(  # releases: time, units, owner
        st.tuples(
            st.integers(min_value=0, max_value=6),
            st.integers(min_value=1, max_value=8),
            st.sampled_from(QUEUES),
        ),
        max_size=20,
    ),
    st.integers(min_value=0, max_value=8),  # free now
    st.lists(st.tuples(st.sampled_from(QUEUES), st.integers(1, 40)), min_size=1, max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(worlds)
def test_the_shared_walk_tells_each_job_what_its_own_walk_would(world: tuple) -> None:  # type: ignore[type-arg]
    queue_quotas, usage, releases, free, asks = world
    queues = [
        Queue(name, {FLAVOR: q}, cohort=None if name == "solo" else "pool")
        for name, q in zip(QUEUES, queue_quotas, strict=True)
    ]
    quota = QuotaState(queues, {(name, FLAVOR): u for name, u in zip(QUEUES, usage, strict=True)})
    events: Events = sorted(
        (float(t), i, units, owner) for i, (t, units, owner) in enumerate(releases)
    )
    walks = {name: PoolTimes(quota, events, name, FLAVOR, free) for name in QUEUES}
    for queue, need in asks:
        assert walks[queue].first(need) == _walked(quota, events, queue, need, free)
