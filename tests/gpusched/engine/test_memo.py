"""The walk's memos (gpusched/engine/memo.py): what each forgets, and when."""

from __future__ import annotations

from gpusched.engine.memo import WalkMemo


def _filled(reuse: bool) -> WalkMemo:
    memo = WalkMemo(reuse=reuse)
    memo.admission[3] = ("capacity", "h100")
    memo.quota_reason[("q", "h100", 8, True)] = None
    memo.quota_blocked[1] = True
    memo.no_candidates[("q", "std", "h100", 8)] = True
    memo.placement_failed[("h100", 8, None, False)] = 2
    memo.placement_failed[("a100", 8, None, False)] = 3
    memo.preemption_failed[("q", 10, "h100", 8, None)] = 1
    return memo


def test_a_change_of_state_forgets_what_held_on_the_old_state_only() -> None:
    memo = _filled(reuse=True)
    assert memo.admission[3] == ("capacity", "h100")
    assert ("q", "h100", 8, True) in memo.quota_reason
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
    assert memo.placement_failed.get(("h100", 8, None, False)) == 2
    assert memo.preemption_failed.get(("q", 10, "h100", 8, None)) == 1
