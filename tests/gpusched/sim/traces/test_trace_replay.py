"""Imported traces replayed through the simulator: the metrics agree with its report."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import simulate
from gpusched.sim.traces.alibaba import import_alibaba
from gpusched.sim.traces.itp import import_itp
from gpusched.sim.traces.metrics import (
    allocation_series,
    bucket_means,
    capacity_equivalents,
    job_times,
    pending_series,
    summary_row,
)


@pytest.mark.parametrize("policy", ["default", "fifo"])
def test_utilization_rebuilt_from_events_matches_the_simulators_own(
    itp_dir: Path, policy: str
) -> None:
    imported = import_itp(itp_dir, start=20 * 86_400, end=21 * 86_400, max_jobs=150)
    report = simulate(parse_scenario(imported.scenario, "itp"), policy)
    end = report["summary"]["makespan"]
    [(_, mean_alloc)] = bucket_means(allocation_series(report, imported.scenario), end, 1)
    utilization = mean_alloc / capacity_equivalents(imported.scenario)
    assert utilization == pytest.approx(report["summary"]["gpu_utilization"], abs=1e-4)
    assert pending_series(report)[-1][1] == 0  # every job ran


def test_mig_slices_count_as_gpu_equivalents_in_the_rebuilt_utilization(
    alibaba_dir: Path,
) -> None:
    imported = import_alibaba(
        alibaba_dir,
        share="mig",
        mig_fraction=0.5,
        node_fraction=0.01,
        start=10_000_000,
        max_jobs=300,
    )
    report = simulate(parse_scenario(imported.scenario, "openb"), "default")
    assert any(e.get("flavor", "").endswith("-1g") for e in report["events"])
    end = report["summary"]["makespan"]
    [(_, mean_alloc)] = bucket_means(allocation_series(report, imported.scenario), end, 1)
    utilization = mean_alloc / capacity_equivalents(imported.scenario)
    assert utilization == pytest.approx(report["summary"]["gpu_utilization"], abs=1e-4)
    row = summary_row(report, imported.scenario)
    assert row["finished"] == len(job_times(report).jcts)
    assert 0 < row["jain_quota"] <= 1
