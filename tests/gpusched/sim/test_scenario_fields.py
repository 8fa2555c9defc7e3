"""Bad values the field reader (gpusched/sim/scenario_fields.py) refuses, naming the field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpusched.sim.scenario import ScenarioError, load_scenario, parse_scenario
from tests.gpusched.sim.scenario_builders import (
    C0,
    C1,
    F0,
    F2,
    J0,
    J1,
    N0,
    N1,
    QA,
    SCENARIOS,
    Edit,
    append_to,
    drop_field,
    set_field,
    valid_scenario,
)

BAD_INPUTS: list[tuple[str, Edit, str]] = [
    # top level
    (
        "unknown top-level key",
        set_field("cycle_intervall", 5),
        "x.yaml: unknown field 'cycle_intervall' (did you mean 'cycle_interval'?)",
    ),
    ("missing name", drop_field("name"), "x.yaml: field 'name': is required"),
    (
        "cycle interval zero",
        set_field("cycle_interval", 0),
        "x.yaml: field 'cycle_interval': must be a number > 0, got 0",
    ),
    (
        "cycle interval text",
        set_field("cycle_interval", "10s"),
        "x.yaml: field 'cycle_interval': must be a number > 0, got '10s'",
    ),
    (
        "until negative",
        set_field("until", -1),
        "x.yaml: field 'until': must be a number > 0, got -1",
    ),
    (
        "preemption protection negative",
        set_field("preemption_protection", -1),
        "x.yaml: field 'preemption_protection': must be a number >= 0, got -1",
    ),
    ("flavors missing", drop_field("flavors"), "x.yaml: field 'flavors': is required"),
    ("flavors empty", set_field("flavors", []), "x.yaml: field 'flavors': must not be empty"),
    (
        "jobs not a list",
        set_field("jobs", {"a": 1}),
        "x.yaml: field 'jobs': must be a list, got a mapping",
    ),
    # flavors
    (
        "flavor without resource",
        drop_field("flavors.0.resource"),
        F0 + "field 'resource': is required",
    ),
    (
        "gpu equivalent zero",
        set_field("flavors.2.gpu_equivalent", 0),
        F2 + "field 'gpu_equivalent': must be a number > 0, got 0",
    ),
    (
        "price not a number",
        set_field("flavors.0.price_per_hour", "four"),
        F0 + "field 'price_per_hour': must be a decimal number (string or number) >= 0, got 'four'",
    ),
    (
        "price negative",
        set_field("flavors.0.price_per_hour", -1),
        F0 + "field 'price_per_hour': must be a decimal number (string or number) >= 0, got -1",
    ),
    (
        "flavor entry not a mapping",
        append_to("flavors", "h200"),
        "x.yaml: flavors[3]: must be a mapping, got 'h200'",
    ),
    # clusters and nodes
    (
        "prefix without count",
        drop_field("clusters.0.nodes.1.count"),
        N1 + "field 'count': is required",
    ),
    (
        "count zero",
        set_field("clusters.0.nodes.1.count", 0),
        N1 + "field 'count': must be an integer >= 1, got 0",
    ),
    (
        "unknown node key",
        set_field("clusters.0.nodes.0.gpu", {}),
        N0 + "unknown field 'gpu' (did you mean 'gpus'?)",
    ),
    (
        "cluster without nodes",
        set_field("clusters.1.nodes", []),
        "x.yaml: clusters[1] (west): field 'nodes': must not be empty",
    ),
    # service classes
    (
        "priority missing",
        drop_field("service_classes.0.priority"),
        C0 + "field 'priority': is required",
    ),
    (
        "preemptible as text",
        set_field("service_classes.0.preemptible", "no"),
        C0 + "field 'preemptible': must be true or false, got 'no'",
    ),
    (
        "preemptible as zero",
        set_field("service_classes.0.preemptible", 0),
        C0 + "field 'preemptible': must be true or false, got 0",
    ),
    (
        "negative min runtime",
        set_field("service_classes.1.min_runtime", -1),
        C1 + "field 'min_runtime': must be a number >= 0, got -1",
    ),
    (
        "negative preemption protection",
        set_field("service_classes.1.preemption_protection", -5),
        C1 + "field 'preemption_protection': must be a number >= 0, got -5",
    ),
    (
        "zero max runtime",
        set_field("service_classes.1.max_runtime", 0),
        C1 + "field 'max_runtime': must be a number > 0, got 0",
    ),
    # queues
    (
        "weight zero",
        set_field("queues.0.weight", 0),
        QA + "field 'weight': must be a number > 0, got 0",
    ),
    (
        "weight negative",
        set_field("queues.0.weight", -2),
        QA + "field 'weight': must be a number > 0, got -2",
    ),
    (
        "nominal missing",
        drop_field("queues.0.quotas.h100.nominal"),
        QA + "quota 'h100': field 'nominal': is required",
    ),
    (
        "nominal negative",
        set_field("queues.0.quotas.h100.nominal", -1),
        QA + "quota 'h100': field 'nominal': must be an integer >= 0, got -1",
    ),
    (
        "nominal boolean",
        set_field("queues.0.quotas.h100.nominal", True),
        QA + "quota 'h100': field 'nominal': must be an integer >= 0, got boolean True",
    ),
    (
        "borrowing limit fractional",
        set_field("queues.0.quotas.a100.borrowing_limit", 1.5),
        QA + "quota 'a100': field 'borrowing_limit': must be an integer >= 0, got 1.5",
    ),
    (
        "unknown quota key",
        set_field("queues.0.quotas.h100.borrow", 1),
        QA + "quota 'h100': unknown field 'borrow'",
    ),
    # jobs
    (
        "negative workers",
        set_field("jobs.0.workers", -2),
        J0 + "field 'workers': must be an integer >= 1, got -2",
    ),
    (
        "boolean workers",
        set_field("jobs.0.workers", True),
        J0 + "field 'workers': must be an integer >= 1, got boolean True",
    ),
    (
        "fractional gpus per worker",
        set_field("jobs.0.gpus_per_worker", 0.5),
        J0 + "field 'gpus_per_worker': must be an integer >= 1, got 0.5",
    ),
    ("missing submit time", drop_field("jobs.1.submit_at"), J1 + "field 'submit_at': is required"),
    (
        "negative submit time",
        set_field("jobs.1.submit_at", -3),
        J1 + "field 'submit_at': must be a number >= 0, got -3",
    ),
    ("missing duration", drop_field("jobs.1.duration"), J1 + "field 'duration': is required"),
    (
        "zero duration",
        set_field("jobs.1.duration", 0),
        J1 + "field 'duration': must be a number > 0, got 0",
    ),
    (
        "flavor list empty",
        set_field("jobs.0.flavors", []),
        J0 + "field 'flavors': must not be empty",
    ),
    (
        "min workers zero",
        set_field("jobs.0.min_workers", 0),
        J0 + "field 'min_workers': must be an integer >= 1, got 0",
    ),
    (
        "topology as text",
        set_field("jobs.0.topology", "rack"),
        J0 + "field 'topology': must be a mapping, got 'rack'",
    ),
    ("unknown job key", set_field("jobs.1.gpus", 4), J1 + "unknown field 'gpus'"),
    (
        "job missing its queue",
        append_to("jobs", {"name": "a-second"}),
        "x.yaml: jobs[2] (a-second): field 'queue': is required",
    ),
    (
        "class key written as service_class",
        set_field("jobs.1.service_class", "prod"),
        J1 + "unknown field 'service_class'",
    ),
    # events
    (
        "event time negative",
        set_field("events.1.at", -1),
        "x.yaml: events[1]: field 'at': must be a number >= 0, got -1",
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


def test_yaml_true_is_not_accepted_as_a_count(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    text = (SCENARIOS / "backfill-gang.yaml").read_text()
    path.write_text(text.replace("workers: 3", "workers: yes"))
    with pytest.raises(
        ScenarioError, match=r"jobs\[0\] \(running\): field 'workers'.*boolean True"
    ):
        load_scenario(path)
