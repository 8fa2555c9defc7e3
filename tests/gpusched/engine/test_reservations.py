"""More than one backfill reservation (docs/SCHEDULING.md section 4, Backfill; reservations.py)."""

from __future__ import annotations

from gpusched.check.checker import check_report
from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Snapshot
from gpusched.engine.policies import Policy
from gpusched.sim.simulate import simulate
from tests.gpusched.engine_builders import nodes, pending, queue, running, scenario, snapshot

ONE = Policy("one", reservations=1)
TWO = Policy("two", reservations=2)


def _two_gangs(*more: tuple[str, int, float]) -> Snapshot:
    """Three 8-GPU nodes. n0 is busy until t=1000, n1 and half of n2 until t=3000. ``gang1``
    (8 GPUs, 500 s) could start on n0 at 1000; ``gang2`` (3 x 8 GPUs) needs every node, so it
    can start only at 3000. ``more``: (name, GPUs, estimated runtime) ranked after them."""
    busy = [
        running("busy1", "q", {"n0": 8}, gpus=8, estimated_runtime=1000, started_at=0),
        running("busy2", "q", {"n1": 8, "n2": 4}, gpus=4, estimated_runtime=3000, started_at=0),
    ]
    jobs = [
        pending("gang1", "q", gpus=8, submitted_at=1, estimated_runtime=500),
        pending("gang2", "q", gpus=8, workers=3, submitted_at=2, estimated_runtime=500),
    ]
    jobs += [
        pending(name, "q", gpus=gpus, submitted_at=3 + i, estimated_runtime=runtime)
        for i, (name, gpus, runtime) in enumerate(more)
    ]
    return snapshot(nodes("n", 3, {"h100": 8}), [queue("q", 64)], busy, jobs, now=10)


def test_the_second_blocked_gang_gets_a_reservation_planned_after_the_first() -> None:
    """gang1 holds n0 from 1000 to 1500; gang2 is planned around it and starts at 3000, when
    busy2 ends. With one reservation gang2 has none."""
    result = run_cycle(_two_gangs(), TWO)
    assert [(r.job, r.start) for r in result.reservations] == [("gang1", 1000), ("gang2", 3000)]
    assert result.reservations[1].nodes == {"n0": 8, "n1": 8, "n2": 8}
    assert result.pending["gang2"].reserved and result.pending["gang2"].estimated_start == 3000
    one = run_cycle(_two_gangs(), ONE)
    assert [r.job for r in one.reservations] == ["gang1"]
    assert not one.pending["gang2"].reserved


def test_a_long_job_may_not_take_the_second_gangs_gpus() -> None:
    """4 GPUs are free on n2 now. A 4-GPU job of 5,000 s would still hold them at 3000: with
    one reservation it starts there and gang2 waits longer; with two it is held back, and told
    which reservation it would delay."""
    one = run_cycle(_two_gangs(("long", 4, 5000)), ONE)
    assert [a.job for a in one.admits] == ["long"]
    two = run_cycle(_two_gangs(("long", 4, 5000)), TWO)
    assert not two.admits
    info = two.pending["long"]
    assert info.reason == "behind-reservation" and info.blocker == "gang2"
    assert "would delay job gang2" in info.message


def test_a_job_ending_between_the_two_starts_is_bound_by_the_first_only() -> None:
    """A 4-GPU job of 1,000 s ends at 1010: after gang1's start (but gang1 needs n0 only) and
    before gang2's, so it takes n2's free GPUs."""
    result = run_cycle(_two_gangs(("middle", 4, 1000)), TWO)
    assert [(a.job, dict(a.placement)) for a in result.admits] == [("middle", {"n2": 4})]


def test_a_job_behind_both_is_estimated_after_both_reserved_jobs() -> None:
    """4 GPUs would be free from 1000 on, but gang2 holds every GPU from 3000 to 3500, so a
    4-GPU job of 5,000 s behind both is estimated to start at 3500, not at 1000."""
    info = run_cycle(_two_gangs(("long", 4, 5000)), TWO).pending["long"]
    assert info.reason == "behind-reservation"
    assert info.estimated_start == 3500


def test_reservations_hold_in_a_replay_and_the_checker_accepts_them() -> None:
    """A replay with two reservations: each gang starts when its reservation said, and the
    independent checker (which reads every reserve event of an instant as one set) finds no
    broken rule."""
    jobs = [
        {"name": "busy1", "queue": "q", "gpus_per_worker": 8, "submit_at": 0,
         "duration": 1000, "estimated_runtime": 1000},
        {"name": "busy2", "queue": "q", "gpus_per_worker": 4, "workers": 3, "submit_at": 0,
         "duration": 3000, "estimated_runtime": 3000},
        {"name": "gang1", "queue": "q", "gpus_per_worker": 8, "submit_at": 10,
         "duration": 500, "estimated_runtime": 500},
        {"name": "gang2", "queue": "q", "gpus_per_worker": 8, "workers": 3, "submit_at": 11,
         "duration": 500, "estimated_runtime": 500},
        {"name": "long", "queue": "q", "gpus_per_worker": 4, "submit_at": 12,
         "duration": 5000, "estimated_runtime": 5000},
    ]  # fmt: skip
    spec = scenario(
        jobs,
        clusters=[{"name": "c", "nodes": [{"name_prefix": "n", "count": 3, "gpus": {"h100": 8}}]}],
        queues=[{"name": "q", "quotas": {"h100": {"nominal": 64}}}],
    )
    report = simulate(spec, TWO)
    started = {j["name"]: j["started_at"] for j in report["jobs"]}
    assert started["gang1"] == 1000 and started["gang2"] == 3000
    assert started["long"] >= 3500  # it never took gang2's GPUs
    reserves = [e for e in report["events"] if e["type"] == "reserve"]
    assert {"gang1", "gang2"} <= {e["job"] for e in reserves}
    assert check_report(spec, report) == []


def test_elastic_jobs_grown_one_after_the_other_leave_the_reserved_gpus() -> None:
    """``big`` waits for its cohort's quota until b's job ends at t=1000 and holds 4 of n2's 8
    GPUs then; n2 is idle now. Two elastic jobs of another queue grow (they have no end
    estimate, so still run at t=1000): together they may take only n2's 4 spare GPUs, not 4
    each."""
    queues = [queue("a", 4, cohort="c"), queue("b", 12, cohort="c"), queue("x", 24)]
    admitted = [
        running("r", "b", {"n0": 8, "n3": 4}, gpus=4, estimated_runtime=1000, started_at=0),
        running("el1", "x", {"n1": 3}, min_workers=1, requested_workers=8),
        running("el2", "x", {"n1": 2}, min_workers=1, requested_workers=8),
    ]
    big = pending("big", "a", gpus=4, workers=3, submitted_at=1, estimated_runtime=500)
    result = run_cycle(snapshot(nodes("n", 4, {"h100": 8}), queues, admitted, [big], now=10))
    assert result.pending["big"].reason == "cohort-pool"
    (reserve,) = result.reservations
    assert reserve.nodes.get("n2") == 4
    assert {s.job for s in result.scales} == {"el1", "el2"}  # both grew
    grown_on_n2 = sum(s.placement.get("n2", 0) for s in result.scales)
    assert 8 - grown_on_n2 >= reserve.nodes["n2"]


def test_an_elastic_job_of_the_reserved_jobs_queue_leaves_it_its_quota() -> None:
    """``big`` (8 GPUs) waits for queue a's nominal of 12 until r's 4 GPUs come back at t=1000.
    a's elastic job, with no end estimate, still runs then: it may grow by the 2 GPUs big leaves
    of the quota, not into every free GPU of n2 (with 8 of its own, big could not start)."""
    admitted = [
        running("r", "a", {"n0": 4}, gpus=4, estimated_runtime=1000, started_at=0),
        running("el", "a", {"n2": 2}, min_workers=1, requested_workers=8),
    ]
    big = pending("big", "a", gpus=8, submitted_at=1, estimated_runtime=500)
    result = run_cycle(
        snapshot(nodes("n", 3, {"h100": 8}), [queue("a", 12)], admitted, [big], now=10)
    )
    assert result.pending["big"].reason == "quota-nominal"
    assert [(r.job, r.start) for r in result.reservations] == [("big", 1000)]
    (scale,) = result.scales
    assert (scale.job, scale.workers) == ("el", 4)  # 4 of el's + big's 8 = a's nominal 12
