"""The scenario loader: the example files load as written, and every mistake is named precisely."""

from __future__ import annotations

import copy
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpusched.sim.scenario import (
    DEFAULT_HALF_LIFE,
    DEFAULT_RUNTIME,
    ScenarioError,
    TopologySpec,
    load_scenario,
    parse_scenario,
)

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


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


# --------------------------------------------------------------------------- a full valid file


def _valid() -> dict[str, Any]:
    return {
        "name": "full",
        "cycle_interval": 10,
        "until": 5000,
        "half_life": 3600,
        "flavors": [
            {"name": "h100", "resource": "nvidia.com/gpu", "price_per_hour": "4.00"},
            {"name": "a100", "resource": "nvidia.com/gpu", "price_per_hour": 2.5},
            {"name": "h100-1g.10gb", "resource": "nvidia.com/mig-1g.10gb", "gpu_equivalent": 0.5},
        ],
        "topology_levels": ["block", "rack"],
        "clusters": [
            {
                "name": "east",
                "nodes": [
                    {"name": "n1", "gpus": {"h100": 8}, "labels": {"block": "b1", "rack": 1}},
                    {"name_prefix": "mig-", "count": 2, "gpus": {"h100-1g.10gb": 14}},
                ],
            },
            {"name": "west", "nodes": [{"name": "w1", "gpus": {"a100": 8, "h100": 0}}]},
        ],
        "service_classes": [
            {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
            {
                "name": "spot",
                "priority": -5,
                "min_runtime": 60,
                "grace_period": 30,
                "max_runtime": 7200,
                "price_multiplier": "0.5",
            },
        ],
        "queues": [
            {
                "name": "a",
                "team": "team-a",
                "cohort": "research",
                "weight": 2,
                "quotas": {
                    "h100": {"nominal": 8, "borrowing_limit": None, "lending_limit": 2},
                    "a100": {"nominal": 0, "borrowing_limit": 4},
                },
            },
            {"name": "solo", "quotas": {"h100": {"nominal": 2, "borrowing_limit": 3}}},
        ],
        "jobs": [
            {
                "name": "z-first",
                "queue": "a",
                "class": "spot",
                "submit_at": 50,
                "workers": 2,
                "gpus_per_worker": 4,
                "flavors": ["h100", "a100"],
                "duration": None,
                "estimated_runtime": 4000,
                "min_workers": 1,
                "topology": {"preferred": "rack"},
                "checkpoint_interval": 600,
            },
            {
                "name": "a-second",
                "queue": "solo",
                "class": "prod",
                "submit_at": 0,
                "workers": 1,
                "gpus_per_worker": 1,
                "flavor": "h100",
                "duration": 10.5,
            },
        ],
        "events": [
            {"at": 900, "job": "z-first", "action": "cancel"},
            {"at": 500, "node": "mig-1", "action": "fail"},
        ],
    }


def test_a_file_using_every_field_loads_with_its_values() -> None:
    scenario = parse_scenario(_valid(), source="full.yaml")
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


# --------------------------------------------------------------------------- mistakes

Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    """An edit that sets one value, addressed like ``jobs.0.workers``."""

    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return edit


def _drop(path: str) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        del target[last]

    return edit


def _append(key: str, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        data[key].append(value)

    return edit


J0 = "x.yaml: jobs[0] (z-first): "
J1 = "x.yaml: jobs[1] (a-second): "
N0 = "x.yaml: clusters[0] (east) > nodes[0] (n1): "
N1 = "x.yaml: clusters[0] (east) > nodes[1] (mig-): "
F0 = "x.yaml: flavors[0] (h100): "
F2 = "x.yaml: flavors[2] (h100-1g.10gb): "
QA = "x.yaml: queues[0] (a): "
C0 = "x.yaml: service_classes[0] (prod): "
C1 = "x.yaml: service_classes[1] (spot): "

BAD_INPUTS: list[tuple[str, Edit, str]] = [
    # top level
    (
        "unknown top-level key",
        _set("cycle_intervall", 5),
        "x.yaml: unknown field 'cycle_intervall' (did you mean 'cycle_interval'?)",
    ),
    ("missing name", _drop("name"), "x.yaml: field 'name': is required"),
    (
        "cycle interval zero",
        _set("cycle_interval", 0),
        "x.yaml: field 'cycle_interval': must be a number > 0, got 0",
    ),
    (
        "cycle interval text",
        _set("cycle_interval", "10s"),
        "x.yaml: field 'cycle_interval': must be a number > 0, got '10s'",
    ),
    ("until negative", _set("until", -1), "x.yaml: field 'until': must be a number > 0, got -1"),
    ("flavors missing", _drop("flavors"), "x.yaml: field 'flavors': is required"),
    ("flavors empty", _set("flavors", []), "x.yaml: field 'flavors': must not be empty"),
    (
        "jobs not a list",
        _set("jobs", {"a": 1}),
        "x.yaml: field 'jobs': must be a list, got a mapping",
    ),
    (
        "topology level repeated",
        _set("topology_levels", ["rack", "rack"]),
        "x.yaml: field 'topology_levels': duplicate level",
    ),
    # flavors
    (
        "flavor without resource",
        _drop("flavors.0.resource"),
        F0 + "field 'resource': is required",
    ),
    (
        "gpu equivalent above one",
        _set("flavors.2.gpu_equivalent", 1.5),
        F2 + "field 'gpu_equivalent': must be a number in (0, 1], got 1.5",
    ),
    (
        "gpu equivalent zero",
        _set("flavors.2.gpu_equivalent", 0),
        F2 + "field 'gpu_equivalent': must be a number > 0, got 0",
    ),
    (
        "price not a number",
        _set("flavors.0.price_per_hour", "four"),
        F0 + "field 'price_per_hour': must be a decimal number (string or number) >= 0, got 'four'",
    ),
    (
        "price negative",
        _set("flavors.0.price_per_hour", -1),
        F0 + "field 'price_per_hour': must be a decimal number (string or number) >= 0, got -1",
    ),
    (
        "duplicate flavor",
        _append("flavors", {"name": "a100", "resource": "r"}),
        "x.yaml: flavors[3] (a100): field 'name': duplicate flavor name 'a100' "
        "(first at flavors[1])",
    ),
    (
        "flavor entry not a mapping",
        _append("flavors", "h200"),
        "x.yaml: flavors[3]: must be a mapping, got 'h200'",
    ),
    # clusters and nodes
    (
        "duplicate cluster",
        _set("clusters.1.name", "east"),
        "x.yaml: clusters[1] (east): field 'name': duplicate cluster name 'east' "
        "(first at clusters[0])",
    ),
    (
        "node name repeated across clusters",
        _set("clusters.1.nodes.0.name", "mig-0"),
        "x.yaml: clusters[1] (west): node 'mig-0': field 'name': duplicate node name "
        "(also in cluster 'east')",
    ),
    (
        "negative gpu count",
        _set("clusters.0.nodes.0.gpus.h100", -8),
        N0 + "field 'gpus.h100': must be an integer >= 0, got -8",
    ),
    (
        "fractional gpu count",
        _set("clusters.0.nodes.0.gpus.h100", 7.5),
        N0 + "field 'gpus.h100': must be an integer >= 0, got 7.5",
    ),
    (
        "boolean gpu count",
        _set("clusters.0.nodes.0.gpus.h100", True),
        N0 + "field 'gpus.h100': must be an integer >= 0, got boolean True",
    ),
    (
        "node gpus of unknown flavor",
        _set("clusters.0.nodes.0.gpus.b200", 8),
        N0 + "field 'gpus.b200': unknown flavor 'b200'",
    ),
    (
        "node with name and prefix",
        _set("clusters.0.nodes.0.name_prefix", "n-"),
        N0 + "give exactly one of 'name' or 'name_prefix' (with 'count')",
    ),
    (
        "node with neither name nor prefix",
        _drop("clusters.0.nodes.0.name"),
        "x.yaml: clusters[0] (east) > nodes[0]: give exactly one of 'name' or 'name_prefix' "
        "(with 'count')",
    ),
    (
        "prefix without count",
        _drop("clusters.0.nodes.1.count"),
        N1 + "field 'count': is required",
    ),
    (
        "count zero",
        _set("clusters.0.nodes.1.count", 0),
        N1 + "field 'count': must be an integer >= 1, got 0",
    ),
    (
        "count with a plain name",
        _set("clusters.0.nodes.0.count", 2),
        N0 + "field 'count': only allowed with 'name_prefix'",
    ),
    (
        "node label not a string",
        _set("clusters.0.nodes.0.labels.rack", ["r1"]),
        N0 + "field 'labels.rack': must be a string, got a list",
    ),
    (
        "unknown node key",
        _set("clusters.0.nodes.0.gpu", {}),
        N0 + "unknown field 'gpu' (did you mean 'gpus'?)",
    ),
    (
        "cluster without nodes",
        _set("clusters.1.nodes", []),
        "x.yaml: clusters[1] (west): field 'nodes': must not be empty",
    ),
    # service classes
    (
        "priority missing",
        _drop("service_classes.0.priority"),
        C0 + "field 'priority': is required",
    ),
    (
        "priority as text",
        _set("service_classes.0.priority", "high"),
        C0 + "field 'priority': must be an integer, got 'high'",
    ),
    (
        "preemptible as text",
        _set("service_classes.0.preemptible", "no"),
        C0 + "field 'preemptible': must be true or false, got 'no'",
    ),
    (
        "preemptible as zero",
        _set("service_classes.0.preemptible", 0),
        C0 + "field 'preemptible': must be true or false, got 0",
    ),
    (
        "negative min runtime",
        _set("service_classes.1.min_runtime", -1),
        C1 + "field 'min_runtime': must be a number >= 0, got -1",
    ),
    (
        "zero max runtime",
        _set("service_classes.1.max_runtime", 0),
        C1 + "field 'max_runtime': must be a number > 0, got 0",
    ),
    (
        "duplicate class",
        _set("service_classes.1.name", "prod"),
        "x.yaml: service_classes[1] (prod): field 'name': duplicate service class name 'prod'",
    ),
    # queues
    (
        "duplicate queue",
        _set("queues.1.name", "a"),
        "x.yaml: queues[1] (a): field 'name': duplicate queue name 'a' (first at queues[0])",
    ),
    (
        "weight zero",
        _set("queues.0.weight", 0),
        QA + "field 'weight': must be a number > 0, got 0",
    ),
    (
        "weight negative",
        _set("queues.0.weight", -2),
        QA + "field 'weight': must be a number > 0, got -2",
    ),
    (
        "quota of unknown flavor",
        _set("queues.0.quotas.b200", {"nominal": 1}),
        QA + "field 'quotas.b200': unknown flavor 'b200'",
    ),
    (
        "quota given as a bare number",
        _set("queues.0.quotas.h100", 8),
        QA + "field 'quotas.h100': must be a mapping "
        "{nominal: N, borrowing_limit: B, lending_limit: L}, got 8",
    ),
    (
        "nominal missing",
        _drop("queues.0.quotas.h100.nominal"),
        QA + "quota 'h100': field 'nominal': is required",
    ),
    (
        "nominal negative",
        _set("queues.0.quotas.h100.nominal", -1),
        QA + "quota 'h100': field 'nominal': must be an integer >= 0, got -1",
    ),
    (
        "nominal boolean",
        _set("queues.0.quotas.h100.nominal", True),
        QA + "quota 'h100': field 'nominal': must be an integer >= 0, got boolean True",
    ),
    (
        "borrowing limit fractional",
        _set("queues.0.quotas.a100.borrowing_limit", 1.5),
        QA + "quota 'a100': field 'borrowing_limit': must be an integer >= 0, got 1.5",
    ),
    (
        "lending above nominal",
        _set("queues.0.quotas.h100.lending_limit", 9),
        QA + "quota 'h100': field 'lending_limit': must be <= nominal (8), got 9",
    ),
    (
        "unknown quota key",
        _set("queues.0.quotas.h100.borrow", 1),
        QA + "quota 'h100': unknown field 'borrow'",
    ),
    # jobs
    (
        "negative workers",
        _set("jobs.0.workers", -2),
        J0 + "field 'workers': must be an integer >= 1, got -2",
    ),
    (
        "boolean workers",
        _set("jobs.0.workers", True),
        J0 + "field 'workers': must be an integer >= 1, got boolean True",
    ),
    (
        "fractional gpus per worker",
        _set("jobs.0.gpus_per_worker", 0.5),
        J0 + "field 'gpus_per_worker': must be an integer >= 1, got 0.5",
    ),
    ("missing submit time", _drop("jobs.1.submit_at"), J1 + "field 'submit_at': is required"),
    (
        "negative submit time",
        _set("jobs.1.submit_at", -3),
        J1 + "field 'submit_at': must be a number >= 0, got -3",
    ),
    ("missing duration", _drop("jobs.1.duration"), J1 + "field 'duration': is required"),
    (
        "zero duration",
        _set("jobs.1.duration", 0),
        J1 + "field 'duration': must be a number > 0, got 0",
    ),
    (
        "unknown queue",
        _set("jobs.1.queue", "nope"),
        J1 + "field 'queue': unknown queue 'nope'; known: a, solo",
    ),
    (
        "unknown class",
        _set("jobs.1.class", "gold"),
        J1 + "field 'class': unknown service class 'gold'; known: prod, spot",
    ),
    ("unknown flavor", _set("jobs.1.flavor", "b200"), J1 + "field 'flavor': unknown flavor 'b200'"),
    (
        "unknown flavor in list",
        _set("jobs.0.flavors", ["h100", "b200"]),
        J0 + "field 'flavors[1]': unknown flavor 'b200'",
    ),
    ("flavor list empty", _set("jobs.0.flavors", []), J0 + "field 'flavors': must not be empty"),
    (
        "flavor listed twice",
        _set("jobs.0.flavors", ["h100", "h100"]),
        J0 + "field 'flavors': lists a flavor twice",
    ),
    (
        "flavor and flavors",
        _set("jobs.1.flavors", ["h100"]),
        J1 + "give exactly one of 'flavor' or 'flavors' (ordered preference)",
    ),
    (
        "neither flavor nor flavors",
        _drop("jobs.1.flavor"),
        J1 + "give exactly one of 'flavor' or 'flavors' (ordered preference)",
    ),
    (
        "min workers above workers",
        _set("jobs.0.min_workers", 3),
        J0 + "field 'min_workers': must be <= workers (2), got 3",
    ),
    (
        "min workers zero",
        _set("jobs.0.min_workers", 0),
        J0 + "field 'min_workers': must be an integer >= 1, got 0",
    ),
    (
        "topology level not declared",
        _set("jobs.0.topology", {"required": "zone"}),
        J0 + "field 'topology.required': unknown topology level 'zone'; known: block, rack",
    ),
    (
        "topology with both kinds",
        _set("jobs.0.topology", {"required": "rack", "preferred": "block"}),
        J0 + "field 'topology': must be {required: LEVEL} or {preferred: LEVEL}",
    ),
    (
        "topology as text",
        _set("jobs.0.topology", "rack"),
        J0 + "field 'topology': must be a mapping, got 'rack'",
    ),
    ("unknown job key", _set("jobs.1.gpus", 4), J1 + "unknown field 'gpus'"),
    (
        "job missing its queue",
        _append("jobs", {"name": "a-second"}),
        "x.yaml: jobs[2] (a-second): field 'queue': is required",
    ),
    (
        "class key written as service_class",
        _set("jobs.1.service_class", "prod"),
        J1 + "unknown field 'service_class'",
    ),
    # events
    (
        "fail without node",
        _set("events.1", {"at": 5, "action": "fail", "job": "z-first"}),
        "x.yaml: events[1]: field 'node': is required for action 'fail'",
    ),
    (
        "cancel without job",
        _set("events.0", {"at": 5, "action": "cancel", "node": "n1"}),
        "x.yaml: events[0]: field 'job': is required for action 'cancel'",
    ),
    (
        "fail naming a job too",
        _set("events.1.job", "z-first"),
        "x.yaml: events[1]: field 'job': not allowed with action 'fail' (it acts on a node)",
    ),
    (
        "event on unknown node",
        _set("events.1.node", "n9"),
        "x.yaml: events[1]: field 'node': unknown node 'n9'",
    ),
    (
        "event on unknown job",
        _set("events.0.job", "ghost"),
        "x.yaml: events[0]: field 'job': unknown job 'ghost'",
    ),
    (
        "unknown action",
        _set("events.1.action", "reboot"),
        "x.yaml: events[1]: field 'action': "
        "must be one of fail, recover, cordon, uncordon, cancel, got 'reboot'",
    ),
    (
        "event time negative",
        _set("events.1.at", -1),
        "x.yaml: events[1]: field 'at': must be a number >= 0, got -1",
    ),
]


@pytest.mark.parametrize(
    ("edit", "message"),
    [pytest.param(edit, message, id=case) for case, edit, message in BAD_INPUTS],
)
def test_bad_input_is_rejected_naming_file_entry_and_field(edit: Edit, message: str) -> None:
    data = copy.deepcopy(_valid())
    edit(data)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, source="x.yaml")
    assert str(caught.value).startswith(message), str(caught.value)


def test_duplicate_job_names_are_rejected() -> None:
    data = _valid()
    data["jobs"].append(copy.deepcopy(data["jobs"][1]))
    with pytest.raises(ScenarioError, match=r"jobs\[2\] \(a-second\): field 'name': duplicate job"):
        parse_scenario(data, source="x.yaml")


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


def test_yaml_true_is_not_accepted_as_a_count(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    text = (SCENARIOS / "backfill-gang.yaml").read_text()
    path.write_text(text.replace("workers: 3", "workers: yes"))
    with pytest.raises(
        ScenarioError, match=r"jobs\[0\] \(running\): field 'workers'.*boolean True"
    ):
        load_scenario(path)
