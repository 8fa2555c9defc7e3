"""The submit form's estimate: start, borrow, preempt or wait, without deciding anything.

The live service (queues/services/estimate.py) shows what this returns and nothing else: where
and how big the job would start, whom it would preempt and how, why it would wait.
"""

from __future__ import annotations

from gpusched.engine import explain
from gpusched.engine.estimate import BORROW, PREEMPT, START, WAIT, estimate
from gpusched.engine.model import Flavor, ServiceClass
from tests.gpusched.engine_builders import CLASSES, nodes, pending, queue, running, snapshot

GRACEFUL = ServiceClass("graceful", priority=100, grace_period=30)


def test_a_job_that_fits_its_quota_would_start_now_on_the_first_flavor_that_fits() -> None:
    flavors = (Flavor("h100"), Flavor("a100"))
    snap = snapshot(
        [*nodes("h", 1, {"h100": 8}), *nodes("a", 1, {"a100": 8})],
        [queue("a", {"h100": 8, "a100": 8}), queue("b", 8)],
        [running("x", "b", {"h0": 8}, gpus=8, cls="prod")],
        flavors=flavors,
    )
    result = estimate(snap, pending("j", "a", gpus=2, workers=3, flavors=("h100", "a100")))
    assert result.outcome == START and result.estimated_start == snap.now
    assert result.admit is not None
    admit = result.admit
    assert (admit.cluster, admit.flavor, admit.workers, admit.borrowing) == ("c", "a100", 3, False)
    assert admit.placement == {"a0": 6}
    assert result.victims == () and result.pending is None and result.reason == ""


def test_a_job_above_nominal_would_borrow() -> None:
    snap = snapshot(
        nodes("n", 1, {"h100": 8}), [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")]
    )
    result = estimate(snap, pending("j", "a", gpus=6))
    assert result.outcome == BORROW and "borrowing" in result.message
    assert result.admit is not None and result.admit.borrowing
    assert (result.admit.flavor, result.admit.workers) == ("h100", 1)


def test_a_within_nominal_job_would_reclaim_by_preempting() -> None:
    busy = [running(f"a{i}", "a", {"n0": 1}, started_at=i) for i in range(8)]
    snap = snapshot(
        nodes("n", 1, {"h100": 8}), [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")], busy
    )
    result = estimate(snap, pending("j", "b", gpus=1))
    assert result.outcome == PREEMPT and result.victims == ("a7",)
    assert [(s.job, s.reason, s.by) for s in result.stops] == [("a7", "reclaim", "j")]


def test_preempting_names_each_victim_stopped_or_shrunk_with_its_reason_and_grace() -> None:
    """Queue a borrows 6 GPUs; the candidate reclaims them by stopping the rigid job and
    shrinking the elastic one to its minimum. A preemption that another pending job makes in
    the same trial cycle (d-hi over d-low) is not the candidate's."""
    busy = [
        running("elastic", "a", {"n0": 4}, cls="graceful", started_at=10, min_workers=2),
        running("rigid", "a", {"n0": 4}, gpus=4, cls="graceful", started_at=20),
        running("d-low", "d", {"n1": 8}, gpus=8, cls="low", started_at=5),
    ]
    snap = snapshot(
        nodes("n", 2, {"h100": 8}),
        [queue("a", 2, cohort="c"), queue("b", 6, cohort="c"), queue("d", 8)],
        busy,
        [pending("d-hi", "d", gpus=8, cls="high")],
        classes=(*CLASSES, GRACEFUL),
    )
    result = estimate(snap, pending("j", "b", gpus=2, workers=3))
    assert result.outcome == PREEMPT
    assert result.estimated_start == snap.now + 30  # after the victims' grace period
    assert result.admit is not None
    assert (result.admit.workers, result.admit.placement) == (3, {"n0": 6})
    assert result.admit.start_at == snap.now + 30
    assert [(s.job, s.reason, s.by, s.release_at) for s in result.stops] == [
        ("rigid", "reclaim", "j", snap.now + 30)
    ]
    assert [(s.job, s.workers, s.reason, s.by) for s in result.scales] == [
        ("elastic", 2, "reclaim", "j")
    ]
    assert result.victims == ("rigid", "elastic")
    assert "d-low" not in result.message and "rigid, elastic" in result.message


def test_a_job_that_cannot_fit_would_wait_with_the_reason_and_estimated_start() -> None:
    busy = [running("x", "a", {"n0": 8}, gpus=8, cls="prod", started_at=900, estimated_runtime=500)]
    snap = snapshot(nodes("n", 1, {"h100": 8}), [queue("a", 16)], busy)
    result = estimate(snap, pending("j", "a", gpus=4))
    assert result.outcome == WAIT and result.reason == explain.CAPACITY
    assert result.admit is None and result.victims == ()
    assert result.estimated_start == 1400  # x's estimated end: GPUs are reserved for it then
    info = result.pending
    assert info is not None
    assert (info.job, info.position, info.flavor, info.need, info.free) == ("j", 1, "h100", 4, 0)
    assert info.reserved and info.estimated_start == 1400
    assert "Waiting for GPUs" in result.message and "t=1400" in result.message
    assert snap.pending == ()  # the snapshot itself is untouched


def test_a_job_held_back_by_a_reservation_names_the_blocker_and_its_position() -> None:
    busy = [running("x", "a", {"n0": 4}, gpus=4, cls="prod", started_at=900, estimated_runtime=500)]
    snap = snapshot(nodes("n", 1, {"h100": 8}), [queue("a", 16)], busy, [pending("big", "a", 8)])
    long_job = pending("j", "a", gpus=2, submitted_at=500, estimated_runtime=3600)
    result = estimate(snap, long_job)
    assert result.outcome == WAIT and result.reason == explain.BEHIND_RESERVATION
    assert result.pending is not None
    assert (result.pending.blocker, result.pending.position) == ("big", 2)
    # big is reserved at 1400 (x's estimated end) and runs the default 3600 s: j starts after
    assert result.estimated_start == 5000
    # the same job, short enough to end before the reservation, backfills now
    short = estimate(snap, pending("j", "a", gpus=2, submitted_at=500, estimated_runtime=100))
    assert short.outcome == START and short.pending is None
