"""The walk's memos (gpusched/engine/memo.py): what each forgets, and when."""

from __future__ import annotations

from gpusched.engine.memo import WalkMemo


def _filled(reuse: bool) -> WalkMemo:
    memo = WalkMemo(reuse=reuse)
    memo.admission.record(3, ("capacity", "h100"))
    memo.quota_reason.record(("q", "h100", 8, True), None)
    memo.quota_blocked.record(1, True)
    memo.no_candidates.record(("q", "std", "h100", 8), True)
    memo.placement_failed.record(("h100", 8, None, False), 2)
    memo.placement_failed.record(("a100", 8, None, False), 3)
    memo.preemption_failed.record(("q", 10, "h100", 8, None), 1)
    return memo


def test_a_change_of_state_forgets_what_held_on_the_old_state_only() -> None:
    memo = _filled(reuse=True)
    assert 3 in memo.admission and memo.admission.look_up(3) == ("capacity", "h100")
    memo.state_changed()
    assert not memo.admission and not memo.quota_reason
    assert not memo.quota_blocked and not memo.no_candidates
    assert len(memo.placement_failed) == 2 and len(memo.preemption_failed) == 1


def test_freed_capacity_forgets_the_placement_failures_of_its_flavor() -> None:
    memo = _filled(reuse=True)
    memo.capacity_freed("h100")
    assert list(memo.placement_failed) == [("a100", 8, None, False)]
    assert len(memo.preemption_failed) == 1 and 3 in memo.admission


def test_without_reuse_only_the_failures_kept_for_the_whole_cycle_are_recorded() -> None:
    memo = _filled(reuse=False)
    assert not memo.admission and not memo.quota_reason
    assert not memo.quota_blocked and not memo.no_candidates
    assert memo.placement_failed.look_up(("h100", 8, None, False)) == 2
    assert memo.preemption_failed.look_up(("q", 10, "h100", 8, None)) == 1
