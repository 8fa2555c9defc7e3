"""EASY backfill, elastic growth and baseline policies (SCHEDULING.md section 4)."""

from __future__ import annotations

from queues.scheduling.cycle import run_cycle
from queues.scheduling.model import Snapshot
from tests.scheduling.engine_builders import nodes, pending, queue, running, snapshot


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
