"""Preemption rules 1-7 (SCHEDULING.md section 4), one situation per test."""

from __future__ import annotations

from queues.scheduling.cycle import run_cycle
from queues.scheduling.model import CycleResult, ServiceClass
from tests.scheduling.engine_builders import (
    CLASSES,
    nodes,
    pending,
    queue,
    running,
    snapshot,
)


def stopped(result: CycleResult) -> dict[str, str]:
    return {s.job: s.reason for s in result.stops}


def test_within_nominal_job_reclaims_from_a_borrowing_queue_newest_first() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")]
    busy = [running(f"a{i}", "a", {"n0": 1}, started_at=i) for i in range(8)]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), queues, busy, [pending("b0", "b", gpus=2)])
    )
    assert stopped(result) == {"a7": "reclaim", "a6": "reclaim"}
    assert [a.job for a in result.admits] == ["b0"]
    assert all(s.by == "b0" for s in result.stops)


def test_reclaim_ignores_priority_of_the_borrowed_jobs() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")]
    busy = [running(f"a{i}", "a", {"n0": 1}, cls="high", started_at=i) for i in range(8)]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), queues, busy, [pending("b0", "b", cls="low")])
    )
    assert stopped(result) == {"a7": "reclaim"}


def test_jobs_of_a_queue_within_its_nominal_are_not_reclaimed() -> None:
    queues = [queue("a", 8, cohort="c"), queue("b", 0, cohort="c")]
    busy = [running(f"a{i}", "a", {"n0": 1}, started_at=i) for i in range(8)]
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), queues, busy, [pending("b0", "b")]))
    assert not result.stops and not result.admits


def _fair_share_case(a_jobs: dict[str, int], b_jobs: dict[str, int], want: int) -> CycleResult:
    """Cohort of a, b, c (nominal 4 each, pool 12) on 12 GPUs; c idle; b asks for more."""
    queues = [queue(q, 4, cohort="c") for q in ("a", "b", "c")]
    node_list = nodes("n", 1, {"h100": 12})
    busy = [running(name, "a", {"n0": g}, gpus=g, started_at=1) for name, g in a_jobs.items()]
    busy += [running(name, "b", {"n0": g}, gpus=g, started_at=2) for name, g in b_jobs.items()]
    return run_cycle(snapshot(node_list, queues, busy, [pending("new", "b", gpus=want)]))


def test_fair_sharing_preempts_when_the_preemptor_stays_at_or_below_the_victim() -> None:
    # a borrows 4, b borrows 0; b asking 1 borrows 1: 1/12 <= a's 3/12 after removing one job
    result = _fair_share_case({f"a{i}": 1 for i in range(8)}, {f"b{i}": 1 for i in range(4)}, 1)
    assert set(stopped(result).values()) == {"fair-share"}
    assert len(result.stops) == 1


def test_fair_sharing_second_test_allows_stopping_a_large_borrowing_job() -> None:
    # a runs one 8-GPU job (borrows 4): after removing it a borrows nothing (share 0 < 1/12),
    # but b's share after admitting (1/12) is below a's share before (4/12)
    result = _fair_share_case({"big": 8}, {f"b{i}": 1 for i in range(4)}, 1)
    assert stopped(result) == {"big": "fair-share"}


def test_fair_sharing_refuses_when_both_tests_fail() -> None:
    # a and b both borrow 2: b asking 1 more would reach 3/12 > a's 2/12 and 1/12
    result = _fair_share_case({f"a{i}": 1 for i in range(6)}, {f"b{i}": 1 for i in range(6)}, 1)
    assert not result.stops and not result.admits


def test_priority_preempts_only_strictly_lower_priority_jobs_of_its_own_queue() -> None:
    busy = [
        running("same", "q", {"n0": 4}, gpus=4, cls="std", started_at=5),
        running("lower", "q", {"n0": 4}, gpus=4, cls="low", started_at=1),
    ]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 8)], busy, [pending("p", "q", gpus=4)])
    )
    assert stopped(result) == {"lower": "priority"}


def test_equal_priority_in_the_same_queue_is_never_preempted() -> None:
    busy = [running("same", "q", {"n0": 8}, gpus=8, cls="std")]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 16)], busy, [pending("p", "q", gpus=8)])
    )
    assert not result.stops and result.pending["p"].reason == "capacity"


def test_min_runtime_protects_a_young_job_until_it_has_run_long_enough() -> None:
    protected = ServiceClass("low", priority=10, min_runtime=600)
    classes = (*[c for c in CLASSES if c.name != "low"], protected)
    busy = [running("young", "q", {"n0": 8}, gpus=8, cls="low", started_at=500)]
    jobs = [pending("p", "q", gpus=8, cls="high")]
    early = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 8)], busy, jobs, now=1000, classes=classes)
    )
    assert not early.stops
    later = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 8)], busy, jobs, now=1100, classes=classes)
    )
    assert stopped(later) == {"young": "priority"}


def test_non_preemptible_jobs_are_never_preempted() -> None:
    busy = [running("prodjob", "a", {"n0": 8}, gpus=8, cls="prod")]
    queues = [queue("a", 0, cohort="c"), queue("b", 8, cohort="c")]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), queues, busy, [pending("p", "b", gpus=8, cls="high")])
    )
    assert not result.stops and not result.admits


def test_the_victim_set_is_minimal() -> None:
    # newest first: v4 (2 GPUs), v3 (1), then v2 (4) makes room; v3 and v4 were not needed
    busy = [
        running("v1", "q", {"n0": 1}, cls="low", started_at=1),
        running("v2", "q", {"n0": 4}, gpus=4, cls="low", started_at=2),
        running("v3", "q", {"n0": 1}, cls="low", started_at=3),
        running("v4", "q", {"n0": 2}, gpus=2, cls="low", started_at=4),
    ]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 16)], busy, [pending("p", "q", gpus=4)])
    )
    assert stopped(result) == {"v2": "priority"}


def test_nothing_is_stopped_for_a_job_that_would_still_not_fit() -> None:
    busy = [running("v", "q", {"n0": 4}, gpus=4, cls="low")]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 16)], busy, [pending("p", "q", gpus=16)])
    )
    assert not result.stops


def test_an_elastic_victim_is_shrunk_rather_than_stopped() -> None:
    busy = [
        running("el", "q", {"n0": 6}, cls="low", min_workers=2, requested_workers=6, started_at=9),
        running("rigid", "q", {"n0": 2}, gpus=2, cls="low", started_at=1),
    ]
    result = run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 16)], busy, [pending("p", "q", gpus=4)])
    )
    assert not result.stops
    assert [(s.job, s.workers, s.by) for s in result.scales] == [("el", 2, "p")]


def test_grace_period_delays_the_start_and_holds_the_gpus_for_the_preemptor() -> None:
    graceful = ServiceClass("low", priority=10, grace_period=30)
    classes = (*[c for c in CLASSES if c.name != "low"], graceful)
    busy = [running("v", "q", {"n0": 8}, cls="low")]
    result = run_cycle(
        snapshot(
            nodes("n", 1, {"h100": 8}),
            [queue("q", 16)],
            busy,
            [pending("p", "q", gpus=4), pending("other", "q", gpus=4, cls="low", submitted_at=5)],
            now=1000,
            classes=classes,
        )
    )
    assert [(s.job, s.release_at) for s in result.stops] == [("v", 1030)]
    assert [(a.job, a.start_at) for a in result.admits] == [("p", 1030)]
    # the next cycle, during the grace period: the victim's GPUs are still held
    stopping = running("v", "q", {"n0": 8}, cls="low", stopping=True, release_at=1030, held_for="p")
    waiting = running("p", "q", {"n0": 4}, gpus=4, started_at=None, start_at=1030)  # type: ignore[arg-type]
    nxt = run_cycle(
        snapshot(
            nodes("n", 1, {"h100": 8}),
            [queue("q", 16)],
            [stopping, waiting],
            [pending("other", "q", gpus=4, cls="low", submitted_at=5)],
            now=1010,
            classes=classes,
        )
    )
    assert not nxt.admits
