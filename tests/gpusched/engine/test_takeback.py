"""Rule 8 (docs/SCHEDULING.md section 4; issue 21): before stopping a running job of another
queue for a preemptor, the cycle takes back an admission of that queue it made earlier, when
its GPUs serve the preemptor: the job taken back never started, so no work is lost."""

from __future__ import annotations

from typing import Any

from gpusched.check.checker import check_report
from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Snapshot
from gpusched.sim.simulate import Simulator, simulate
from tests.gpusched.swap_scenario import swap_scenario


def _at(report: dict[str, Any], t: float) -> list[tuple[str, str]]:
    return [(e["type"], e["job"]) for e in report["events"] if e["t"] == t and "job" in e]


def test_the_preemptor_takes_back_the_same_cycle_admission_instead_of_stopping() -> None:
    scenario = swap_scenario()
    report = simulate(scenario, "default")
    # before: preempt a-old-1 (fair-share, by b-new), admit a-new, admit b-new
    assert _at(report, 100) == [("admit", "b-new")]
    assert report["summary"]["preemptions"] == 0
    jobs = {row["name"]: row for row in report["jobs"]}
    assert jobs["a-old-1"]["preemptions"] == 0
    # a-new waits for the next GPU, as b-new would have after a stop: nothing was lost
    assert jobs["a-new"]["started_at"] > 100
    assert check_report(scenario, report) == []


def test_without_preemption_nothing_is_taken_back() -> None:
    report = simulate(swap_scenario(), "greedy")
    assert ("admit", "a-new") in _at(report, 100)
    assert ("admit", "b-new") not in _at(report, 100)


class _Recorder(Simulator):
    """The simulator, keeping the snapshot of the cycle at t = 100."""

    kept: Snapshot | None = None

    def snapshot(self, t: float) -> Snapshot:
        snap = super().snapshot(t)
        if t == 100:
            self.kept = snap
        return snap


def test_the_job_taken_back_is_explained_as_pending() -> None:
    sim = _Recorder(swap_scenario(), "default")
    sim.run()
    assert sim.kept is not None
    result = run_cycle(sim.kept, explain_pending=True)
    assert [a.job for a in result.admits] == ["b-new"]
    assert result.stops == ()
    # live, every pending job says why it waits: the one taken back too (the cohort's pool is
    # full again once b-new holds its GPU)
    assert "a-new" in result.pending
    assert result.pending["a-new"].reason == "cohort-pool"
