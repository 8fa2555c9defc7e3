"""Rule 1's "cheaper to wait for" (docs/SCHEDULING.md section 4): fair sharing and priority do
not stop a job whose estimated end, times the preemptor's GPUs, comes sooner than the work the
stop would throw away (the time since its last checkpoint times its GPUs); a reclaim still does,
and so does any rule once the job has outrun its estimate."""

from __future__ import annotations

from gpusched.check.checker import check_report
from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import CycleResult
from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import simulate
from tests.gpusched.engine_builders import nodes, pending, queue, running, snapshot


def stopped(result: CycleResult) -> dict[str, str]:
    return {s.job: s.reason for s in result.stops}


def _priority_case(now: float, *, estimate: float | None = 10_000, gpus: int = 8,
                   checkpoint: float | None = None) -> CycleResult:  # fmt: skip
    """A low-priority 8-GPU job started at 0 (estimated to run ``estimate`` s) and a
    high-priority job of ``gpus`` GPUs of the same queue asking for its node."""
    old = running("old", "q", {"n0": 8}, gpus=8, cls="low", started_at=0,
                  estimated_runtime=estimate, checkpoint_interval=checkpoint)  # fmt: skip
    jobs = [pending("p", "q", gpus=gpus, cls="high")]
    return run_cycle(snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 8)], [old], jobs, now=now))


def test_a_priority_stop_waits_for_a_job_that_ends_before_its_loss() -> None:
    assert not _priority_case(now=9_000).stops  # 1,000 s left x 8 GPUs < 9,000 s x 8 GPUs
    assert stopped(_priority_case(now=3_000)) == {"old": "priority"}  # 7,000 s left > 3,000 s


def test_the_preemptors_size_weighs_the_wait() -> None:
    # 6,000 s left: a 1-GPU preemptor waits (6,000 x 1 < 4,000 x 8), an 8-GPU one does not
    assert not _priority_case(now=4_000, gpus=1).stops
    assert stopped(_priority_case(now=4_000, gpus=8)) == {"old": "priority"}


def test_no_estimate_an_outrun_estimate_or_a_recent_checkpoint_protect_nothing() -> None:
    assert stopped(_priority_case(now=9_000, estimate=None)) == {"old": "priority"}
    assert stopped(_priority_case(now=12_000)) == {"old": "priority"}  # past its end
    # a checkpoint every 5,000 s: at 9,000 s it loses 4,000 s, more than its 1,000 s left
    assert not _priority_case(now=9_000, checkpoint=5_000).stops
    # at 9,600 s with a checkpoint every 3,200 s it loses 0 s: nothing to protect
    assert stopped(_priority_case(now=9_600, checkpoint=3_200)) == {"old": "priority"}


def _cohort_case(now: float, reclaim: bool) -> CycleResult:
    """Queue a borrows: its 8-GPU job (estimated 10,000 s) holds a's nominal 4 and 4 more of
    the cohort's pool, which is then full. Queue b asks for 4 GPUs within its nominal (a
    reclaim) or, beside an idle third queue and its own 4-GPU job, for 2 GPUs more (fair
    sharing: b would borrow 2 of the 12, a borrows 4)."""
    names = ("a", "b") if reclaim else ("a", "b", "idle")
    queues = [queue(q, 4, cohort="c") for q in names]
    busy = [running("big", "a", {"n0": 8}, gpus=8, started_at=0, estimated_runtime=10_000)]
    if not reclaim:
        busy.append(running("b-own", "b", {"n1": 4}, gpus=4, started_at=0))
    new = pending("new", "b", gpus=4 if reclaim else 2)
    return run_cycle(snapshot(nodes("n", 2, {"h100": 8}), queues, busy, [new], now=now))


def test_fair_sharing_waits_but_a_reclaim_does_not() -> None:
    # 1,000 s left x 2 GPUs < 9,000 s x 8: b's borrowing job waits for the end of a's
    assert not _cohort_case(now=9_000, reclaim=False).stops
    # 9,000 s left x 2 GPUs > 1,000 s x 8: it stops it
    assert stopped(_cohort_case(now=1_000, reclaim=False)) == {"big": "fair-share"}
    # b's guaranteed quota comes back at once, however near a's end
    assert stopped(_cohort_case(now=9_000, reclaim=True)) == {"big": "reclaim"}


def test_the_simulated_stop_is_let_finish_and_the_checker_agrees() -> None:
    """Replayed: the high-priority job waits the last 1,000 s of the old one, then starts."""
    scenario = parse_scenario({
        "name": "near-end", "cycle_interval": 10,
        "flavors": [{"name": "h100", "resource": "nvidia.com/gpu"}],
        "clusters": [{"name": "c", "nodes": [{"name": "n0", "gpus": {"h100": 8}}]}],
        "service_classes": [{"name": "low", "priority": 10}, {"name": "high", "priority": 100}],
        "queues": [{"name": "q", "quotas": {"h100": {"nominal": 8}}}],
        "jobs": [
            {"name": "old", "queue": "q", "class": "low", "submit_at": 0, "workers": 1,
             "gpus_per_worker": 8, "flavor": "h100", "duration": 10_000,
             "estimated_runtime": 10_000},
            {"name": "p", "queue": "q", "class": "high", "submit_at": 9_000, "workers": 1,
             "gpus_per_worker": 8, "flavor": "h100", "duration": 100},
        ],
    }, source="near-end")  # fmt: skip
    report = simulate(scenario, "default")
    assert not [e for e in report["events"] if e["type"] == "preempt"]
    started = {j["name"]: j["started_at"] for j in report["jobs"]}
    assert started["p"] == 10_000
    assert check_report(scenario, report) == []
