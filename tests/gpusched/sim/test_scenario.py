"""The scenario loader (gpusched/sim/scenario.py): the example files and a file using every field
load as written; a file that cannot be read, or is not YAML or not a mapping, is named."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from gpusched.sim.scenario import (
    DEFAULT_HALF_LIFE,
    DEFAULT_RUNTIME,
    ScenarioError,
    TopologySpec,
    load_scenario,
    parse_scenario,
)
from tests.gpusched.sim.scenario_builders import SCENARIOS, valid_scenario


def test_every_example_scenario_loads() -> None:
    files = sorted(SCENARIOS.glob("*.yaml"))
    assert len(files) >= 5
    for path in files:
        scenario = load_scenario(path)
        assert scenario.name == path.stem
        assert scenario.source == str(path)
        assert scenario.jobs


def test_node_prefix_and_count_expand_to_numbered_nodes() -> None:
    scenario = load_scenario(SCENARIOS / "quota-borrow-reclaim.yaml")
    (cluster,) = scenario.clusters
    assert [node.name for node in cluster.nodes] == ["node-0", "node-1"]
    assert all(node.gpus == {"h100": 8} for node in cluster.nodes)


def test_quota_example_keeps_jobs_in_file_order_with_their_values() -> None:
    scenario = load_scenario(SCENARIOS / "quota-borrow-reclaim.yaml")
    assert [job.name for job in scenario.jobs] == [f"a{i:02}" for i in range(11)] + [
        "b00",
        "b01",
        "b02",
    ]
    a, b = scenario.queues
    assert (a.name, a.team, a.cohort, a.weight) == ("a", "a", "research", 1.0)
    assert a.quotas["h100"].nominal == 4
    assert a.quotas["h100"].borrowing_limit is None
    assert a.quotas["h100"].lending_limit is None
    assert b.quotas["h100"].nominal == 6
    assert scenario.until == 1000.0
    assert scenario.half_life == DEFAULT_HALF_LIFE
    assert scenario.default_runtime == DEFAULT_RUNTIME
    assert scenario.events == ()
    b00 = scenario.jobs[11]
    assert (b00.queue, b00.service_class, b00.submit_at) == ("b", "std", 100.0)
    assert (b00.workers, b00.gpus_per_worker, b00.flavors, b00.duration) == (1, 1, ("h100",), 1e5)


def test_class_defaults_and_explicit_values_load() -> None:
    scenario = load_scenario(SCENARIOS / "priority-and-protection.yaml")
    prod, std, low = scenario.service_classes
    assert (prod.priority, prod.preemptible, prod.can_borrow) == (1000, False, False)
    assert (std.min_runtime, std.grace_period, std.max_runtime) == (0.0, 0.0, None)
    assert std.price_multiplier == Decimal(1)
    assert low.min_runtime == 600.0


def test_mig_flavors_and_elastic_job_load() -> None:
    scenario = load_scenario(SCENARIOS / "mig-slices.yaml")
    assert [f.name for f in scenario.flavors] == ["h100", "h100-1g.10gb", "h100-3g.40gb"]
    assert scenario.flavors[1].resource == "nvidia.com/mig-1g.10gb"
    assert scenario.flavors[1].gpu_equivalent == pytest.approx(1 / 7, abs=1e-6)
    sliced = scenario.clusters[0].nodes[1]
    assert sliced.gpus == {"h100-1g.10gb": 14, "h100-3g.40gb": 4}
    notebooks = scenario.jobs[1]
    assert (notebooks.workers, notebooks.min_workers) == (14, 14)


def test_topology_levels_labels_and_topology_requests_load() -> None:
    scenario = load_scenario(SCENARIOS / "topology-elastic.yaml")
    assert scenario.topology_levels == ("rack",)
    assert scenario.clusters[0].nodes[2].labels == {"rack": "r2"}
    rackgang = scenario.jobs[1]
    assert rackgang.topology == TopologySpec(level="rack", required=True)
    assert scenario.jobs[0].topology is None
    elastic = scenario.jobs[2]
    assert (elastic.workers, elastic.min_workers) == (16, 2)


def test_backfill_example_keeps_estimates() -> None:
    scenario = load_scenario(SCENARIOS / "backfill-gang.yaml")
    assert [j.estimated_runtime for j in scenario.jobs] == [1000.0, 500.0, 300.0, 2000.0]
    assert scenario.until is None


def test_a_file_using_every_field_loads_with_its_values() -> None:
    scenario = parse_scenario(valid_scenario(), source="full.yaml")
    h100, a100, mig = scenario.flavors
    assert h100.price_per_hour == Decimal("4.00")
    assert a100.price_per_hour == Decimal("2.5")
    assert mig.price_per_hour is None
    assert mig.gpu_equivalent == 0.5
    east, west = scenario.clusters
    assert [n.name for n in east.nodes] == ["n1", "mig-0", "mig-1"]
    assert east.nodes[0].labels == {"block": "b1", "rack": "1"}
    assert west.nodes[0].gpus == {"a100": 8, "h100": 0}
    spot = scenario.service_classes[1]
    assert (spot.priority, spot.min_runtime, spot.grace_period) == (-5, 60.0, 30.0)
    assert (spot.max_runtime, spot.price_multiplier) == (7200.0, Decimal("0.5"))
    a, solo = scenario.queues
    assert (a.team, a.weight, a.quotas["h100"].lending_limit) == ("team-a", 2.0, 2)
    assert (solo.team, solo.cohort) == ("solo", None)
    # a borrowing limit without a cohort is accepted (it has no effect)
    assert solo.quotas["h100"].borrowing_limit == 3
    first, second = scenario.jobs
    assert first.name == "z-first"  # file order, not sorted
    assert first.flavors == ("h100", "a100")  # preference order kept
    assert first.duration is None
    assert first.topology == TopologySpec(level="rack", required=False)
    assert (first.min_workers, first.checkpoint_interval) == (1, 600.0)
    assert second.flavors == ("h100",)
    assert second.duration == 10.5
    assert [e.at for e in scenario.events] == [900.0, 500.0]  # file order
    assert scenario.events[0].job == "z-first"
    assert scenario.events[1].node == "mig-1"
    assert scenario.half_life == 3600.0


def test_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ScenarioError, match=r"nope\.yaml: cannot read the file"):
        load_scenario(missing)


def test_invalid_yaml_is_a_scenario_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\njobs: [\n  {name: a,\n")
    with pytest.raises(ScenarioError, match=r"broken\.yaml: invalid YAML"):
        load_scenario(broken)


def test_a_file_that_is_not_a_mapping_is_a_scenario_error(tmp_path: Path) -> None:
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(ScenarioError, match=r"list\.yaml: the file must hold a mapping"):
        load_scenario(listed)
