"""The benchmark helpers that explain trace results and measure cycle cost."""

from __future__ import annotations

from typing import Any

from benchmarks.scale_sweep import measure
from benchmarks.trace_findings import longest_wait, preemption_facts, waits_by_size

SCENARIO: dict[str, Any] = {
    "flavors": [{"name": "gpu", "resource": "nvidia.com/gpu", "gpu_equivalent": 1.0}],
    "clusters": [{"name": "c", "nodes": [{"name": "n1", "gpus": {"gpu": 8}}]}],
    "service_classes": [{"name": "std", "priority": 100, "preemptible": True, "can_borrow": True}],
    "queues": [
        {"name": "a", "cohort": "co", "quotas": {"gpu": {"nominal": 2}}},
        {"name": "b", "cohort": "co", "quotas": {"gpu": {"nominal": 6}}},
    ],
    "jobs": [
        {"name": n, "queue": q, "class": "std", "submit_at": 0, "workers": 1,
         "gpus_per_worker": g, "flavor": "gpu", "duration": 5000}
        for n, q, g in (("a1", "a", 1), ("a2", "a", 1), ("b1", "b", 1), ("big", "b", 8))
    ],
}  # fmt: skip


def admit(t: float, job: str, gpus: int = 1) -> dict[str, Any]:
    return {"t": t, "type": "admit", "job": job, "flavor": "gpu", "placement": {"n1": gpus}}


def preempt(t: float, job: str, by: str, reason: str = "fair-share") -> dict[str, Any]:
    return {"t": t, "type": "preempt", "job": job, "by": by, "reason": reason}


def test_a_victim_stopped_while_its_own_queue_is_admitted_counts_as_a_swap() -> None:
    report = {
        "events": [
            admit(0, "a1"),
            preempt(300, "a1", by="b1"),
            admit(300, "a2"),  # queue a gets a GPU in the very cycle it loses one
            admit(300, "b1"),
            admit(400, "a1"),
            preempt(2000, "a1", by="b1", reason="reclaim"),
        ]
    }
    facts = preemption_facts(report, SCENARIO)
    assert facts["total"] == 2
    assert facts["reasons"] == {"fair-share": 1, "reclaim": 1}
    assert facts["swaps"] == 1
    assert facts["jobs_hit"] == 1 and facts["max_per_job"] == 2
    assert facts["young"] == 1  # 300 s after its start; the second stop came 1,600 s after
    assert round(facts["lost_gpu_hours"], 3) == round((300 + 1600) / 3600, 3)


def test_waits_are_split_by_gang_size_and_the_longest_wait_names_the_job() -> None:
    report = {
        "events": [admit(0, "a1"), admit(50, "b1"), admit(9000, "big", 8)],
        "jobs": [
            {"name": "a1", "submitted_at": 0, "started_at": 0},
            {"name": "b1", "submitted_at": 0, "started_at": 50},
            {"name": "big", "submitted_at": 0, "started_at": 9000},
            {"name": "a2", "submitted_at": 0, "started_at": None},
        ],
    }
    sizes = waits_by_size(report, {"a1": 1, "a2": 1, "b1": 1, "big": 8})
    assert sizes["1 GPU"] == (2, 25.0)
    assert sizes["2-8 GPUs"] == (1, 9000.0)
    worst = longest_wait(report, SCENARIO)
    assert worst["job"] == "big" and worst["wait"] == 9000
    assert worst["nominal"] == {"gpu": 6}


def test_scale_sweep_point_times_a_cycle_with_the_requested_pending_jobs() -> None:
    point = measure(nodes=20, pending=60, queues=4, cycles=2, policy="default", factor="nodes")
    assert point.nodes == 20 and point.queues == 4
    assert point.pending >= 60  # plus fill jobs the first cycle could not place
    assert point.running > 0
    assert 0 < point.median_ms <= point.max_ms
    assert 0 < point.explain_median_ms <= point.explain_max_ms


def test_lost_work_and_within_nominal_count_a_placements_gpus_once() -> None:
    """A report's placement gives GPUs per node (docs/SCENARIOS.md): an 8-GPU worker holds 8
    GPUs, not 8 x 8. ``big`` runs 1,000 s on 8 GPUs and is stopped: 8,000 GPU-s lost of the
    8,000 + 3 x 5,000 used; ``a2`` fits queue a's nominal 2 beside ``a1`` when submitted."""
    from benchmarks.preemption_quality import quality

    report = {
        "events": [
            admit(0, "a1"),
            admit(0, "b1"),
            admit(0, "big", 8),
            {"t": 1000, "type": "preempt", "job": "big", "by": "a2", "reason": "reclaim"},
            admit(1000, "a2"),
            {"t": 5000, "type": "finish", "job": "a1"},
            {"t": 5000, "type": "finish", "job": "b1"},
            {"t": 6000, "type": "finish", "job": "a2"},
        ],
        "jobs": [
            {"name": "a1", "submitted_at": 0, "started_at": 0, "finished_at": 5000},
            {"name": "b1", "submitted_at": 0, "started_at": 0, "finished_at": 5000},
            {"name": "a2", "submitted_at": 0, "started_at": 1000, "finished_at": 6000},
        ],
    }
    got = quality(report, SCENARIO)
    assert got["lost_gpu_h"] == 8000 / 3600
    assert round(got["lost_pct"], 6) == round(100 * 8000 / (8000 + 15000), 6)
    assert got["most_stops"] == 1
    # a1 and a2; not b1: at its submission queue b holds b1 and big, 9 GPUs of its nominal 6
    assert got["within_jobs"] == 2


def test_jct_by_queue_splits_the_difference_of_the_means_by_queue() -> None:
    """Queue a's two jobs take 100 s longer each under the first policy, b's one job 60 s
    less: the means differ by (200 - 60) / 3 s, of which a holds 200 / 3 and b -60 / 3."""
    from benchmarks.preemption_quality import jct_by_queue

    def report(a1: float, a2: float, b1: float) -> dict[str, object]:
        jobs = [("a1", "a", a1), ("a2", "a", a2), ("b1", "b", b1), ("late", "b", None)]
        return {"jobs": [{"name": n, "queue": q, "submitted_at": 10, "finished_at": end}
                         for n, q, end in jobs]}  # fmt: skip

    rows = jct_by_queue(report(210, 310, 50), report(110, 210, 110))
    assert [(r["queue"], r["jobs"]) for r in rows] == [("a", 2), ("b", 1)]
    assert (rows[0]["first"], rows[0]["second"]) == (250, 150)
    assert round(rows[0]["part"], 9) == round(200 / 3, 9)
    assert round(rows[1]["part"], 9) == round(-60 / 3, 9)
