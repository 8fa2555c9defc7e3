"""EASY backfill, elastic growth and baseline policies (SCHEDULING.md section 4)."""

from __future__ import annotations

from dataclasses import replace

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Flavor, Queue, Snapshot
from gpusched.sim.simulate import simulate
from tests.gpusched.engine_builders import nodes, pending, queue, running, scenario, snapshot


def _blocked_gang(*small: tuple[str, float]) -> Snapshot:
    """12 of 16 GPUs busy until t=1000; a 16-GPU gang waits; small 2-GPU jobs follow."""
    busy = [running("busy", "q", {"n0": 8, "n1": 4}, gpus=4, estimated_runtime=1000, started_at=0)]
    jobs = [pending("gang", "q", gpus=8, workers=2, submitted_at=1, estimated_runtime=500)]
    jobs += [
        pending(name, "q", gpus=2, submitted_at=2 + i, estimated_runtime=runtime)
        for i, (name, runtime) in enumerate(small)
    ]
    return snapshot(nodes("n", 2, {"h100": 8}), [queue("q", 32)], busy, jobs, now=10)


def test_the_best_ranked_blocked_job_gets_a_reservation_at_the_estimated_end() -> None:
    result = run_cycle(_blocked_gang())
    assert result.reservation is not None
    assert (result.reservation.job, result.reservation.start) == ("gang", 1000)
    assert result.reservation.nodes == {"n0": 8, "n1": 8}
    info = result.pending["gang"]
    assert info.reserved and info.estimated_start == 1000
    assert "Estimated start: t=1000" in info.message


def test_backfill_admits_a_job_that_ends_before_the_reservation() -> None:
    result = run_cycle(_blocked_gang(("short", 300)))
    assert [a.job for a in result.admits] == ["short"]


def test_backfill_never_delays_the_reservation() -> None:
    result = run_cycle(_blocked_gang(("long", 5000)))
    assert not result.admits
    info = result.pending["long"]
    assert info.reason == "behind-reservation" and info.blocker == "gang"
    assert "would delay job gang" in info.message


def test_a_job_behind_the_reservation_is_estimated_to_start_when_the_reserved_job_ends() -> None:
    """12 GPUs free at t=1000 and the 4 free now all go to the 16-GPU gang, which runs 500 s:
    the 2-GPU job behind it starts at 1500 (Slurm plans the jobs after the first the same way);
    before, it had no estimate at all."""
    result = run_cycle(_blocked_gang(("long", 5000)))
    info = result.pending["long"]
    assert info.reason == "behind-reservation" and info.estimated_start == 1500
    assert "Estimated start: t=1500" in info.message


def test_starts_waiting_for_jobs_past_their_estimated_ends_are_overdue_not_now() -> None:
    """ "busy" was estimated to end at t=1000 and still runs at 1200 and 1300: the gang's start
    and the start of the job behind it would be "now" and "now + 500", times that move with
    every cycle; they have none, and the same words in both cycles."""
    told = []
    for now in (1200, 1300):
        result = run_cycle(replace(_blocked_gang(("long", 5000)), now=now))
        gang, long = result.pending["gang"], result.pending["long"]
        assert gang.reserved and gang.overdue and gang.estimated_start is None
        assert gang.message.endswith(
            "Estimated start: as soon as the running jobs it waits for end; they have run past "
            "their estimated runtimes."
        )
        assert long.reason == "behind-reservation" and long.estimated_start is None
        assert long.overdue and long.message.endswith(
            "Estimated start: not known yet: the job holding the reservation waits for running "
            "jobs that have run past their estimated runtimes."
        )
        told.append((gang.message, long.message))
    assert told[0] == told[1]


def test_greedy_skips_the_blocked_gang_without_reserving() -> None:
    result = run_cycle(_blocked_gang(("long", 5000)), "greedy")
    assert [a.job for a in result.admits] == ["long"]
    assert result.reservation is None


def test_fifo_blocks_the_line_behind_the_first_job_that_does_not_fit() -> None:
    result = run_cycle(_blocked_gang(("short", 300)), "fifo")
    assert not result.admits
    assert result.pending["short"].reason == "head-of-line"
    assert "behind job gang" in result.pending["short"].message


def test_elastic_job_grows_into_idle_gpus_nobody_else_can_use() -> None:
    el = running("el", "q", {"n0": 2}, min_workers=2, requested_workers=12)
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 32)], [el]))
    assert [(s.job, s.workers, s.reason) for s in result.scales] == [("el", 8, "grow")]


def test_elastic_job_does_not_grow_while_a_job_waits_for_that_flavor() -> None:
    el = running("el", "q", {"n0": 2}, min_workers=2, requested_workers=12)
    waiting = pending("big", "q", gpus=8)
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 32)], [el], [waiting]))
    assert not result.scales


def test_elastic_growth_respects_the_queue_quota() -> None:
    el = running("el", "q", {"n0": 2}, min_workers=2, requested_workers=12)
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 5)], [el]))
    assert [(s.job, s.workers) for s in result.scales] == [("el", 5)]


def _pool_cohort(lending_b: int | None = None) -> list[Queue]:
    """One cohort whose h100 pool (64) is all three queues' quota: a (25, weight 2), b (14)."""
    return [
        queue("a", 25, cohort="c", weight=2.0),
        queue("b", 14, cohort="c", lending_limit=lending_b),
        queue("idle", 25, cohort="c"),
    ]


def test_elastic_job_does_not_grow_into_pool_quota_a_pending_job_waits_for() -> None:
    """Growing b from 32 to 64 GPUs would use the pool quota job big waits for."""
    el = running(
        "el", "b", {"n0": 8, "n1": 8, "n2": 8, "n3": 8}, gpus=8, min_workers=4, requested_workers=8
    )
    big = pending("big", "a", gpus=8, workers=8)
    result = run_cycle(snapshot(nodes("n", 16, {"h100": 8}), _pool_cohort(), [el], [big]))
    assert result.pending["big"].reason == "cohort-pool"
    assert not result.scales
    alone = run_cycle(snapshot(nodes("n", 16, {"h100": 8}), _pool_cohort(), [el]))
    assert [(s.job, s.workers) for s in alone.scales] == [("el", 8)]


def test_elastic_job_still_grows_within_the_quota_its_queue_never_lends() -> None:
    """b lends only 2 of its 14: it may grow up to 12 GPUs without touching the pool."""
    el = running("el", "b", {"n0": 4}, gpus=2, min_workers=2, requested_workers=8)
    other = running("other", "idle", {"n8": 8, "n9": 8, "n10": 8, "n11": 6}, gpus=2)
    big = pending("big", "a", gpus=8, workers=6)  # 48 of the pool's 52, 30 of them in use
    snap = snapshot(nodes("n", 16, {"h100": 8}), _pool_cohort(2), [el, other], [big])
    result = run_cycle(snap)
    assert result.pending["big"].reason == "cohort-pool"
    assert [(s.job, s.workers) for s in result.scales] == [("el", 6)]


def test_two_queues_do_not_preempt_each_other_forever_through_growth() -> None:
    """b's elastic job preempts a's gang under fair sharing (b's share with 32 GPUs is below
    a's with 64). Had it grown back to 64 GPUs, its share would let a's gang preempt it in
    turn, and so on for ever. It keeps its size, finishes, and a's gang runs after it."""
    std = {
        "name": "std",
        "priority": 100,
        "preemptible": True,
        "can_borrow": True,
        "min_runtime": 300,
        "grace_period": 30,
    }
    sc = scenario(
        [
            {
                "name": "gang",
                "queue": "a",
                "workers": 8,
                "gpus_per_worker": 8,
                "duration": 3000,
                "submit_at": 0,
            },
            {
                "name": "el",
                "queue": "b",
                "workers": 8,
                "min_workers": 4,
                "gpus_per_worker": 8,
                "duration": 3000,
                "submit_at": 600,
            },
        ],
        clusters=[
            {"name": "main", "nodes": [{"name_prefix": "n", "count": 16, "gpus": {"h100": 8}}]}
        ],
        service_classes=[std],
        queues=[
            {"name": "a", "cohort": "c", "weight": 2, "quotas": {"h100": {"nominal": 25}}},
            {"name": "b", "cohort": "c", "quotas": {"h100": {"nominal": 14}}},
            {"name": "idle", "cohort": "c", "quotas": {"h100": {"nominal": 25}}},
        ],
        until=100000,
    )
    report = simulate(sc)
    stops = [(e["job"], e["reason"]) for e in report["events"] if e["type"] == "preempt"]
    assert stops == [("gang", "fair-share")]
    assert report["summary"]["finished"] == 2


def test_a_job_its_quota_can_never_hold_does_not_take_the_reservation() -> None:
    """The best-ranked blocked job waits for nothing: the next one gets the reservation."""
    snap = _blocked_gang()
    solo = pending("solo-big", "solo", gpus=8, cls="prod", submitted_at=0, estimated_runtime=60)
    snap = replace(snap, queues=(*snap.queues, queue("solo", 4)), pending=(solo, *snap.pending))
    result = run_cycle(snap)
    assert result.pending["solo-big"].reason == "quota-exceeded"
    assert result.reservation is not None
    assert (result.reservation.job, result.reservation.start) == ("gang", 1000)


def test_a_job_that_can_run_on_its_second_flavor_waits_for_that_one() -> None:
    """First choice a100 is beyond its quota for good; it waits for h100 GPUs and reserves them."""
    busy = [running("busy", "q", {"n0": 8, "n1": 4}, gpus=4, estimated_runtime=1000, started_at=0)]
    gang = pending("gang", "q", gpus=8, workers=2, flavors=("a100", "h100"), estimated_runtime=9)
    queues = [queue("q", {"h100": 32, "a100": 8})]
    node_list = [*nodes("n", 2, {"h100": 8}), *nodes("a", 4, {"a100": 8})]
    flavors = (Flavor("h100"), Flavor("a100"))
    result = run_cycle(snapshot(node_list, queues, busy, [gang], now=10, flavors=flavors))
    info = result.pending["gang"]
    assert (info.reason, info.flavor) == ("capacity", "h100")
    assert result.reservation is not None and result.reservation.flavor == "h100"


def test_a_long_preemptor_does_not_take_gpus_the_reservation_counts_on() -> None:
    """A low-priority job ending before the gang's start frees GPUs the gang is promised; a
    lower-ranked long job may not preempt it to take them."""
    snap = _blocked_gang()
    short_low = running("low", "q", {"n1": 4}, gpus=4, cls="low", estimated_runtime=200)
    long_std = pending("long", "q", gpus=4, submitted_at=5, estimated_runtime=5000)
    snap = replace(snap, admitted=(*snap.admitted, short_low), pending=(*snap.pending, long_std))
    result = run_cycle(snap)
    assert result.reservation is not None and result.reservation.job == "gang"
    assert not result.stops and not result.admits


def test_a_long_preemptor_may_take_gpus_of_a_victim_that_outlasts_the_reservation() -> None:
    """A victim still running at the gang's start holds GPUs the gang does not count on."""
    busy = running("busy", "q", {"n0": 8}, gpus=4, estimated_runtime=1000, started_at=0)
    late_low = running("low", "q", {"n1": 4}, gpus=4, cls="low", estimated_runtime=9000)
    gang = pending("gang", "q", gpus=4, workers=3, submitted_at=1, estimated_runtime=500)
    long_std = pending("long", "q", gpus=4, submitted_at=5, estimated_runtime=5000)
    snap = snapshot(
        nodes("n", 2, {"h100": 8}), [queue("q", 32)], [busy, late_low], [gang, long_std], now=10
    )
    result = run_cycle(snap)
    assert result.reservation is not None
    assert (result.reservation.start, result.reservation.nodes) == (1000, {"n0": 8, "n1": 4})
    assert [(s.job, s.reason) for s in result.stops] == [("low", "priority")]
    assert [(a.job, a.placement) for a in result.admits] == [("long", {"n1": 4})]


def test_a_job_stopped_in_the_same_cycle_frees_nothing_at_its_old_estimated_end() -> None:
    """hi preempts low (estimated to end at 5000) and holds n0 until 9010: the gang's
    reservation waits for hi, not for the end low would have had."""
    low = running("low", "q", {"n0": 8}, gpus=8, cls="low", estimated_runtime=5000)
    busy = running("busy", "q", {"n1": 8}, gpus=8, estimated_runtime=1000)
    hi = pending("hi", "q", gpus=8, submitted_at=1, estimated_runtime=9000)
    gang = pending("gang", "q", gpus=8, workers=2, submitted_at=2, estimated_runtime=100)
    snap = snapshot(nodes("n", 2, {"h100": 8}), [queue("q", 32)], [low, busy], [hi, gang], now=10)
    result = run_cycle(snap)
    assert [(s.job, s.reason) for s in result.stops] == [("low", "priority")]
    assert [a.job for a in result.admits] == ["hi"]
    assert result.reservation is not None
    assert (result.reservation.job, result.reservation.start) == ("gang", 9010)


def test_a_job_held_by_the_cohort_pool_is_estimated_to_start_once_its_cohort_gives_back() -> None:
    """Queue a has used the cohort's whole pool (its 8 lent by nobody else: b lends 4 of its
    8 and holds them, a borrows them); 12 GPUs are free, but a's next 4 only fit the quota once
    a's job of 8 ends at t=1000 (before, such a job had no estimated start at all)."""
    busy = [
        running("a1", "a", {"n0": 8}, gpus=8, estimated_runtime=1000, started_at=0),
        running("a2", "a", {"n1": 4}, gpus=4, estimated_runtime=2000, started_at=0),
        running("b1", "b", {"n1": 4}, gpus=4, estimated_runtime=3000, started_at=0),
    ]
    queues = [queue("a", 8, cohort="c"), queue("b", 8, cohort="c", lending_limit=4)]
    jobs = [pending("next", "a", gpus=4, submitted_at=5, estimated_runtime=100)]
    result = run_cycle(snapshot(nodes("n", 3, {"h100": 8}), queues, busy, jobs, now=10))
    info = result.pending["next"]
    assert info.reason == "cohort-pool" and info.free >= 4
    assert info.estimated_start == 1000
