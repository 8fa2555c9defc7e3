"""The Alibaba OpenB importer against the real trace files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpusched.sim.scenario import parse_scenario
from gpusched.sim.traces.alibaba import import_alibaba, slices_for
from gpusched.sim.traces.common import TraceOptionError, stable_hash

Rows = Callable[[Path], list[dict[str, str]]]
CLASS_OF_QOS = {"LS": "prod", "BE": "spot", "Burstable": "std", "Guaranteed": "std"}
ALL_MODELS = ["g2", "t4", "g3", "p100", "v100m32", "v100m16", "a10"]


def usable_models(scenario: dict[str, Any], job: dict[str, Any]) -> list[str]:
    """Every model, or for a prod job (which cannot borrow) those its tenant's quota holds."""
    if job["class"] != "prod":
        return ALL_MODELS
    quotas = next(q["quotas"] for q in scenario["queues"] if q["name"] == job["queue"])
    return [m for m in ALL_MODELS if quotas[m]["nominal"] >= job["gpus_per_worker"]]


def test_gpu_nodes_become_scenario_nodes_with_one_flavor_per_model(
    alibaba_dir: Path, rows: Rows
) -> None:
    node_rows = rows(alibaba_dir / "openb_node_list_gpu_node.csv")
    scenario = import_alibaba(alibaba_dir, max_jobs=10).scenario
    nodes = scenario["clusters"][0]["nodes"]
    assert [n["name"] for n in nodes] == [r["sn"] for r in node_rows]
    assert nodes[0]["gpus"] == {node_rows[0]["model"].lower(): int(node_rows[0]["gpu"])}
    assert [f["name"] for f in scenario["flavors"]] == ALL_MODELS
    capacity = Counter()
    for r in node_rows:
        capacity[r["model"].lower()] += int(r["gpu"])
    for flavor, total in capacity.items():
        quotas = [q["quotas"][flavor]["nominal"] for q in scenario["queues"]]
        assert sum(quotas) == total
        assert max(quotas) - min(quotas) <= 1


def test_gpu_pods_become_one_worker_jobs_with_their_qos_class(
    alibaba_dir: Path, rows: Rows
) -> None:
    pod_rows = {r["name"]: r for r in rows(alibaba_dir / "openb_pod_list_default.csv")}
    result = import_alibaba(alibaba_dir)
    jobs = result.scenario["jobs"]
    cpu_only = [r for r in pod_rows.values() if r["num_gpu"] == "0" and r["gpu_milli"] == "0"]
    assert result.stats.skipped["cpu_only"] == len(cpu_only)
    assert len(jobs) + sum(result.stats.skipped.values()) == len(pod_rows)
    for job in jobs:
        row = pod_rows[job["name"]]
        assert job["class"] == CLASS_OF_QOS[row["qos"]]
        assert job["workers"] == 1
        assert job["gpus_per_worker"] == max(1, int(row["num_gpu"]))
        assert job["queue"] == f"tenant-{stable_hash(row['name']) % 4}"
    classes = {c["name"]: c for c in result.scenario["service_classes"]}
    assert classes["prod"]["preemptible"] is False
    assert classes["spot"]["preemptible"] is True
    assert classes["prod"]["priority"] > classes["std"]["priority"] > classes["spot"]["priority"]


def test_duration_runs_from_scheduling_or_else_creation_to_deletion(
    alibaba_dir: Path, rows: Rows
) -> None:
    pod_rows = rows(alibaba_dir / "openb_pod_list_default.csv")
    scheduled = next(
        r
        for r in pod_rows
        if r["num_gpu"] != "0" and r["scheduled_time"] and r["scheduled_time"] != r["creation_time"]
    )
    pending = next(r for r in pod_rows if r["num_gpu"] != "0" and not r["scheduled_time"])
    jobs = {j["name"]: j for j in import_alibaba(alibaba_dir).scenario["jobs"]}
    assert jobs[scheduled["name"]]["duration"] == int(scheduled["deletion_time"]) - int(
        scheduled["scheduled_time"]
    )
    assert jobs[pending["name"]]["duration"] == int(pending["deletion_time"]) - int(
        pending["creation_time"]
    )
    assert jobs[pending["name"]]["submit_at"] == int(pending["creation_time"])


def test_gpu_spec_gives_an_ordered_flavor_list_and_no_spec_accepts_every_model(
    alibaba_dir: Path, rows: Rows
) -> None:
    pod_rows = {r["name"]: r for r in rows(alibaba_dir / "openb_pod_list_gpuspec33.csv")}
    scenario = import_alibaba(alibaba_dir, pod_list="gpuspec33").scenario
    seen = set()
    for job in scenario["jobs"]:
        spec = pod_rows[job["name"]]["gpu_spec"]
        accepted = job.get("flavors") or [job["flavor"]]
        if spec == "P100|V100M16|V100M32":
            assert accepted == ["p100", "v100m32", "v100m16"]
        elif spec == "T4":
            assert accepted == ["t4"]
        elif spec == "" and job["gpus_per_worker"] == 1:
            assert accepted == usable_models(scenario, job)
        else:
            continue
        seen.add(spec)
    assert seen == {"P100|V100M16|V100M32", "T4", ""}


def test_round_mode_gives_a_shared_pod_one_whole_gpu(alibaba_dir: Path, rows: Rows) -> None:
    shared = next(
        r
        for r in rows(alibaba_dir / "openb_pod_list_default.csv")
        if r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000
    )
    scenario = import_alibaba(alibaba_dir).scenario
    job = next(j for j in scenario["jobs"] if j["name"] == shared["name"])
    assert job["gpus_per_worker"] == 1
    assert job["flavors"] == usable_models(scenario, job)


def test_a_prod_pod_lists_only_flavors_its_tenants_quota_can_hold(alibaba_dir: Path) -> None:
    scenario = import_alibaba(alibaba_dir).scenario
    a10 = {q["name"]: q["quotas"]["a10"]["nominal"] for q in scenario["queues"]}
    assert sorted(a10.values()) == [0, 0, 1, 1]  # 2 A10 GPUs over 4 tenants
    prod = [j for j in scenario["jobs"] if j["class"] == "prod" and "flavors" in j]
    assert any(a10[j["queue"]] == 0 for j in prod)
    for job in prod:
        assert ("a10" in job["flavors"]) == (a10[job["queue"]] >= job["gpus_per_worker"])
    spot = [j for j in scenario["jobs"] if j["class"] == "spot" and j["gpus_per_worker"] == 1]
    assert all(j["flavors"] == ALL_MODELS for j in spot)


def test_a_small_node_fraction_keeps_an_even_share_of_each_models_nodes(
    alibaba_dir: Path, rows: Rows
) -> None:
    node_rows = rows(alibaba_dir / "openb_node_list_gpu_node.csv")
    result = import_alibaba(alibaba_dir, node_fraction=0.1, max_jobs=300)
    nodes = result.scenario["clusters"][0]["nodes"]
    g2 = sorted(r["sn"] for r in node_rows if r["model"] == "G2")
    kept_g2 = [n["name"] for n in nodes if "g2" in n["gpus"]]
    assert len(kept_g2) == len(g2) // 10
    assert kept_g2[0] == g2[9] and kept_g2[1] == g2[19]  # every tenth node in name order
    assert "a10" not in {f["name"] for f in result.scenario["flavors"]}  # 2 nodes x 0.1 < 1


def test_mig_mode_slices_a_fraction_of_nodes_and_gives_shared_pods_enough_slices(
    alibaba_dir: Path, rows: Rows
) -> None:
    pod_rows = {r["name"]: r for r in rows(alibaba_dir / "openb_pod_list_default.csv")}
    node_rows = rows(alibaba_dir / "openb_node_list_gpu_node.csv")
    scenario = import_alibaba(alibaba_dir, share="mig", mig_fraction=0.5).scenario
    nodes = scenario["clusters"][0]["nodes"]
    sliced = [n for n in nodes if any(f.endswith("-1g") for f in n["gpus"])]
    g2_nodes = sum(1 for r in node_rows if r["model"] == "G2")
    assert sum(1 for n in sliced if "g2-1g" in n["gpus"]) == g2_nodes // 2
    gpus_of = {r["sn"]: int(r["gpu"]) for r in node_rows}
    assert all(sum(n["gpus"].values()) == 7 * gpus_of[n["name"]] for n in sliced)
    slice_flavor = next(f for f in scenario["flavors"] if f["name"] == "g2-1g")
    assert slice_flavor["gpu_equivalent"] == pytest.approx(1 / 7, abs=1e-6)
    for job in scenario["jobs"]:
        row = pod_rows[job["name"]]
        accepted = job.get("flavors") or [job["flavor"]]
        if int(row["gpu_milli"]) < 1000:
            assert all(f.endswith("-1g") for f in accepted)
            assert job["gpus_per_worker"] == slices_for(int(row["gpu_milli"]))
        else:
            assert not any(f.endswith("-1g") for f in accepted)
    assert slices_for(460) == 4 and slices_for(500) == 4 and slices_for(1000 / 7) == 1


def test_multigpu50_takes_times_from_the_default_list_or_a_donor(
    alibaba_dir: Path, rows: Rows
) -> None:
    default_rows = {r["name"]: r for r in rows(alibaba_dir / "openb_pod_list_default.csv")}
    extra = [
        r
        for r in rows(alibaba_dir / "openb_pod_list_multigpu50.csv")
        if r["name"] not in default_rows
    ]
    result = import_alibaba(alibaba_dir, pod_list="multigpu50")
    assert result.stats.adjusted["times_from_donor"] == len(extra)
    jobs = {j["name"]: j for j in result.scenario["jobs"]}
    assert all(r["name"] in jobs for r in extra)
    assert all(jobs[r["name"]]["gpus_per_worker"] == int(r["num_gpu"]) for r in extra)
    first = default_rows["openb-pod-0000"]
    assert jobs["openb-pod-0000"]["duration"] == int(first["deletion_time"]) - int(
        first["scheduled_time"]
    )


def test_window_and_max_jobs_keep_the_earliest_pods_created_in_the_window(
    alibaba_dir: Path, rows: Rows
) -> None:
    expected = [
        r["name"]
        for r in rows(alibaba_dir / "openb_pod_list_default.csv")
        if 1_000_000 <= int(r["creation_time"]) < 5_000_000 and r["num_gpu"] != "0"
    ]
    result = import_alibaba(alibaba_dir, start=1_000_000, end=5_000_000, max_jobs=50)
    assert [j["name"] for j in result.scenario["jobs"]] == expected[:50]
    assert result.scenario["jobs"][0]["submit_at"] == 0


@pytest.mark.parametrize("share", ["round", "mig"])
def test_the_scenario_survives_yaml_and_the_scenario_loader(alibaba_dir: Path, share: str) -> None:
    result = import_alibaba(alibaba_dir, pod_list="gpuspec33", share=share, max_jobs=500)
    loaded = parse_scenario(yaml.safe_load(yaml.safe_dump(result.scenario)), "alibaba.yaml")
    assert len(loaded.jobs) == 500
    assert len(loaded.clusters[0].nodes) == 1213
    assert len(loaded.queues) == 4


def test_importing_twice_gives_the_same_scenario(alibaba_dir: Path) -> None:
    assert import_alibaba(alibaba_dir, share="mig", max_jobs=200) == import_alibaba(
        alibaba_dir, share="mig", max_jobs=200
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pod_list": "huge"}, "option 'pod_list': must be one of default, multigpu50"),
        ({"share": "half"}, "option 'share': must be one of round, mig"),
        ({"mig_fraction": 1.5}, "option 'mig_fraction': must be a number between 0 and 1"),
        ({"tenants": 0}, "option 'tenants': must be an integer >= 1"),
        ({"node_fraction": 0}, "option 'node_fraction': must be greater than 0"),
        ({"start": -1}, "option 'start': must be >= 0"),
    ],
)
def test_bad_options_are_rejected_naming_the_option(
    alibaba_dir: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(TraceOptionError, match=message):
        import_alibaba(alibaba_dir, **options)  # type: ignore[arg-type]
