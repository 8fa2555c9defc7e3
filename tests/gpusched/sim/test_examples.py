"""Each example in scenarios/ produces the outcome its README states."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpusched.sim.scenario import load_scenario
from gpusched.sim.simulate import simulate

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def run(name: str, policy: str = "default") -> dict[str, Any]:
    return simulate(load_scenario(SCENARIOS / name), policy)


def events(report: dict[str, Any], kind: str, job: str | None = None) -> list[dict[str, Any]]:
    return [
        e for e in report["events"] if e["type"] == kind and (job is None or e.get("job") == job)
    ]


def started(report: dict[str, Any], job: str) -> float | None:
    admits = events(report, "admit", job)
    return admits[0]["t"] if admits else None


def running_at_end(report: dict[str, Any]) -> set[str]:
    return {j["name"] for j in report["jobs"] if j["state"] == "running"}


def test_queue_a_borrows_idle_quota_and_b_reclaims_it_from_the_newest_jobs() -> None:
    report = run("quota-borrow-reclaim.yaml")
    for i in range(10):
        assert started(report, f"a{i:02d}") == i
    assert started(report, "a10") is None
    for b in ("b00", "b01", "b02"):
        assert started(report, b) == 100
    preempts = events(report, "preempt")
    assert [e["job"] for e in preempts] == ["a09", "a08", "a07"]
    assert all(e["reason"] == "reclaim" and e["t"] == 100 for e in preempts)
    end = running_at_end(report)
    assert {j for j in end if j.startswith("a")} == {f"a{i:02d}" for i in range(7)}
    assert {j for j in end if j.startswith("b")} == {"b00", "b01", "b02"}
    pending = {j["name"] for j in report["jobs"] if j["state"] == "pending"}
    assert pending == {"a07", "a08", "a09", "a10"}


def test_the_gang_gets_a_reservation_and_only_the_short_job_backfills() -> None:
    report = run("backfill-gang.yaml")
    assert started(report, "running") == 0
    reserve = events(report, "reserve", "gang")
    assert reserve and reserve[0]["start"] == 1000
    assert set(reserve[0]["nodes"]) == {"n1", "n2"}
    assert started(report, "gang") == 1000
    assert started(report, "short") == 2
    assert started(report, "long") == 1500


def test_under_fifo_the_small_jobs_wait_behind_the_gang() -> None:
    report = run("backfill-gang.yaml", "fifo")
    assert started(report, "gang") == 1000
    assert started(report, "short") == 1500
    assert started(report, "long") == 1500
    assert not events(report, "reserve")


def test_mig_slices_land_only_on_the_sliced_node() -> None:
    report = run("mig-slices.yaml")
    train = events(report, "admit", "train")[0]
    assert train["placement"] == {"whole": 8}
    for job in ("notebooks", "infer"):
        admit = events(report, "admit", job)[0]
        assert admit["t"] == 0 and set(admit["placement"]) == {"sliced"}
    assert started(report, "extra-slice") == 600
    for admit in events(report, "admit"):
        if admit["flavor"] != "h100":
            assert "whole" not in admit["placement"]


def test_production_preempts_by_priority_but_not_inside_min_runtime() -> None:
    report = run("priority-and-protection.yaml")
    assert started(report, "prod1") == 100
    first = events(report, "preempt", "std1")
    assert first and first[0]["t"] == 100 and first[0]["reason"] == "priority"
    assert first[0]["by"] == "prod1"
    prod2 = started(report, "prod2")
    assert prod2 is not None and 600 <= prod2 <= 610
    low = events(report, "preempt", "low1")
    assert low and low[0]["t"] >= 600 and low[0]["by"] == "prod2"
    assert not events(report, "preempt", "prod1") and not events(report, "preempt", "prod2")


def test_rack_gang_stays_in_one_rack_and_elastic_grows_then_shrinks() -> None:
    report = run("topology-elastic.yaml")
    rackgang = events(report, "admit", "rackgang")[0]
    assert set(rackgang["placement"]) == {"r2-n1", "r2-n2"}
    small = events(report, "admit", "small")[0]
    assert not set(small["placement"]) & set(rackgang["placement"])
    elastic = events(report, "admit", "elastic")[0]
    assert elastic["t"] == 3 and elastic["workers"] == 12
    scales = events(report, "scale", "elastic")
    assert (scales[0]["t"], scales[0]["workers"]) == (1000, 16)
    assert (scales[1]["t"], scales[1]["workers"]) == (2000, 8)
    assert scales[1]["by"] == "urgent"
    urgent = events(report, "admit", "urgent")[0]
    assert urgent["t"] == 2000
    assert set(urgent["placement"]) <= set(scales[0]["placement"]) - set(scales[1]["placement"])
    assert not events(report, "preempt", "rackgang")
    assert not events(report, "scale", "rackgang")


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_every_example_runs_under_every_policy(name: str) -> None:
    for policy in ("default", "fifo", "greedy"):
        report = run(name, policy)
        assert report["policy"] == policy
        assert report["summary"]["jobs"] == len(report["jobs"])


def _running_of(report: dict[str, Any], prefix: str) -> int:
    return sum(1 for j in running_at_end(report) if j.startswith(prefix))


def test_a_cohort_tree_borrows_within_the_department_then_from_org_and_is_reclaimed() -> None:
    report = run("cohort-tree-borrow-reclaim.yaml")
    for i in range(14):  # hep 6 + astro's idle 4 + physics' borrowing limit 4
        assert started(report, f"hep{i:02d}") == 0
    assert started(report, "hep14") is None and started(report, "hep15") is None
    for i in range(6):
        assert started(report, f"gen{i:02d}") == 100
    for i in range(4):
        assert started(report, f"astro{i:02d}") == 200
    preempts = events(report, "preempt")
    assert all(e["reason"] == "reclaim" and e["job"].startswith("hep") for e in preempts)
    assert [e["by"][:3] for e in preempts if e["t"] == 100] == ["gen", "gen"]
    assert [e["by"][:5] for e in preempts if e["t"] == 200] == ["astro"] * 4
    assert (_running_of(report, "hep"), _running_of(report, "astro")) == (8, 4)
    assert _running_of(report, "gen") == 6


def test_a_cohort_tree_lends_only_its_lending_limit_and_takes_it_back_by_fair_share() -> None:
    report = run("cohort-tree-lending.yaml")
    for i in range(10):
        assert started(report, f"gen{i:02d}") == 0
    for i in range(10, 14):
        assert started(report, f"gen{i:02d}") is None  # 14 GPUs idle: the lending limit binds
    for i in range(8):
        assert started(report, f"hep{i:02d}") == 100
    assert started(report, "hep08") == started(report, "hep09") == 200
    preempts = events(report, "preempt")
    assert [(e["t"], e["reason"], e["job"][:3], e["by"][:3]) for e in preempts] == [
        (200, "fair-share", "gen", "hep")
    ] * 2
    assert (_running_of(report, "gen"), _running_of(report, "hep")) == (8, 10)
