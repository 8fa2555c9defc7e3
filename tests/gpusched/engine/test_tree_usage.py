"""``tree_usage``: the cohort tree node by node (docs/SCHEDULING.md section 2a's worked check),
and a flat cohort's "lent" as it always was (``lent_by_member``)."""

from __future__ import annotations

from gpusched.engine.model import Cohort, Queue, Quota
from gpusched.engine.quota import QuotaState, QuotaStatics, lent_by_member
from gpusched.engine.tree_usage import queue_lent, tree_usage


def _worked_check(usage: dict[tuple[str, str], int]) -> QuotaState:
    queues = [
        Queue("hep", quotas={"h100": Quota(8)}, cohort="physics"),
        Queue("bio", quotas={"h100": Quota(6)}, cohort="biology"),
    ]
    cohorts = [
        Cohort("org"),
        Cohort("physics", parent="org", quotas={"h100": Quota(0, 4, 2)}),
        Cohort("biology", parent="org"),
    ]
    return QuotaState(queues, usage, QuotaStatics(queues, cohorts))


def test_with_hep_idle_bio_uses_the_two_physics_lends() -> None:
    rows = tree_usage(_worked_check({("bio", "h100"): 8}))
    table = [(r.name, r.depth, r.nominal, r.used, r.borrowed, r.lent, r.held) for r in rows]
    assert table == [
        ("org", 0, 8, 8, 0, 0, 8),
        ("biology", 1, 6, 8, 2, 0, 8),
        ("bio", 2, 6, 8, 2, 0, 8),
        ("physics", 1, 8, 0, 0, 2, 0),
        ("hep", 2, 8, 0, 0, 2, 0),
    ]
    assert rows[-1].path == ("org", "physics", "hep")


def test_with_bio_idle_hep_borrows_four_through_physics() -> None:
    rows = {r.name: r for r in tree_usage(_worked_check({("hep", "h100"): 12}))}
    assert (rows["physics"].used, rows["physics"].borrowed) == (12, 4)
    assert (rows["biology"].lent, rows["bio"].lent) == (4, 4)
    assert rows["org"].used == 6  # physics asks org for what is above its reserved 6


def test_a_flat_cohorts_lent_is_lent_by_member() -> None:
    queues = [
        Queue("a", quotas={"h100": Quota(8)}, cohort="c"),
        Queue("b", quotas={"h100": Quota(5, lending_limit=3)}, cohort="c"),
        Queue("d", quotas={"h100": Quota(4)}, cohort="c"),
    ]
    usage = {("a", "h100"): 13}
    lent = queue_lent(QuotaState(queues, usage))
    expected = lent_by_member({"a": (8, None), "b": (5, 3), "d": (4, None)}, {"a": 13})
    assert {q: lent[(q, "h100")] for q in "abd"} == expected
