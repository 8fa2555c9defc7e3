"""Fair share over time and requeued jobs, end to end through the simulator.

SCHEDULING.md section 5: a queue that just ran a big burst comes after a queue that ran
nothing, even when both are at zero current usage, and that history fades with the half-life.
Section 4 rule 7: a preempted job goes back to pending with its original submission time.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.engine import fairshare
from gpusched.engine.model import Snapshot
from gpusched.sim.scenario import Scenario
from gpusched.sim.simulate import Simulator, simulate
from tests.gpusched.engine_builders import scenario

WEEK = 7 * 24 * 3600.0
BURST_GPUS = 16  # the whole cluster: two 8-GPU nodes
BURST_END = 36_000.0  # a ten-hour burst from t=0
CONTEST = 40_000.0  # the blocker ends: both queues' jobs wait for the same 16 GPUs

QUEUES = [{"name": name, "quotas": {"h100": {"nominal": 16}}} for name in ("busy", "idle", "other")]
WHOLE = {"workers": 2, "gpus_per_worker": 8}  # 16 GPUs: one such job fills the cluster


def _burst_then_contest(
    half_life: float, busy_job: str = "a-busy-late", idle_job: str = "z-idle-late"
) -> Scenario:
    """``busy`` runs the whole cluster for ten hours, then nothing. Later ``other`` holds the
    cluster from 39000 to 40000; meanwhile ``busy`` (at 39100) and then ``idle`` (at 39200)
    each submit a job needing the whole cluster. Three queues without cohort: no preemption
    between them, so the order at 40000 is the ranking alone. The job names are chosen per
    test so that the name tie-break favours the job expected to go second."""
    jobs: list[dict[str, Any]] = [
        {"name": "burst", "queue": "busy", "submit_at": 0, "duration": BURST_END, **WHOLE},
        {"name": "blocker", "queue": "other", "submit_at": 39_000, "duration": 1000, **WHOLE},
        {"name": busy_job, "queue": "busy", "submit_at": 39_100, "duration": 500, **WHOLE},
        {"name": idle_job, "queue": "idle", "submit_at": 39_200, "duration": 500, **WHOLE},
    ]
    return scenario(jobs, queues=QUEUES, half_life=half_life)


class Recording(Simulator):
    """Keeps the snapshot the engine saw at each cycle time (the last one at that time)."""

    def __init__(self, sc: Scenario) -> None:
        super().__init__(sc)
        self.seen: dict[float, Snapshot] = {}

    def snapshot(self, t: float) -> Snapshot:
        snap = super().snapshot(t)
        self.seen[t] = snap
        return snap


def _starts(report: dict[str, Any]) -> dict[str, list[float]]:
    starts: dict[str, list[float]] = {}
    for e in report["events"]:
        if e["type"] == "admit":
            starts.setdefault(e["job"], []).append(e["t"])
    return starts


def test_a_queue_that_ran_a_burst_waits_behind_an_idle_queue_at_zero_usage() -> None:
    sim = Recording(_burst_then_contest(WEEK))
    report = sim.run()
    starts = _starts(report)
    assert starts["burst"] == [0]
    assert starts["blocker"] == [39_000]
    # idle came later but ranks first: busy's history outweighs its earlier submission
    assert starts["z-idle-late"] == [CONTEST]
    assert starts["a-busy-late"] == [CONTEST + 500]

    snap = sim.seen[CONTEST]
    queues = {q.name: q for q in snap.queues}
    assert not [a for a in snap.admitted if a.queue in ("busy", "idle")]  # both at zero usage
    # H(busy): ten hours at 16 GPUs, then 4000 s of decay (fairshare.decay_usage)
    h_end = fairshare.decay_usage(0.0, BURST_GPUS, BURST_END, WEEK)
    expected = fairshare.decay_usage(h_end, 0.0, CONTEST - BURST_END, WEEK)
    assert queues["busy"].decayed_usage == pytest.approx(expected, rel=1e-9)
    assert queues["idle"].decayed_usage == 0.0
    # in GPUs: about the 16 x 10 h burst spread over tau (~0.64), against idle's 0
    busy_score = fairshare.score(queues["busy"].decayed_usage, 0.0, 1.0, WEEK)
    assert busy_score == pytest.approx(BURST_GPUS * BURST_END / fairshare.tau(WEEK), rel=0.05)
    assert fairshare.score(queues["idle"].decayed_usage, 0.0, 1.0, WEEK) == 0.0


def test_with_a_short_half_life_the_history_is_gone_and_submission_order_returns() -> None:
    """A one-second half-life: 4000 half-lives after the burst nothing of it is left (the
    decay underflows to exactly 0), so both queues score 0 and the earlier submission wins."""
    half_life = 1.0
    sim = Recording(_burst_then_contest(half_life, "z-busy-late", "a-idle-late"))
    report = sim.run()
    starts = _starts(report)
    assert starts["z-busy-late"] == [CONTEST]
    assert starts["a-idle-late"] == [CONTEST + 500]

    h_end = fairshare.decay_usage(0.0, BURST_GPUS, BURST_END, half_life)
    assert h_end == pytest.approx(BURST_GPUS * fairshare.tau(half_life))  # saturated
    assert fairshare.decay_usage(h_end, 0.0, CONTEST - BURST_END, half_life) == 0.0
    queues = {q.name: q for q in sim.seen[CONTEST].queues}
    assert queues["busy"].decayed_usage == 0.0
    assert queues["idle"].decayed_usage == 0.0


def test_history_still_counts_when_the_half_life_is_long_compared_to_the_gap() -> None:
    """Between the two: a 1000 s half-life leaves 2^-4 of the burst after the 4000 s gap,
    still more than idle's nothing, so idle still goes first."""
    half_life = 1000.0
    sim = Recording(_burst_then_contest(half_life))
    starts = _starts(sim.run())
    assert starts["z-idle-late"] == [CONTEST]
    assert starts["a-busy-late"] == [CONTEST + 500]
    h_end = fairshare.decay_usage(0.0, BURST_GPUS, BURST_END, half_life)
    left = sim.seen[CONTEST].queues[0].decayed_usage
    assert sim.seen[CONTEST].queues[0].name == "busy"
    assert left == pytest.approx(h_end / 16, rel=1e-9)  # four half-lives


# ---- a requeued job keeps its submission time ---------------------------------------------


def _preempted_then_contest() -> Scenario:
    """One 8-GPU node, one queue. ``z-victim`` (low, submitted at 0) runs from 0; ``a-later``
    (low, submitted at 50) waits for it; ``urgent`` (std, at 100) preempts ``z-victim``
    (priority), which is requeued at 100 and must restart from zero (no checkpoint). When
    ``urgent`` ends at 300 both low jobs want the node: the victim's original submission (0)
    comes before a-later's (50); the time it was requeued (100) and the names would not."""
    jobs: list[dict[str, Any]] = [
        {"name": "z-victim", "class": "low", "submit_at": 0, "duration": 1000},
        {"name": "a-later", "class": "low", "submit_at": 50, "duration": 100},
        {"name": "urgent", "class": "std", "submit_at": 100, "duration": 200},
    ]
    for j in jobs:
        j["gpus_per_worker"] = 8
    return scenario(
        jobs,
        clusters=[{"name": "main", "nodes": [{"name": "n1", "gpus": {"h100": 8}}]}],
        queues=[{"name": "q", "quotas": {"h100": {"nominal": 8}}}],
    )


def test_a_requeued_job_keeps_its_place_ahead_of_a_later_submission() -> None:
    report = simulate(_preempted_then_contest())
    preempts = [e for e in report["events"] if e["type"] == "preempt"]
    assert [(e["t"], e["job"], e["by"], e["reason"]) for e in preempts] == [
        (100, "z-victim", "urgent", "priority")
    ]
    assert [e["t"] for e in report["events"] if e["type"] == "requeue"] == [100]
    starts = _starts(report)
    assert starts["urgent"] == [100]
    assert starts["z-victim"] == [0, 300]  # back first when urgent ends
    assert starts["a-later"] == [1300]  # only after the victim's full restart
    jobs = {j["name"]: j for j in report["jobs"]}
    assert jobs["z-victim"]["submitted_at"] == 0
    assert jobs["z-victim"]["preemptions"] == 1
    assert jobs["z-victim"]["finished_at"] == 1300
    assert jobs["a-later"]["finished_at"] == 1400


def test_the_requeued_job_is_ranked_by_its_original_submission_in_the_snapshot() -> None:
    """The snapshot the engine ranks at 300 lists the victim pending with submitted_at 0."""
    sim = Recording(_preempted_then_contest())
    sim.run()
    pending = {p.name: p for p in sim.seen[300].pending}
    assert set(pending) == {"z-victim", "a-later"}
    assert pending["z-victim"].submitted_at == 0
    assert pending["a-later"].submitted_at == 50
