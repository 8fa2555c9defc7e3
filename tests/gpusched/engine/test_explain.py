"""The why-pending sentences (gpusched/engine/explain.py) never show a negative count."""

from __future__ import annotations

from gpusched.engine import explain
from gpusched.engine.explain import PendingInfo


def test_an_over_committed_cohort_pool_is_said_in_words_not_as_negative_free() -> None:
    # issue 24: after a quota was lowered the text read "... (20 h100) has -12 free"
    info = PendingInfo(
        job="7", reason=explain.COHORT_POOL, queue="team-c/main", position=1, flavor="h100",
        need=8, used=0, nominal=4, cohort="research", pool_size=20, pool_used=32,
    )  # fmt: skip
    assert "-12" not in info.message
    assert info.message.endswith(
        "the cohort pool of research (20 h100) has none free: it is over-committed by 12, as "
        "jobs admitted before its quotas were lowered still run."
    )


def test_a_pool_with_room_still_says_how_many_are_free() -> None:
    info = PendingInfo(
        job="7", reason=explain.COHORT_POOL, queue="team-c/main", position=1, flavor="h100",
        need=8, used=0, nominal=4, cohort="research", pool_size=20, pool_used=16,
    )  # fmt: skip
    assert info.message.endswith("the cohort pool of research (20 h100) has 4 free.")
