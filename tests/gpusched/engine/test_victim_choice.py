"""Rule 5's victim order (docs/SCHEDULING.md section 4): among jobs the rules allow alike, the
one whose stop throws away the least work goes first, and a job already stopped goes last."""

from __future__ import annotations

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import AdmittedJob, CycleResult
from tests.gpusched.engine_builders import nodes, pending, queue, running, snapshot

NOW = 1000.0


def reclaim_one(*busy: AdmittedJob) -> CycleResult:
    """Queue a (nominal 4) borrows everything on one full 9-GPU node; b (nominal 5, idle)
    asks for one GPU within its nominal, so it reclaims one of a's jobs."""
    queues = [queue("a", 4, cohort="c"), queue("b", 5, cohort="c")]
    used = sum(sum(job.placement.values()) for job in busy)
    assert used == 9, "the node must be full"
    return run_cycle(
        snapshot(nodes("n", 1, {"h100": 9}), queues, busy, [pending("b0", "b")], now=NOW)
    )


def stopped(result: CycleResult) -> set[str]:
    return {s.job for s in result.stops}


def test_the_victim_is_the_job_whose_stop_loses_the_fewest_gpu_hours() -> None:
    # "wide" started 200 s ago on 8 GPUs (1,600 GPU-s lost), "long" 1,000 s ago on 1 GPU
    # (1,000 GPU-s): the most recently started job is not the cheapest one to stop
    wide = running("wide", "a", {"n0": 8}, gpus=8, started_at=NOW - 200)
    long = running("long", "a", {"n0": 1}, started_at=NOW - 1000)
    result = reclaim_one(wide, long)
    assert stopped(result) == {"long"}
    assert [a.job for a in result.admits] == ["b0"]


def test_work_kept_by_a_checkpoint_is_not_counted_as_lost() -> None:
    # "saved" ran 1,000 s but checkpoints every 300 s: a stop now loses 100 s of it;
    # "fresh" ran 500 s without checkpoints and would lose all of them
    busy = [
        running("saved", "a", {"n0": 1}, started_at=NOW - 1000, checkpoint_interval=300.0),
        running("fresh", "a", {"n0": 1}, started_at=NOW - 500),
        running("rest", "a", {"n0": 7}, gpus=7, started_at=NOW - 900),
    ]
    assert stopped(reclaim_one(*busy)) == {"saved"}


def test_a_job_already_stopped_twice_is_the_last_candidate_not_the_first() -> None:
    # "again" restarted 100 s ago after two stops: by work alone the cheapest stop
    busy = [
        running("again", "a", {"n0": 1}, started_at=NOW - 100, stops=2),
        running("never", "a", {"n0": 1}, started_at=NOW - 900),
        running("rest", "a", {"n0": 7}, gpus=7, started_at=NOW - 950),
    ]
    assert stopped(reclaim_one(*busy)) == {"never"}


def test_each_earlier_stop_counts_the_work_a_stop_would_lose_once_more() -> None:
    # "once" would lose 200 GPU-s, counted twice after its one earlier stop: 400
    busy = [
        running("once", "a", {"n0": 1}, started_at=NOW - 200, stops=1),
        running("fresh", "a", {"n0": 1}, started_at=NOW - 300),
        running("rest", "a", {"n0": 7}, gpus=7, started_at=NOW - 950),
    ]
    assert stopped(reclaim_one(*busy)) == {"fresh"}
    busy[1] = running("fresh", "a", {"n0": 1}, started_at=NOW - 500)
    assert stopped(reclaim_one(*busy)) == {"once"}


def test_a_job_stopped_three_times_is_not_stopped_again_by_priority_or_fair_share() -> None:
    """Rule 1's stop bound: no fourth priority or fair-share stop."""
    # priority: p (high) would stop v (low) of its own queue
    for stops, want in ((2, {"v": "priority"}), (3, {})):
        busy = [running("v", "q", {"n0": 8}, gpus=8, cls="low", stops=stops)]
        result = run_cycle(
            snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 8)], busy,
                     [pending("p", "q", gpus=8, cls="high")], now=NOW)
        )  # fmt: skip
        assert {s.job: s.reason for s in result.stops} == want
    # fair share: a borrows 4 of a pool of 12 with one 8-GPU job, b (at nominal) asks for 1
    for stops, want in ((2, {"big": "fair-share"}), (3, {})):
        busy = [running("big", "a", {"n0": 8}, gpus=8, stops=stops)]
        busy += [running(f"b{i}", "b", {"n0": 1}) for i in range(4)]
        queues = [queue(name, 4, cohort="c") for name in ("a", "b", "c")]
        result = run_cycle(
            snapshot(nodes("n", 1, {"h100": 12}), queues, busy, [pending("new", "b")], now=NOW)
        )
        assert {s.job: s.reason for s in result.stops} == want


def test_a_job_stopped_three_times_that_its_nominal_holds_is_not_reclaimed_either() -> None:
    """Held to nominal (stop_bound.py): 'w' (1 GPU, queue a's nominal 4) is the cheapest stop
    by work, but after three stops no reclaim reaches it; 'v' (8 GPUs, more than a's nominal
    could ever hold) still borrows, so the reclaim takes it."""
    w = running("w", "a", {"n0": 1}, started_at=NOW - 10, stops=3)
    v = running("v", "a", {"n0": 8}, gpus=8, started_at=NOW - 900, stops=5)
    assert stopped(reclaim_one(v, w)) == {"v"}
    # two stops only: w is the cheapest stop, and it goes
    w = running("w", "a", {"n0": 1}, started_at=NOW - 10, stops=2)
    v = running("v", "a", {"n0": 8}, gpus=8, started_at=NOW - 900, stops=2)
    assert stopped(reclaim_one(v, w)) == {"w"}


def test_a_job_stopped_three_times_starts_again_only_within_its_queues_nominal() -> None:
    """Queue a (nominal 2, cohort with idle b) runs 2 GPUs: a fresh 1-GPU job may borrow and
    starts; the same job after three stops waits for a's nominal, and says why."""
    queues = [queue("a", 2, cohort="c"), queue("b", 6, cohort="c")]
    busy = [running("r", "a", {"n0": 2}, gpus=2)]
    for stops, starts in ((2, True), (3, False)):
        job = pending("j", "a", stops=stops)
        result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), queues, busy, [job], now=NOW))
        assert bool(result.admits) is starts
    info = result.pending["j"]
    assert "Stopped and requeued 3 times already" in info.message
    assert "only within its queue's nominal quota" in info.message
    # with room in a's nominal it starts at once, held or not
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), queues, [], [job], now=NOW))
    assert [a.job for a in result.admits] == ["j"]


def test_a_job_larger_than_its_queues_nominal_still_borrows_after_three_stops() -> None:
    """Held to nominal it could never start: it borrows as its class allows."""
    queues = [queue("a", 2, cohort="c"), queue("b", 6, cohort="c")]
    job = pending("big", "a", gpus=4, stops=3)
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), queues, [], [job], now=NOW))
    assert [a.job for a in result.admits] == ["big"]
