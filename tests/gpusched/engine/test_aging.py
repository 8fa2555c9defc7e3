"""Aging of borrowing jobs (docs/SCHEDULING.md section 4, Aging; gpusched/engine/aging.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpusched.engine.aging import AGE_BOUND
from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Snapshot
from gpusched.sim.simulate import simulate
from tests.gpusched.engine_builders import nodes, pending, queue, running, scenario, snapshot

STREAM_END = AGE_BOUND + 20_000  # the small jobs keep the node full until then


def _started(report: Any, job: str) -> float:
    return next(j["started_at"] for j in report["jobs"] if j["name"] == job)


def _gang_behind_a_stream(stream_queue: str) -> Any:
    """One 8-GPU node. Queue ``gang`` (nominal 0: its 8-GPU job can only borrow, and its weight
    puts it after the others) submits one gang at t=10; ``stream_queue`` submits a 1-GPU job of
    1,000 s every 125 s, so one ends every 125 s and the node is never empty. ``lender`` lends
    its nominal 8 and runs nothing; ``own`` has a nominal of 8."""
    jobs: list[dict[str, Any]] = [
        {"name": "gang", "queue": "gang", "gpus_per_worker": 8, "submit_at": 10,
         "duration": 100, "estimated_runtime": 100},
    ]  # fmt: skip
    t, i = 0, 0
    while t < STREAM_END:
        jobs.append(
            {"name": f"s{i}", "queue": stream_queue, "submit_at": t, "duration": 1000,
             "estimated_runtime": 1000}
        )  # fmt: skip
        t, i = t + 125, i + 1
    return scenario(
        jobs,
        cycle_interval=60,
        clusters=[{"name": "main", "nodes": [{"name": "n0", "gpus": {"h100": 8}}]}],
        queues=[
            {"name": "gang", "cohort": "co", "weight": 0.5, "quotas": {"h100": {"nominal": 0}}},
            {"name": "borrower", "cohort": "co", "quotas": {"h100": {"nominal": 0}}},
            {"name": "own", "cohort": "co", "quotas": {"h100": {"nominal": 8}}},
            {"name": "lender", "cohort": "co", "quotas": {"h100": {"nominal": 0}}},
        ],
    )


def test_a_gang_that_can_only_borrow_starts_soon_after_the_age_bound_behind_other_borrowers() -> (
    None
):
    """Another queue's borrowing 1-GPU jobs walk before the gang (lower share) and take each GPU
    that comes free. Without aging, EASY's reservation is the gang's only in cycles where
    nothing ranked before it is left, and is ignored again the next cycle: it waits for the
    stream to end. Aged, it holds the reservation and starts once the jobs then running end."""
    report = simulate(_gang_behind_a_stream("borrower"), "default")
    start = _started(report, "gang")
    assert AGE_BOUND <= start <= AGE_BOUND + 1000 + 60
    greedy = simulate(_gang_behind_a_stream("borrower"), "greedy")
    assert _started(greedy, "gang") >= STREAM_END  # without a reservation it starves


def test_within_nominal_jobs_do_not_wait_for_an_aged_reservation() -> None:
    """The stream is within its queue's nominal, so it is walked before the borrowing jobs and
    the aged gang's reservation does not hold it back: every stream job starts at once."""
    report = simulate(_gang_behind_a_stream("own"), "default")
    waits = [j["started_at"] - j["submitted_at"] for j in report["jobs"] if j["queue"] == "own"]
    assert len(waits) > 100 and max(waits) == 0
    assert _started(report, "gang") >= STREAM_END


def _aged_pair(first_stops: int) -> Snapshot:
    """A full 8-GPU node of queue ``own`` (nominal 8) until t=50,000; two 8-GPU jobs of queues
    of nominal 0 (so they can only borrow) wait since t=0 and t=100, the older one stopped and
    requeued ``first_stops`` times; a 1-GPU borrowing job of a third queue waits too."""
    busy = [running("busy", "own", {"n0": 8}, gpus=8, estimated_runtime=50_000, started_at=0)]
    jobs = [
        pending("older", "a", gpus=8, submitted_at=0, estimated_runtime=100),
        pending("younger", "b", gpus=8, submitted_at=100, estimated_runtime=100),
        pending("small", "c", gpus=1, submitted_at=AGE_BOUND, estimated_runtime=100_000),
    ]
    if first_stops:
        jobs[0] = replace(jobs[0], stops=first_stops)
    queues = [queue("own", 8, cohort="co"), queue("l", 8, cohort="co")]
    queues += [queue(name, 0, cohort="co") for name in ("a", "b", "c")]
    return snapshot(nodes("n", 2, {"h100": 8}), queues, busy, jobs, now=AGE_BOUND + 200)


def test_the_longest_waiting_borrowing_job_holds_the_reservation_and_a_requeued_one_does_not() -> (
    None
):
    """Queue c's 1-GPU job is walked first (the lowest share) and would take a GPU of the free
    node n1, which neither gang could then use. Aged, the older gang holds the reservation from
    the start of the borrowing jobs' walk: it starts on n1, and the reservation passes to the
    younger one. Once stopped and requeued, the older gang no longer ages: the younger starts."""
    result = run_cycle(_aged_pair(0))
    assert [a.job for a in result.admits] == ["older"]
    assert "younger" in [r.job for r in result.reservations]
    result = run_cycle(_aged_pair(1))
    assert [a.job for a in result.admits] == ["younger"]
