"""The checker on cohort trees (docs/SCHEDULING.md section 2a): every level's limit, reclaim
and fair share across departments, read from the scenario alone."""

from __future__ import annotations

from dataclasses import replace

from gpusched.check.checker import check_report
from gpusched.sim.scenario import load_scenario
from tests.gpusched.check.test_checker import SCENARIOS, _admit, _check, _job, _scenario

_TREE_QUEUES = [
    {"name": "a", "cohort": "physics", "quotas": {"h100": {"nominal": 4}}},
    {"name": "b", "cohort": "biology", "quotas": {"h100": {"nominal": 4}}},
]
_TREE = [
    {"name": "org"},
    {"name": "physics", "parent": "org",
     "quotas": {"h100": {"nominal": 0, "borrowing_limit": 2, "lending_limit": 1}}},
    {"name": "biology", "parent": "org"},
]  # fmt: skip


def test_a_department_above_its_borrowing_limit_is_caught() -> None:
    # a: its 4 and physics may borrow 2 from org (biology's idle 4 are there): 6, not 8
    scenario = _scenario([_job("x", gpus_per_worker=8)], queues=_TREE_QUEUES, cohorts=_TREE)
    assert _check(scenario, [_admit(0, "x", {"n1": 8})]) == [
        "t=0: admit x: cohort physics of h100 uses 8, above its capacity 4 plus its borrowing "
        "limit (6)"
    ]


def test_a_department_lending_more_than_its_lending_limit_is_caught() -> None:
    # physics lends org 1 of a's idle 4: b may use its 4 and 1 more, not 4 more
    scenario = _scenario([_job("y", queue="b", gpus_per_worker=8)], queues=_TREE_QUEUES,
                         cohorts=_TREE)  # fmt: skip
    assert _check(scenario, [_admit(0, "y", {"n1": 8}, queue="b")]) == [
        "t=0: admit y: cohort org pool of h100 exceeded: 8 used of 5"
    ]


def test_reclaim_from_a_department_within_its_capacity_is_caught() -> None:
    # b borrows c's idle nominal inside biology (5 of its 2); biology itself stays within its
    # capacity of 6, so a job of physics may not reclaim from b across departments
    queues = [
        _TREE_QUEUES[0],
        {"name": "b", "cohort": "biology", "quotas": {"h100": {"nominal": 2}}},
        {"name": "c", "cohort": "biology", "quotas": {"h100": {"nominal": 4}}},
    ]
    jobs = [_job("b1", queue="b", cls="low"), _job("b2", queue="b", cls="low", gpus_per_worker=1),
            _job("a1", queue="a", submit_at=10)]  # fmt: skip
    scenario = _scenario(jobs, queues=queues, cohorts=_TREE)
    events = [
        _admit(0, "b1", {"n1": 4}, queue="b"),
        _admit(0, "b2", {"n2": 1}, queue="b"),
        {"t": 10, "type": "preempt", "job": "b1", "by": "a1", "reason": "reclaim"},
        {"t": 10, "type": "requeue", "job": "b1"},
        _admit(10, "a1", {"n1": 4}),
    ]
    assert _check(scenario, events) == [
        "t=10: preempt b1: reclaim across cohorts for a1, but cohort biology (between b and "
        "its common cohort with a) is not borrowing",
    ]


def test_the_flat_engine_breaks_a_trees_limits_and_the_tree_engine_keeps_them() -> None:
    """The checker reads the tree from the scenario alone: a report made as if the cohorts
    were flat (every queue in one pool) breaks physics' borrowing limit."""
    from gpusched.sim.simulate import simulate

    tree = load_scenario(SCENARIOS / "cohort-tree-borrow-reclaim.yaml")
    flat_queues = tuple(replace(q, cohort="org") for q in tree.queues)
    flat = replace(tree, cohorts=(), queues=flat_queues)
    broken = check_report(tree, simulate(flat), conservation=False)
    assert any("cohort physics of h100 uses" in line for line in broken), broken
    assert check_report(tree, simulate(tree)) == []


def test_gpus_shrunk_for_a_waiting_preemptor_stay_held_until_it_starts() -> None:
    """Rule 7: a preemptor that waits for a victim's grace period holds every victim's GPUs,
    also those of a victim shrunk without a grace period of its own (the report shows them
    free at once). Found on a large tree, where one shared pool makes it common."""
    queues = [
        {"name": "a", "cohort": "c", "quotas": {"h100": {"nominal": 16}}},
        {"name": "b", "cohort": "c", "quotas": {"h100": {"nominal": 8}}},
    ]
    jobs = [
        _job("e1", cls="low", workers=4, gpus_per_worker=2, min_workers=1, duration=None),
        _job("s1", gpus_per_worker=8, duration=None),
        _job("p1", cls="prod", submit_at=1000, gpus_per_worker=8, duration=None),
        _job("w1", queue="b", cls="low", submit_at=1000, duration=None),
    ]
    scenario = _scenario(jobs, queues=queues)
    events = [
        _admit(0, "e1", {"n1": 8}, workers=4),
        _admit(0, "s1", {"n2": 8}),
        {"t": 1000, "type": "scale", "job": "e1", "workers": 1, "placement": {"n1": 2},
         "by": "p1", "reason": "priority", "release_at": 1000},
        {"t": 1000, "type": "preempt", "job": "s1", "by": "p1", "reason": "priority"},
        {"t": 1000, "type": "requeue", "job": "s1"},
        _admit(1030, "p1", {"n2": 8}),
        _admit(1030, "w1", {"n1": 4}, queue="b"),
    ]  # fmt: skip
    assert _check(scenario, events, conservation=True) == []
    # once the preemptor runs, the shrunk GPUs are free to the next job at once
    late = [*events[:-1], _admit(1100, "w1", {"n1": 4}, queue="b")]
    assert _check(scenario, late, conservation=True) == [
        "t=1030: job w1: still pending after the cycle, although its quota and free capacity "
        "of h100 hold it (work conservation)"
    ]


def test_gpus_of_a_victim_stopped_without_grace_stay_held_for_a_waiting_preemptor() -> None:
    queues = [
        {"name": "a", "cohort": "c", "quotas": {"h100": {"nominal": 16}}},
        {"name": "b", "cohort": "c", "quotas": {"h100": {"nominal": 8}}},
    ]
    jobs = [
        _job("l1", cls="low", gpus_per_worker=8, duration=None),
        _job("s1", gpus_per_worker=8, duration=None),
        _job("p1", cls="prod", submit_at=1000, workers=2, gpus_per_worker=4, duration=None),
        _job("w1", queue="b", cls="low", submit_at=1000, duration=None),
    ]
    scenario = _scenario(jobs, queues=queues)
    events = [
        _admit(0, "l1", {"n1": 8}),
        _admit(0, "s1", {"n2": 8}),
        {"t": 1000, "type": "preempt", "job": "l1", "by": "p1", "reason": "priority"},
        {"t": 1000, "type": "requeue", "job": "l1"},
        {"t": 1000, "type": "preempt", "job": "s1", "by": "p1", "reason": "priority"},
        {"t": 1000, "type": "requeue", "job": "s1"},
        _admit(1030, "p1", {"n1": 4, "n2": 4}, workers=2),
        _admit(1030, "w1", {"n1": 4}, queue="b"),
    ]
    assert _check(scenario, events, conservation=True) == []
