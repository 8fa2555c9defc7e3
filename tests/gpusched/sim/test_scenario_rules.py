"""Mistakes the scenario's own rules (gpusched/sim/scenario.py) catch: duplicates, references,
one-of fields, limits and events, each named by file, entry and field."""

from __future__ import annotations

import copy

import pytest

from gpusched.sim.scenario import ScenarioError, parse_scenario
from tests.gpusched.sim.scenario_builders import (
    C0,
    F2,
    J0,
    J1,
    N0,
    QA,
    Edit,
    append_to,
    drop_field,
    set_field,
    valid_scenario,
)

BAD_INPUTS: list[tuple[str, Edit, str]] = [
    # top level
    (
        "topology level repeated",
        set_field("topology_levels", ["rack", "rack"]),
        "x.yaml: field 'topology_levels': duplicate level",
    ),
    # flavors
    (
        "gpu equivalent above one",
        set_field("flavors.2.gpu_equivalent", 1.5),
        F2 + "field 'gpu_equivalent': must be a number in (0, 1], got 1.5",
    ),
    (
        "duplicate flavor",
        append_to("flavors", {"name": "a100", "resource": "r"}),
        "x.yaml: flavors[3] (a100): field 'name': duplicate flavor name 'a100' "
        "(first at flavors[1])",
    ),
    # clusters and nodes
    (
        "duplicate cluster",
        set_field("clusters.1.name", "east"),
        "x.yaml: clusters[1] (east): field 'name': duplicate cluster name 'east' "
        "(first at clusters[0])",
    ),
    (
        "node name repeated across clusters",
        set_field("clusters.1.nodes.0.name", "mig-0"),
        "x.yaml: clusters[1] (west): node 'mig-0': field 'name': duplicate node name "
        "(also in cluster 'east')",
    ),
    (
        "negative gpu count",
        set_field("clusters.0.nodes.0.gpus.h100", -8),
        N0 + "field 'gpus.h100': must be an integer >= 0, got -8",
    ),
    (
        "fractional gpu count",
        set_field("clusters.0.nodes.0.gpus.h100", 7.5),
        N0 + "field 'gpus.h100': must be an integer >= 0, got 7.5",
    ),
    (
        "boolean gpu count",
        set_field("clusters.0.nodes.0.gpus.h100", True),
        N0 + "field 'gpus.h100': must be an integer >= 0, got boolean True",
    ),
    (
        "node gpus of unknown flavor",
        set_field("clusters.0.nodes.0.gpus.b200", 8),
        N0 + "field 'gpus.b200': unknown flavor 'b200'",
    ),
    (
        "node with name and prefix",
        set_field("clusters.0.nodes.0.name_prefix", "n-"),
        N0 + "give exactly one of 'name' or 'name_prefix' (with 'count')",
    ),
    (
        "node with neither name nor prefix",
        drop_field("clusters.0.nodes.0.name"),
        "x.yaml: clusters[0] (east) > nodes[0]: give exactly one of 'name' or 'name_prefix' "
        "(with 'count')",
    ),
    (
        "count with a plain name",
        set_field("clusters.0.nodes.0.count", 2),
        N0 + "field 'count': only allowed with 'name_prefix'",
    ),
    (
        "node label not a string",
        set_field("clusters.0.nodes.0.labels.rack", ["r1"]),
        N0 + "field 'labels.rack': must be a string, got a list",
    ),
    # service classes
    (
        "priority as text",
        set_field("service_classes.0.priority", "high"),
        C0 + "field 'priority': must be an integer, got 'high'",
    ),
    (
        "duplicate class",
        set_field("service_classes.1.name", "prod"),
        "x.yaml: service_classes[1] (prod): field 'name': duplicate service class name 'prod'",
    ),
    # queues
    (
        "duplicate queue",
        set_field("queues.1.name", "a"),
        "x.yaml: queues[1] (a): field 'name': duplicate queue name 'a' (first at queues[0])",
    ),
    (
        "quota of unknown flavor",
        set_field("queues.0.quotas.b200", {"nominal": 1}),
        QA + "field 'quotas.b200': unknown flavor 'b200'",
    ),
    (
        "quota given as a bare number",
        set_field("queues.0.quotas.h100", 8),
        QA + "field 'quotas.h100': must be a mapping "
        "{nominal: N, borrowing_limit: B, lending_limit: L}, got 8",
    ),
    (
        "lending above nominal",
        set_field("queues.0.quotas.h100.lending_limit", 9),
        QA + "quota 'h100': field 'lending_limit': must be <= nominal (8), got 9",
    ),
    # jobs
    (
        "unknown queue",
        set_field("jobs.1.queue", "nope"),
        J1 + "field 'queue': unknown queue 'nope'; known: a, solo",
    ),
    (
        "unknown class",
        set_field("jobs.1.class", "gold"),
        J1 + "field 'class': unknown service class 'gold'; known: prod, spot",
    ),
    (
        "unknown flavor",
        set_field("jobs.1.flavor", "b200"),
        J1 + "field 'flavor': unknown flavor 'b200'",
    ),
    (
        "unknown flavor in list",
        set_field("jobs.0.flavors", ["h100", "b200"]),
        J0 + "field 'flavors[1]': unknown flavor 'b200'",
    ),
    (
        "flavor listed twice",
        set_field("jobs.0.flavors", ["h100", "h100"]),
        J0 + "field 'flavors': lists a flavor twice",
    ),
    (
        "flavor and flavors",
        set_field("jobs.1.flavors", ["h100"]),
        J1 + "give exactly one of 'flavor' or 'flavors' (ordered preference)",
    ),
    (
        "neither flavor nor flavors",
        drop_field("jobs.1.flavor"),
        J1 + "give exactly one of 'flavor' or 'flavors' (ordered preference)",
    ),
    (
        "min workers above workers",
        set_field("jobs.0.min_workers", 3),
        J0 + "field 'min_workers': must be <= workers (2), got 3",
    ),
    (
        "topology level not declared",
        set_field("jobs.0.topology", {"required": "zone"}),
        J0 + "field 'topology.required': unknown topology level 'zone'; known: block, rack",
    ),
    (
        "topology with both kinds",
        set_field("jobs.0.topology", {"required": "rack", "preferred": "block"}),
        J0 + "field 'topology': must be {required: LEVEL} or {preferred: LEVEL}",
    ),
    # events
    (
        "fail without node",
        set_field("events.1", {"at": 5, "action": "fail", "job": "z-first"}),
        "x.yaml: events[1]: field 'node': is required for action 'fail'",
    ),
    (
        "cancel without job",
        set_field("events.0", {"at": 5, "action": "cancel", "node": "n1"}),
        "x.yaml: events[0]: field 'job': is required for action 'cancel'",
    ),
    (
        "fail naming a job too",
        set_field("events.1.job", "z-first"),
        "x.yaml: events[1]: field 'job': not allowed with action 'fail' (it acts on a node)",
    ),
    (
        "event on unknown node",
        set_field("events.1.node", "n9"),
        "x.yaml: events[1]: field 'node': unknown node 'n9'",
    ),
    (
        "event on unknown job",
        set_field("events.0.job", "ghost"),
        "x.yaml: events[0]: field 'job': unknown job 'ghost'",
    ),
    (
        "unknown action",
        set_field("events.1.action", "reboot"),
        "x.yaml: events[1]: field 'action': "
        "must be one of fail, recover, cordon, drain, uncordon, cancel, got 'reboot'",
    ),
]


@pytest.mark.parametrize(
    ("edit", "message"),
    [pytest.param(edit, message, id=case) for case, edit, message in BAD_INPUTS],
)
def test_bad_input_is_rejected_naming_file_entry_and_field(edit: Edit, message: str) -> None:
    data = copy.deepcopy(valid_scenario())
    edit(data)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, source="x.yaml")
    assert str(caught.value).startswith(message), str(caught.value)


def test_duplicate_job_names_are_rejected() -> None:
    data = valid_scenario()
    data["jobs"].append(copy.deepcopy(data["jobs"][1]))
    with pytest.raises(ScenarioError, match=r"jobs\[2\] \(a-second\): field 'name': duplicate job"):
        parse_scenario(data, source="x.yaml")


def _with_cohorts(cohorts: list[dict[str, object]]) -> dict[str, object]:
    data = copy.deepcopy(valid_scenario())
    data["cohorts"] = cohorts
    return data


def test_a_cohort_tree_loads_with_its_parents_weights_and_quotas() -> None:
    data = _with_cohorts(
        [
            {"name": "org"},
            {
                "name": "physics",
                "parent": "org",
                "weight": 2,
                "quotas": {"h100": {"nominal": 0, "borrowing_limit": 16, "lending_limit": 8}},
            },
        ]
    )
    scenario = parse_scenario(data, source="x.yaml")
    org, physics = scenario.cohorts
    assert (org.name, org.parent, dict(org.quotas)) == ("org", None, {})
    assert (physics.parent, physics.weight) == ("org", 2)
    quota = physics.quotas["h100"]  # a cohort may lend more than its own nominal
    assert (quota.nominal, quota.borrowing_limit, quota.lending_limit) == (0, 16, 8)


def test_without_cohorts_a_scenario_has_no_tree() -> None:
    assert parse_scenario(copy.deepcopy(valid_scenario()), source="x.yaml").cohorts == ()


@pytest.mark.parametrize(
    ("cohorts", "message"),
    [
        (
            [{"name": "physics", "parent": "org"}],
            "x.yaml: cohorts[0] (physics): field 'parent': unknown cohort 'org'",
        ),
        (
            [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}],
            "x.yaml: cohorts[0] (a): field 'parent': the parents form a cycle through 'a'",
        ),
        (
            [{"name": "a", "parent": "a"}],
            "x.yaml: cohorts[0] (a): field 'parent': the parents form a cycle through 'a'",
        ),
        (
            [{"name": "a"}, {"name": "a"}],
            "x.yaml: cohorts[1] (a): field 'name': duplicate cohort name 'a'",
        ),
        (
            [{"name": "a", "quotas": {"tpu": {"nominal": 1}}}],
            "x.yaml: cohorts[0] (a): field 'quotas.tpu': unknown flavor 'tpu'",
        ),
        (
            [{"name": "a", "colour": "red"}],
            "x.yaml: cohorts[0] (a): ",
        ),
    ],
)
def test_bad_cohorts_are_rejected_naming_the_entry_and_field(
    cohorts: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_with_cohorts(cohorts), source="x.yaml")
    assert str(caught.value).startswith(message), str(caught.value)
