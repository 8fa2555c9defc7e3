"""Preemption rules 1-7 (SCHEDULING.md section 4), one situation per test."""

from __future__ import annotations

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import CycleResult, Node, ServiceClass
from gpusched.sim.simulate import simulate
from tests.gpusched.engine_builders import (
    CLASSES,
    nodes,
    pending,
    queue,
    running,
    scenario,
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
    # least work lost first (now 1000): v3 (10 GPU-s), v4 (100), then v2 (400) makes room;
    # v3 and v4 were not needed
    busy = [
        running("v1", "q", {"n0": 1}, cls="low", started_at=1),
        running("v2", "q", {"n0": 4}, gpus=4, cls="low", started_at=900),
        running("v3", "q", {"n0": 1}, cls="low", started_at=990),
        running("v4", "q", {"n0": 2}, gpus=2, cls="low", started_at=950),
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


def _swap_case(waiting_elsewhere: bool) -> CycleResult:
    """Queue a (nominal 2 of a cohort pool of 18) runs a small low-priority job on n0; n1 is
    free. a's std gang of 16 GPUs could swap it out by priority, borrowing 8 more from the pool.
    b's past usage ranks a's gang first."""
    small = running("small", "a", {"n0": 8}, gpus=8, cls="low", started_at=0)
    jobs = [pending("gang", "a", gpus=8, workers=2, submitted_at=1)]
    if waiting_elsewhere:
        jobs.append(pending("other", "b", gpus=8, workers=2, submitted_at=2))
    queues = [
        queue("a", 2, cohort="c"),
        queue("b", 4, cohort="c", decayed_usage=1e8),
        queue("idle", 12, cohort="c"),
    ]
    return run_cycle(snapshot(nodes("n", 2, {"h100": 8}), queues, [small], jobs))


def test_a_borrowing_job_may_swap_out_a_smaller_job_of_its_queue_when_nobody_else_waits() -> None:
    result = _swap_case(waiting_elsewhere=False)
    assert stopped(result) == {"small": "priority"}
    assert [a.job for a in result.admits] == ["gang"]


def test_a_borrowing_job_does_not_swap_its_way_into_pool_quota_another_queue_waits_for() -> None:
    result = _swap_case(waiting_elsewhere=True)
    assert not result.stops
    assert not result.admits
    assert result.pending["gang"].reason == "cohort-pool"


def test_two_queues_do_not_preempt_each_other_forever_through_a_priority_swap() -> None:
    """b's gang stops a's gang under fair sharing; a's small spot job stops b's gang in turn (a
    with 8 GPUs is below b with 16). a ranks first (b also runs l40s jobs). Were a's gang then
    allowed to swap the small job out by priority, taking the other 8 GPUs from the pool, b's
    gang would stop it again, and so on for ever: 132 stops and nothing finished by t=30000.
    Instead the small job runs to its end and the gangs take turns after it, b's first."""
    spot = {
        "name": "spot",
        "priority": 10,
        "preemptible": True,
        "can_borrow": True,
        "min_runtime": 0,
        "grace_period": 0,
    }
    std = {**spot, "name": "std", "priority": 100, "min_runtime": 300, "grace_period": 30}

    def job(name: str, queue: str, cls: str, workers: int, at: float, **more: object) -> dict:
        return {
            "name": name,
            "queue": queue,
            "class": cls,
            "workers": workers,
            "gpus_per_worker": 8,
            "duration": 5000,
            "submit_at": at,
            **more,
        }

    sc = scenario(
        [
            job("gang-a", "a", "std", 2, 0),
            job("b-l40s", "b", "std", 2, 0, flavor="l40s", duration=100000),
            job("gang-b", "b", "std", 2, 1),
            job("small-a", "a", "spot", 1, 2, estimated_runtime=100),
        ],
        flavors=[
            {"name": "h100", "resource": "nvidia.com/gpu"},
            {"name": "l40s", "resource": "nvidia.com/gpu"},
        ],
        clusters=[
            {
                "name": "main",
                "nodes": [
                    {"name_prefix": "n", "count": 2, "gpus": {"h100": 8}},
                    {"name": "l0", "gpus": {"l40s": 16}},
                ],
            }
        ],
        service_classes=[spot, std],
        queues=[
            {"name": "a", "cohort": "c", "quotas": {"h100": {"nominal": 2}}},
            {
                "name": "b",
                "cohort": "c",
                "quotas": {"h100": {"nominal": 4}, "l40s": {"nominal": 16}},
            },
            {"name": "idle", "cohort": "c", "quotas": {"h100": {"nominal": 12}}},
        ],
        until=30000,
    )
    report = simulate(sc)
    stops = [(e["job"], e["reason"], e["by"]) for e in report["events"] if e["type"] == "preempt"]
    assert stops == [
        ("gang-a", "fair-share", "gang-b"),
        ("gang-b", "fair-share", "small-a"),
    ]
    # after small-a ended, b's gang goes first: the borrowing jobs are ranked by rule 3's share
    # after admitting (b's 12 GPUs above nominal against a's 14), so nothing is stopped again
    assert [e["job"] for e in report["events"] if e["type"] == "admit" and e["t"] == 5680] == [
        "gang-b"
    ]
    jobs = {j["name"]: j for j in report["jobs"]}
    assert [jobs[n]["state"] for n in ("small-a", "gang-a", "gang-b")] == ["finished"] * 3


def test_reclaim_stops_the_large_borrowed_job_when_the_newest_small_one_would_not_help() -> None:
    """x (nominal 8) runs a (8 GPUs on n0) and, newer, b (1 GPU on n1): it borrows 1. J of q
    (nominal 8, idle) needs a whole node. Rule 5's order tries b first, which leaves x at its
    nominal, so a would no longer be allowed and J would wait for ever; stopping a alone (x
    borrows before it) makes room, and that is what the within-nominal job gets."""
    busy = [
        running("a", "x", {"n0": 8}, gpus=8, cls="low", started_at=0),
        running("b", "x", {"n1": 1}, gpus=1, cls="low", started_at=10),
        running("c", "y", {"n1": 7}, gpus=7, cls="prod", started_at=0),
    ]
    queues = [queue("x", 8, cohort="k"), queue("q", 8, cohort="k"), queue("y", 7)]
    result = run_cycle(
        snapshot(nodes("n", 2, {"h100": 8}), queues, busy, [pending("J", "q", gpus=8)])
    )
    assert stopped(result) == {"a": "reclaim"}
    assert [(a.job, a.placement) for a in result.admits] == [("J", {"n0": 8})]


def test_gpus_a_preemption_frees_at_once_go_to_a_job_ranked_before_the_preemptor() -> None:
    """q1's job (ranked first: its queue uses less) needs a free 4-GPU node and finds none. Then
    q0's prod job stops q0's std job on n0 (no grace period) for quota, and lands on n1. n0 is
    free at once: the q1 job takes it in the same cycle instead of waiting for the next one."""
    busy = [
        running("std", "q0", {"n0": 4}, gpus=4, cls="std"),
        running("prod0", "q0", {"n1": 3}, gpus=1, cls="prod"),
        running("prod1", "q1", {"n1": 2}, gpus=2, cls="prod"),
    ]
    jobs = [
        pending("first", "q1", gpus=4, cls="prod", submitted_at=3),
        pending("quota", "q0", gpus=1, cls="prod", submitted_at=3),
    ]
    node_list = [Node("n0", {"h100": 4}), Node("n1", {"h100": 8})]
    result = run_cycle(snapshot(node_list, [queue("q0", 7), queue("q1", 6)], busy, jobs))
    assert stopped(result) == {"std": "priority"}
    assert {a.job: a.placement for a in result.admits} == {"quota": {"n1": 1}, "first": {"n0": 4}}
