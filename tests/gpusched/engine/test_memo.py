"""The walk's memos (gpusched/engine/memo.py): what each forgets, and when."""

from __future__ import annotations

import pytest

from benchmarks.generate import generate
from gpusched.engine.cycle import run_cycle
from gpusched.engine.memo import WalkMemo
from gpusched.engine.model import CycleResult, Snapshot
from gpusched.engine.state import EngineState
from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import Simulator


def _filled(reuse: bool) -> WalkMemo:
    memo = WalkMemo(reuse=reuse)
    memo.admission[3] = ("capacity", "h100")
    memo.quota_reason["h100"] = {("q", "h100", 8, True): None}
    memo.quota_blocked[1] = True
    memo.no_candidates[("q", "std", "h100", 8)] = True
    memo.placement_failed[("h100", 8, None, False)] = 2
    memo.placement_failed[("a100", 8, None, False)] = 3
    memo.preemption_failed[("q", 10, "h100", 8, None)] = 1
    return memo


def test_a_change_of_state_forgets_what_held_on_the_old_state_only() -> None:
    memo = _filled(reuse=True)
    assert memo.admission[3] == ("capacity", "h100")
    assert ("q", "h100", 8, True) in memo.quota_reason["h100"]
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


def test_an_admission_forgets_only_what_its_flavor_changed() -> None:
    memo = WalkMemo(reuse=True)
    memo.admission_failed(3, ("capacity", "h100"), ("h100", "a100"))
    memo.admission_failed(5, ("cohort-pool", "l40s"), ("l40s",))
    memo.quota_reason["h100"] = {("q", "h100", 8, None): "cohort-pool"}
    memo.quota_reason["l40s"] = {("q", "l40s", 8, None): "cohort-pool"}
    memo.quota_blocked[1] = True
    memo.no_candidates[("q", "std", "l40s", 8)] = True
    memo.quota_taken("a100")  # a job of shape 3 may list a100 after h100
    assert list(memo.admission) == [5]
    assert list(memo.quota_reason) == ["h100", "l40s"]
    assert not memo.quota_blocked and not memo.no_candidates
    memo.quota_taken("l40s")
    assert not memo.admission and list(memo.quota_reason) == ["h100"]
    memo.admission_failed(3, ("capacity", "h100"), ("h100", "a100"))  # recorded again
    memo.quota_taken("h100")
    assert not memo.admission and not memo.quota_reason


class _Unmemoized(Simulator):
    """Each explained cycle, decided with the walk's memos, is decided again without them."""

    cycles = 0

    def snapshot(self, t: float) -> Snapshot:
        self.last = super().snapshot(t)
        return self.last

    def decided(self, result: CycleResult, t: float, seconds: float) -> None:
        without = EngineState(memoize=False)
        again = run_cycle(self.last, self.policy, explain_pending=True, state=without)
        assert result == again, f"cycle at t={t}"
        self.cycles += 1


@pytest.mark.parametrize(
    ("seed", "policy", "nodes", "jobs"),
    [(0, "default", 24, 200), (3, "default", 16, 300), (6, "greedy", 24, 200)],
)
def test_every_explained_cycle_decides_and_explains_as_without_the_memos(
    seed: int, policy: str, nodes: int, jobs: int
) -> None:
    """What the memos keep across admissions (answers about other flavors) must give the same
    decisions and the same explanation of every waiting job as asking every job anew."""
    data = generate(seed=seed, nodes=nodes, queues=6, cohorts=2, jobs=jobs, mig_fraction=0.3)
    sim = _Unmemoized(
        parse_scenario(data, source=f"generated-{seed}"), policy, explain_pending=True
    )
    sim.run()
    assert sim.cycles > 50
