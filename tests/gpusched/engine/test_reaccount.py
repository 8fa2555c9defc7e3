"""Who borrows in a queue (docs/SCHEDULING.md section 2) and the borrowing jobs' order by rule 3's
share (section 4): a job that may not borrow does not stop a lower-priority job of its queue
that can go on running as the queue's borrower, and a queue just given GPUs waits behind one
that borrows less instead of having its job swapped out in the same cycle."""

from __future__ import annotations

from gpusched.check.checker import check_report
from gpusched.engine.cycle import run_cycle
from gpusched.sim.simulate import simulate
from tests.gpusched.engine_builders import nodes, pending, queue, running, scenario, snapshot


def _spot_then_prod(b_busy: int):
    """Queue a (nominal 4) runs a 4-GPU `low` job; a 2-GPU prod job of a arrives. Queue b
    (nominal 6) of the same cohort runs ``b_busy`` prod GPUs."""
    queues = [queue("a", 4, cohort="c"), queue("b", 6, cohort="c")]
    busy = [running("spot", "a", {"n0": 4}, cls="low")]
    busy += [running(f"b{i}", "b", {"n1": 1}, cls="prod") for i in range(b_busy)]
    job = pending("p", "a", gpus=2, cls="prod")
    return run_cycle(snapshot(nodes("n", 2, {"h100": 8}), queues, busy, [job]))


def test_a_job_that_may_not_borrow_leaves_a_lower_job_running_as_the_queues_borrower() -> None:
    result = _spot_then_prod(b_busy=0)
    assert not result.stops  # before: `spot` was stopped by priority, then readmitted borrowing
    assert [(a.job, a.borrowing) for a in result.admits] == [("p", False)]


def test_the_lower_job_is_stopped_when_the_cohort_has_no_room_for_it_to_borrow() -> None:
    result = _spot_then_prod(b_busy=6)  # the pool of 10 is full: 4 (a) + 6 (b)
    assert [(s.job, s.reason) for s in result.stops] == [("spot", "priority")]
    assert [a.job for a in result.admits] == ["p"]


def test_a_higher_priority_job_is_not_the_queues_borrower() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 6, cohort="c")]
    busy = [running("std", "a", {"n0": 4}, cls="std")]
    job = pending("l", "a", gpus=2, cls="low")  # may borrow itself: it borrows
    result = run_cycle(snapshot(nodes("n", 2, {"h100": 8}), queues, busy, [job]))
    assert [(a.job, a.borrowing) for a in result.admits] == [("l", True)]


def test_the_queue_that_borrows_less_gets_the_free_gpu_and_nothing_is_swapped() -> None:
    """BENCHMARKS.md's same-cycle swap: a (nominal 0) borrows 2 and b is at its nominal 4 on a
    7-GPU node; at t=100 one GPU is free and a job of each arrives. Ranked by the score over
    time, a's job took the GPU and b's stopped one of a's running jobs in the same cycle. Ranked
    by rule 3's share after admitting (a: 3/7, b: 1/7), b's job takes the GPU and a's waits."""
    jobs = [
        {"name": "a-old-1", "queue": "a", "submit_at": 0, "duration": 10000},
        {"name": "a-old-2", "queue": "a", "submit_at": 0, "duration": 10000},
        {"name": "b-old", "queue": "b", "submit_at": 0, "gpus_per_worker": 4, "duration": 10000},
        {"name": "a-new", "queue": "a", "submit_at": 100, "duration": 1000},
        {"name": "b-new", "queue": "b", "submit_at": 100, "duration": 1000},
    ]
    sc = scenario(
        jobs,
        cycle_interval=60,
        clusters=[{"name": "c", "nodes": [{"name": "n1", "gpus": {"h100": 7}}]}],
        queues=[
            {"name": "a", "cohort": "co", "quotas": {"h100": {"nominal": 0}}},
            {"name": "b", "cohort": "co", "quotas": {"h100": {"nominal": 4}}},
            {"name": "c", "cohort": "co", "quotas": {"h100": {"nominal": 3}}},
        ],
        until=3000,
    )
    report = simulate(sc)
    assert check_report(sc, report) == []
    events = report["events"]
    assert not [e for e in events if e["type"] == "preempt"]
    at_120 = [e["job"] for e in events if e["type"] == "admit" and 100 <= e["t"] <= 120]
    assert at_120 == ["b-new"]
