"""The Microsoft ITP importer against the real trace files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gpusched.sim.scenario import parse_scenario
from gpusched.sim.traces.common import TraceOptionError
from gpusched.sim.traces.itp import import_itp

Rows = Callable[[Path], list[dict[str, str]]]
DAY = 86_400


def test_cluster_files_become_tenants_with_quota_proportional_to_gpu_hours(
    itp_dir: Path, rows: Rows
) -> None:
    start, end = 20 * DAY, 21 * DAY
    result = import_itp(
        itp_dir, clusters=["cluster02", "cluster04", "cluster07"], start=start, end=end
    )
    demand = {}
    expected_jobs = 0
    for cluster in ("cluster02", "cluster04", "cluster07"):
        window = [
            r
            for r in rows(itp_dir / f"{cluster}.csv")
            if start <= float(r["submission_time"]) < end
        ]
        expected_jobs += len(window)
        demand[cluster] = sum(int(r["num_gpu"]) * float(r["duration"]) for r in window)
    assert result.stats.jobs == expected_jobs
    capacity = result.scenario["clusters"][0]["nodes"][0]["count"] * 8
    quotas = {q["name"]: q["quotas"]["gpu"]["nominal"] for q in result.scenario["queues"]}
    assert sum(quotas.values()) == capacity
    total = sum(demand.values())
    for cluster, nominal in quotas.items():
        assert abs(nominal - capacity * demand[cluster] / total) < 1
    assert {q["cohort"] for q in result.scenario["queues"]} == {"itp"}


def test_jobs_from_all_files_are_merged_in_submission_order_from_zero(itp_dir: Path) -> None:
    jobs = import_itp(itp_dir, max_jobs=500).scenario["jobs"]
    times = [j["submit_at"] for j in jobs]
    assert times == sorted(times)
    assert times[0] == 0
    assert len({j["queue"] for j in jobs}) > 3


def test_big_jobs_become_gangs_of_eight_gpu_workers(itp_dir: Path, rows: Rows) -> None:
    big = next(r for r in rows(itp_dir / "cluster01.csv") if r["num_gpu"] == "64")
    t = float(big["submission_time"])
    result = import_itp(itp_dir, clusters=["cluster01"], start=t, end=t + 1)
    job = next(j for j in result.scenario["jobs"] if j["name"] == f"cluster01-{big['job_id']}")
    assert (job["workers"], job["gpus_per_worker"]) == (8, 8)
    assert job["duration"] == int(big["duration"])


def test_auto_size_fits_the_largest_gang_and_keeps_offered_load_under_the_target(
    itp_dir: Path,
) -> None:
    scenario = import_itp(itp_dir, start=20 * DAY, end=22 * DAY, load=0.9).scenario
    jobs = scenario["jobs"]
    nodes = scenario["clusters"][0]["nodes"][0]["count"]
    largest = max(j["workers"] * j["gpus_per_worker"] for j in jobs)
    assert nodes * 8 >= largest
    span = max(j["submit_at"] for j in jobs)
    offered = (
        sum(
            j["workers"] * j["gpus_per_worker"] * min(j["duration"], span - j["submit_at"])
            for j in jobs
        )
        / span
    )
    assert offered <= 0.9 * nodes * 8 < offered + 8


def test_explicit_nodes_skip_jobs_larger_than_the_cluster(itp_dir: Path) -> None:
    result = import_itp(itp_dir, clusters=["cluster01"], nodes=2, max_jobs=200)
    assert result.scenario["clusters"][0]["nodes"][0]["count"] == 2
    assert result.stats.skipped["larger_than_cluster"] > 0
    assert all(j["workers"] * j["gpus_per_worker"] <= 16 for j in result.scenario["jobs"])


def test_reading_stops_once_max_jobs_are_selected(itp_dir: Path) -> None:
    result = import_itp(itp_dir, max_jobs=100)
    assert result.stats.jobs == 100
    assert result.stats.rows_read < 200  # of 69,351 rows in the ten files


def test_the_scenario_survives_yaml_and_the_scenario_loader(itp_dir: Path) -> None:
    result = import_itp(itp_dir, max_jobs=400, noise=0.2)
    loaded = parse_scenario(yaml.safe_load(yaml.safe_dump(result.scenario)), "itp.yaml")
    assert len(loaded.jobs) == 400
    assert [q.name for q in loaded.queues] == [f"cluster{i:02d}" for i in range(1, 11)]


def test_importing_twice_gives_the_same_scenario(itp_dir: Path) -> None:
    assert import_itp(itp_dir, max_jobs=300) == import_itp(itp_dir, max_jobs=300)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"clusters": ["cluster11"]}, "option 'clusters': unknown cluster 'cluster11'"),
        ({"clusters": []}, "option 'clusters': select at least one"),
        ({"nodes": 0}, "option 'nodes': must be an integer >= 1"),
        ({"load": 0}, "option 'load': must be a number > 0"),
        ({"cycle_interval": 0}, "option 'cycle_interval': must be a number > 0"),
    ],
)
def test_bad_options_are_rejected_naming_the_option(
    itp_dir: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(TraceOptionError, match=message):
        import_itp(itp_dir, **options)  # type: ignore[arg-type]
