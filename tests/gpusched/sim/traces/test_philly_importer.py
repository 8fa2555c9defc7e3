"""The Philly importer against the real per-VC trace files."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gpusched.sim.scenario import parse_scenario
from gpusched.sim.traces.common import TraceOptionError, gang_shape
from gpusched.sim.traces.philly import import_philly

Rows = Callable[[Path], list[dict[str, str]]]


def test_selected_vcs_become_queues_in_one_cohort_with_quota_nodes_times_eight(
    philly_dir: Path, rows: Rows
) -> None:
    quota_rows = rows(philly_dir / "vc_quota_nodes.csv")
    result = import_philly(philly_dir, max_jobs=20)
    queues = result.scenario["queues"]
    assert [q["name"] for q in queues] == [r["vc"] for r in quota_rows]
    for queue, row in zip(queues, quota_rows, strict=True):
        assert queue["team"] == row["vc"]
        assert queue["cohort"] == "philly"
        assert queue["quotas"] == {"gpu": {"nominal": int(row["node num"]) * 8}}
    nodes = result.scenario["clusters"][0]["nodes"]
    assert nodes == [
        {
            "name_prefix": "n",
            "count": sum(int(r["node num"]) for r in quota_rows),
            "gpus": {"gpu": 8},
        }
    ]


def test_jobs_of_a_vc_without_quota_are_skipped_and_counted(philly_dir: Path, rows: Rows) -> None:
    quota_vcs = {r["vc"] for r in rows(philly_dir / "vc_quota_nodes.csv")}
    orphans = [r for r in rows(philly_dir / "jobs.csv") if r["vc"] not in quota_vcs]
    assert orphans, "the trace has a VC without a quota (51b7ef)"
    result = import_philly(philly_dir, end=3600)
    assert result.stats.skipped["vc_without_quota"] == len(orphans)
    assert not {j["queue"] for j in result.scenario["jobs"]} - quota_vcs


def test_window_selects_a_vcs_jobs_by_submit_time_and_starts_the_scenario_at_zero(
    philly_dir: Path, rows: Rows
) -> None:
    expected = [
        r
        for r in rows(philly_dir / "jobs.csv")
        if r["vc"] == "0e4a51" and 1000 <= float(r["submit_time"]) < 50_000
    ]
    result = import_philly(philly_dir, vcs=["0e4a51"], start=1000, end=50_000)
    jobs = result.scenario["jobs"]
    assert [j["name"] for j in jobs] == [f"0e4a51-{r['job_idx_in_vc']}" for r in expected]
    first = float(expected[0]["submit_time"])
    assert [j["submit_at"] for j in jobs] == [float(r["submit_time"]) - first for r in expected]
    assert [j["duration"] for j in jobs] == [round(float(r["duration_s"])) for r in expected]
    assert all(j["estimated_runtime"] == j["duration"] for j in jobs)
    assert result.stats.jobs == len(expected)
    assert [q["name"] for q in result.scenario["queues"]] == ["0e4a51"]
    assert result.scenario["clusters"][0]["nodes"][0]["count"] == 32


def test_multi_node_jobs_become_gangs_of_whole_nodes(philly_dir: Path, rows: Rows) -> None:
    big = next(r for r in rows(philly_dir / "jobs.csv") if r["num_gpus"] == "16")
    t = float(big["submit_time"])
    result = import_philly(philly_dir, vcs=[big["vc"]], start=t, end=t + 1)
    job = next(
        j for j in result.scenario["jobs"] if j["name"] == f"{big['vc']}-{big['job_idx_in_vc']}"
    )
    assert (job["workers"], job["gpus_per_worker"]) == (2, 8)


@pytest.mark.parametrize(
    ("gpus", "shape"),
    [
        (1, (1, 1)),
        (4, (1, 4)),
        (7, (1, 7)),
        (8, (1, 8)),
        (16, (2, 8)),
        (48, (6, 8)),
        (12, (2, 6)),
        (20, (4, 5)),
        (24, (3, 8)),
        (11, (11, 1)),
    ],
)
def test_gang_shape_keeps_the_gpu_total_and_each_worker_on_one_node(
    gpus: int, shape: tuple[int, int]
) -> None:
    assert gang_shape(gpus) == shape


def test_quota_scale_shrinks_every_vc_quota_and_the_cluster_with_them(philly_dir: Path) -> None:
    result = import_philly(philly_dir, vcs=["6214e9", "ed69ec"], quota_scale=0.1, max_jobs=10)
    quotas = [q["quotas"]["gpu"]["nominal"] for q in result.scenario["queues"]]
    assert quotas == [6 * 8, 1 * 8]  # 64 nodes -> 6; 8 nodes -> 0.8 -> 1
    assert result.scenario["clusters"][0]["nodes"][0]["count"] == 7
    assert result.scenario["name"].endswith("-q0.1")


def test_vc_offset_shifts_each_vcs_clock_by_its_index(philly_dir: Path) -> None:
    plain = import_philly(philly_dir, vcs=["ed69ec", "103959"], max_jobs=2000)
    shifted = import_philly(philly_dir, vcs=["ed69ec", "103959"], vc_offset=10_000, max_jobs=2000)
    by_name = {j["name"]: j["submit_at"] for j in plain.scenario["jobs"]}
    common = [j for j in shifted.scenario["jobs"] if j["name"] in by_name]
    assert common
    for job in common:
        gap = 10_000 if job["queue"] == "103959" else 0
        assert job["submit_at"] == by_name[job["name"]] + gap


def test_max_jobs_keeps_the_earliest_jobs_across_vcs(philly_dir: Path) -> None:
    everything = import_philly(philly_dir, end=200_000).scenario["jobs"]
    first = import_philly(philly_dir, end=200_000, max_jobs=25)
    assert [j["name"] for j in first.scenario["jobs"]] == [j["name"] for j in everything[:25]]
    assert first.stats.skipped["over_max_jobs"] == len(everything) - 25


def test_noisy_estimates_are_log_normal_seeded_and_independent_of_the_selection(
    philly_dir: Path,
) -> None:
    noisy = import_philly(philly_dir, vcs=["6214e9"], max_jobs=400, noise=0.5, seed=7)
    again = import_philly(philly_dir, vcs=["6214e9"], max_jobs=400, noise=0.5, seed=7)
    fewer = import_philly(philly_dir, vcs=["6214e9"], max_jobs=100, noise=0.5, seed=7)
    other_seed = import_philly(philly_dir, vcs=["6214e9"], max_jobs=400, noise=0.5, seed=8)
    assert noisy.scenario == again.scenario
    assert fewer.scenario["jobs"] == noisy.scenario["jobs"][:100]
    assert other_seed.scenario["jobs"] != noisy.scenario["jobs"]
    logs = [math.log(j["estimated_runtime"] / j["duration"]) for j in noisy.scenario["jobs"]]
    assert abs(statistics.mean(logs)) < 0.1
    assert 0.4 < statistics.stdev(logs) < 0.6


def test_importing_twice_gives_the_same_scenario(philly_dir: Path) -> None:
    assert import_philly(philly_dir, max_jobs=300) == import_philly(philly_dir, max_jobs=300)


def test_the_scenario_survives_yaml_and_the_scenario_loader(philly_dir: Path) -> None:
    result = import_philly(philly_dir, max_jobs=300, vc_offset=600, noise=0.3)
    loaded = parse_scenario(yaml.safe_load(yaml.safe_dump(result.scenario)), "philly.yaml")
    assert len(loaded.jobs) == 300
    assert {q.cohort for q in loaded.queues} == {"philly"}
    assert sum(n.gpus["gpu"] for n in loaded.clusters[0].nodes) == 352 * 8
    assert loaded.service_classes[0].preemptible and loaded.service_classes[0].can_borrow


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"vcs": ["nope"]}, "option 'vcs': 'nope' has no quota"),
        ({"vcs": ["51b7ef"]}, "option 'vcs': '51b7ef' has no quota"),
        ({"max_jobs": 0}, "option 'max_jobs': must be an integer >= 1"),
        ({"start": 100, "end": 50}, "option 'end': must be greater than 'start'"),
        ({"noise": -1}, "option 'noise': must be a number >= 0"),
        ({"vc_offset": -5}, "option 'vc_offset'"),
        ({"quota_scale": 0}, "option 'quota_scale': must be a number > 0"),
    ],
)
def test_bad_options_are_rejected_naming_the_option(
    philly_dir: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(TraceOptionError, match=message):
        import_philly(philly_dir, **options)  # type: ignore[arg-type]


def test_a_missing_trace_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceOptionError, match="trace file not found"):
        import_philly(tmp_path)
