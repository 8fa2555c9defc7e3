"""The submit form's estimate: start, borrow, preempt or wait, without deciding anything."""

from __future__ import annotations

from queues.scheduling.estimate import BORROW, PREEMPT, START, WAIT, estimate
from tests.scheduling.engine_builders import nodes, pending, queue, running, snapshot


def test_a_job_that_fits_its_quota_would_start_now() -> None:
    snap = snapshot(
        nodes("n", 1, {"h100": 8}), [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")]
    )
    result = estimate(snap, pending("j", "a", gpus=2))
    assert result.outcome == START and result.estimated_start == snap.now


def test_a_job_above_nominal_would_borrow() -> None:
    snap = snapshot(
        nodes("n", 1, {"h100": 8}), [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")]
    )
    result = estimate(snap, pending("j", "a", gpus=6))
    assert result.outcome == BORROW and "borrowing" in result.message


def test_a_within_nominal_job_would_reclaim_by_preempting() -> None:
    busy = [running(f"a{i}", "a", {"n0": 1}, started_at=i) for i in range(8)]
    snap = snapshot(
        nodes("n", 1, {"h100": 8}), [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")], busy
    )
    result = estimate(snap, pending("j", "b", gpus=1))
    assert result.outcome == PREEMPT and result.victims == ("a7",)


def test_a_job_that_cannot_fit_would_wait_with_the_reason() -> None:
    busy = [running("x", "a", {"n0": 8}, gpus=8, cls="prod")]
    snap = snapshot(nodes("n", 1, {"h100": 8}), [queue("a", 16)], busy)
    result = estimate(snap, pending("j", "a", gpus=4))
    assert result.outcome == WAIT and result.reason == "capacity"
    assert "Waiting for GPUs" in result.message
    assert snap.pending == ()  # the snapshot itself is untouched
