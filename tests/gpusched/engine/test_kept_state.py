"""A state kept across cycles (``EngineState``: layout and its topology domains, bookkeeping,
ranking) explains and decides every cycle exactly as a fresh state does on the same snapshot."""

from __future__ import annotations

import pytest

from benchmarks.generate import generate
from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import CycleResult, Snapshot
from gpusched.engine.state import EngineState
from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import Simulator


class _Checked(Simulator):
    """Each cycle, decided on the run's kept state, is decided again on a fresh one."""

    cycles = 0

    def snapshot(self, t: float) -> Snapshot:
        self.last = super().snapshot(t)
        return self.last

    def decided(self, result: CycleResult, t: float, seconds: float) -> None:
        fresh = run_cycle(self.last, self.policy, explain_pending=True, state=EngineState())
        assert result == fresh, f"cycle at t={t}"
        self.cycles += 1


@pytest.mark.parametrize("seed", [1, 3])
def test_every_cycle_on_a_kept_state_decides_and_explains_as_on_a_fresh_one(seed: int) -> None:
    data = generate(seed=seed, nodes=24, queues=6, cohorts=2, jobs=160, mig_fraction=0.2)
    sim = _Checked(parse_scenario(data, source=f"generated-{seed}"), explain_pending=True)
    sim.run()
    assert sim.cycles > 50
