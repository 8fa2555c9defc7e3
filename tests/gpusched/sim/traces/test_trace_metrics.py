"""Benchmark metrics computed from simulator reports (gpusched.sim.traces.metrics)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.sim.traces.metrics import (
    allocation_series,
    bucket_means,
    capacity_equivalents,
    jain_index,
    job_times,
    markdown_table,
    pending_series,
    percentile,
    quota_fairness,
    summary_row,
)

SCENARIO: dict[str, Any] = {
    "flavors": [
        {"name": "h100", "resource": "nvidia.com/gpu", "gpu_equivalent": 1.0},
        {"name": "h100-1g", "resource": "nvidia.com/mig-1g", "gpu_equivalent": 0.125},
    ],
    "clusters": [
        {
            "name": "c",
            "nodes": [
                {"name": "n1", "gpus": {"h100": 8}},
                {"name_prefix": "m", "count": 2, "gpus": {"h100-1g": 16}},
            ],
        }
    ],
    "service_classes": [
        {"name": "std", "priority": 100},
        {"name": "slow", "priority": 10, "grace_period": 50},
    ],
    "queues": [
        {"name": "a", "quotas": {"h100": {"nominal": 4}}},
        {"name": "b", "quotas": {"h100": {"nominal": 4}, "h100-1g": {"nominal": 32}}},
        {"name": "free", "quotas": {"h100": {"nominal": 0}}},
    ],
    "jobs": [
        {"name": "j1", "queue": "a", "class": "std"},
        {"name": "j2", "queue": "b", "class": "slow"},
        {"name": "j3", "queue": "b", "class": "std"},
        {"name": "j4", "queue": "a", "class": "std"},
    ],
}

REPORT: dict[str, Any] = {
    "policy": "default",
    "summary": {
        "makespan": 400.0,
        "gpu_utilization": 0.5,
        "preemptions": 1,
        "finished": 3,
        "engine_seconds": 0.25,
        "cycle_ms": {"max": 3.5},
    },
    "queues": {"a": {"gpu_hours": 2.0}, "b": {"gpu_hours": 4.0}},
    "jobs": [
        {"name": "j1", "submitted_at": 0, "started_at": 0, "finished_at": 100, "state": "finished"},
        {
            "name": "j2",
            "submitted_at": 0,
            "started_at": 10,
            "finished_at": 400,
            "state": "finished",
        },
        {
            "name": "j3",
            "submitted_at": 20,
            "started_at": 200,
            "finished_at": 300,
            "state": "finished",
        },
        {
            "name": "j4",
            "submitted_at": 50,
            "started_at": None,
            "finished_at": None,
            "state": "pending",
        },
    ],
    "events": [
        {"t": 0, "type": "admit", "job": "j1", "flavor": "h100", "placement": {"n1": 4}},
        {"t": 10, "type": "admit", "job": "j2", "flavor": "h100-1g", "placement": {"m0": 16}},
        {"t": 100, "type": "finish", "job": "j1"},
        {"t": 150, "type": "preempt", "job": "j2", "reason": "priority", "by": "j3"},
        {"t": 200, "type": "requeue", "job": "j2"},
        {"t": 200, "type": "admit", "job": "j3", "flavor": "h100", "placement": {"n1": 8}},
        {"t": 250, "type": "scale", "job": "j3", "placement": {"n1": 4}},
        {"t": 300, "type": "finish", "job": "j3"},
        {"t": 300, "type": "admit", "job": "j2", "flavor": "h100-1g", "placement": {"m0": 8}},
        {"t": 400, "type": "finish", "job": "j2"},
    ],
}


def test_jain_index_of_equal_shares_is_one() -> None:
    assert jain_index([3.0, 3.0, 3.0, 3.0]) == pytest.approx(1.0)


def test_jain_index_when_one_takes_everything_is_one_over_n() -> None:
    assert jain_index([5.0, 0.0, 0.0, 0.0, 0.0]) == pytest.approx(1 / 5)


def test_jain_index_rejects_empty_and_negative_values() -> None:
    with pytest.raises(ValueError, match="no values"):
        jain_index([])
    with pytest.raises(ValueError, match=">= 0"):
        jain_index([1.0, -1.0])


def test_percentiles_interpolate_between_order_statistics() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 100) == 4.0
    assert percentile(list(map(float, range(1, 101))), 95) == pytest.approx(95.05)
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_quota_fairness_compares_gpu_hours_to_nominal_in_gpu_equivalents() -> None:
    # a: 2 GPU-h / 4 = 0.5; b: 4 GPU-h / (4 + 32 x 0.125 = 8) = 0.5; "free" has no quota
    assert quota_fairness(REPORT, SCENARIO) == pytest.approx(1.0)
    skewed = {**REPORT, "queues": {"a": {"gpu_hours": 2.0}}}
    assert quota_fairness(skewed, SCENARIO) == pytest.approx(0.5)


def test_capacity_counts_expanded_nodes_in_gpu_equivalents() -> None:
    assert capacity_equivalents(SCENARIO) == pytest.approx(8 + 2 * 16 * 0.125)


def test_job_times_count_never_started_jobs_as_waiting_until_the_horizon() -> None:
    times = job_times(REPORT)
    assert times.jcts == [100.0, 400.0, 280.0]
    assert times.waits == [0.0, 10.0, 180.0]
    assert times.never_started == 1
    assert times.longest_wait == 350.0  # j4: submitted at 50, still waiting at 400


def test_allocation_follows_admit_scale_and_release_after_the_grace_period() -> None:
    series = allocation_series(REPORT, SCENARIO)
    assert series == [
        (0.0, 4.0),  # j1: 4 whole GPUs
        (10.0, 6.0),  # j2: 16 slices of 1/8
        (100.0, 2.0),
        (200.0, 8.0),  # j2 released at 150 + 50 s grace, j3 takes 8
        (250.0, 4.0),  # j3 scaled down to 4
        (300.0, 1.0),  # j3 finished, j2 back with 8 slices
        (400.0, 0.0),
    ]


def test_pending_counts_submitted_jobs_until_admitted_and_again_after_requeue() -> None:
    series = pending_series(REPORT)
    assert series == [
        (0.0, 1.0),  # j1 and j2 submitted, j1 admitted at once
        (10.0, 0.0),
        (20.0, 1.0),  # j3
        (50.0, 2.0),  # j4 (never starts)
        (200.0, 2.0),  # j2 requeued as j3 is admitted
        (300.0, 1.0),
    ]


def test_bucket_means_are_time_weighted() -> None:
    series = [(0.0, 0.0), (10.0, 4.0), (30.0, 0.0)]
    assert bucket_means(series, 40.0, 2) == [(0.0, 2.0), (20.0, 2.0)]
    assert bucket_means(series, 40.0, 4) == [(0.0, 0.0), (10.0, 4.0), (20.0, 4.0), (30.0, 0.0)]


def test_summary_row_and_markdown_table_show_the_benchmark_numbers() -> None:
    row = summary_row(REPORT, SCENARIO)
    assert row["mean_jct"] == pytest.approx(260.0)
    assert row["longest_wait"] == 350.0
    assert row["jain_quota"] == pytest.approx(1.0)
    table = markdown_table([row])
    header, _rule, line = table.splitlines()
    assert "p95 JCT s" in header and "Jain (GPU-h/quota)" in header
    assert line.startswith("| default | 4 | 3 | 260 |")
    assert "| 0.500 |" in line and "| 3.5 |" in line


def test_bucket_means_keep_the_whole_integral_whatever_the_bucket_edges() -> None:
    series = [(0.0, 1.0), (0.3, 2.0), (0.7, 0.5), (2.9, 3.0)]
    end = 3.7
    integral = 0.3 * 1 + 0.4 * 2 + 2.2 * 0.5 + 0.8 * 3
    for buckets in (1, 3, 7, 10, 37, 200):
        means = bucket_means(series, end, buckets)
        assert sum(m for _, m in means) * end / buckets == pytest.approx(integral)
