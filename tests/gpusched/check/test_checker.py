"""The report checker accepts sound reports and names each broken scheduling rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusched.check.checker import check_report
from gpusched.sim.scenario import Scenario, load_scenario, parse_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def _job(name: str, queue: str = "a", cls: str = "std", **extra: Any) -> dict[str, Any]:
    job = {"name": name, "queue": queue, "class": cls, "submit_at": 0, "workers": 1,
           "gpus_per_worker": 4, "flavor": "h100", "duration": 1000}  # fmt: skip
    job.update(extra)
    return job


def _scenario(jobs: list[dict[str, Any]], **extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "small",
        "cycle_interval": 10,
        "flavors": [
            {"name": "h100", "resource": "nvidia.com/gpu"},
            {"name": "h100-1g.10gb", "resource": "nvidia.com/mig-1g.10gb", "gpu_equivalent": 0.1},
        ],
        "topology_levels": ["rack"],
        "clusters": [
            {
                "name": "main",
                "nodes": [
                    {"name": "n1", "gpus": {"h100": 8}, "labels": {"rack": "r1"}},
                    {"name": "n2", "gpus": {"h100": 8}, "labels": {"rack": "r2"}},
                    {"name": "mig", "gpus": {"h100-1g.10gb": 7}, "labels": {"rack": "r2"}},
                ],
            }
        ],
        "service_classes": [
            {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
            {"name": "std", "priority": 100, "min_runtime": 600, "grace_period": 30},
            {"name": "low", "priority": 10},
        ],
        "queues": [
            {"name": "a", "cohort": "c", "quotas": {"h100": {"nominal": 8}}},
            {"name": "b", "cohort": "c", "quotas": {"h100": {"nominal": 8}}},
            {"name": "solo", "quotas": {"h100": {"nominal": 4}}},
        ],
        "jobs": jobs,
    }
    data.update(extra)
    return parse_scenario(data, source="small.yaml")


def _admit(t: float, job: str, placement: dict[str, int], queue: str = "a",
           flavor: str = "h100", workers: int | None = None) -> dict[str, Any]:  # fmt: skip
    count = workers if workers is not None else len(placement)
    return {"t": t, "type": "admit", "job": job, "queue": queue, "cluster": "main",
            "flavor": flavor, "workers": count, "placement": placement}  # fmt: skip


def _scheduled(event: dict[str, Any]) -> bool:
    """A preemption the scheduler decided (what the report's counts hold)."""
    return event["type"] == "preempt" and event["reason"] in ("reclaim", "fair-share", "priority")


def _report(scenario: Scenario, events: list[dict[str, Any]]) -> dict[str, Any]:
    """A report whose job table and totals agree with ``events`` (the events are under test)."""
    rows = []
    for job in scenario.jobs:
        mine = [e for e in events if e.get("job") == job.name]
        admits = [e["t"] for e in mine if e["type"] == "admit"]
        ends = {e["type"]: e["t"] for e in mine if e["type"] in ("finish", "cancel", "fail")}
        state = {"finish": "finished", "cancel": "cancelled", "fail": "failed"}
        rows.append({
            "name": job.name, "queue": job.queue, "submitted_at": job.submit_at,
            "started_at": admits[0] if admits else None, "finished_at": ends.get("finish"),
            "state": next((state[k] for k in ends), "running" if admits else "pending"),
            "preemptions": sum(_scheduled(e) for e in mine),
        })  # fmt: skip
    summary = {"jobs": len(rows), "preemptions": sum(_scheduled(e) for e in events)}
    return {"scenario": scenario.name, "policy": "test", "summary": summary, "jobs": rows,
            "events": events}  # fmt: skip


def _check(
    scenario: Scenario, events: list[dict[str, Any]], conservation: bool = False
) -> list[str]:
    """Check ``events``; work conservation only when asked (most reports here are made up to
    break one other rule, and leave jobs waiting that could run)."""
    return check_report(scenario, _report(scenario, events), conservation=conservation)


# --------------------------------------------------------------------------- sound reports


def test_the_expected_backfill_outcome_passes() -> None:
    scenario = load_scenario(SCENARIOS / "backfill-gang.yaml")
    events = [
        _admit(0, "running", {"n1": 8, "n2": 4}, queue="q", flavor="a100", workers=3),
        {"t": 1, "type": "reserve", "job": "gang", "start": 1000, "nodes": ["n1", "n2"]},
        _admit(2, "short", {"n2": 2}, queue="q", flavor="a100"),
        {"t": 302, "type": "finish", "job": "short"},
        {"t": 1000, "type": "finish", "job": "running"},
        _admit(1000, "gang", {"n1": 8, "n2": 8}, queue="q", flavor="a100", workers=2),
        {"t": 1500, "type": "finish", "job": "gang"},
        _admit(1500, "long", {"n1": 2}, queue="q", flavor="a100"),
        {"t": 3500, "type": "finish", "job": "long"},
    ]
    assert _check(scenario, events, conservation=True) == []


def test_the_expected_reclaim_outcome_passes() -> None:
    scenario = load_scenario(SCENARIOS / "quota-borrow-reclaim.yaml")
    events = [_admit(i, f"a{i:02}", {"node-0" if i < 8 else "node-1": 1}) for i in range(10)]
    for victim, by in (("a09", "b00"), ("a08", "b01"), ("a07", "b02")):
        events.append({"t": 100, "type": "preempt", "job": victim, "by": by, "reason": "reclaim"})
    events += [
        _admit(100, "b00", {"node-1": 1}, queue="b"),
        _admit(100, "b01", {"node-1": 1}, queue="b"),
        _admit(100, "b02", {"node-0": 1}, queue="b"),
    ]
    assert _check(scenario, events) == []


def test_priority_preemption_after_min_runtime_and_grace_passes() -> None:
    scenario = _scenario([_job("std1", submit_at=0), _job("low1", cls="low"),
                          _job("prod1", cls="prod", submit_at=700, workers=2)])  # fmt: skip
    events = [
        _admit(0, "std1", {"n1": 4}),
        _admit(0, "low1", {"n1": 4}),
        {"t": 700, "type": "preempt", "job": "std1", "by": "prod1", "reason": "priority"},
        {"t": 700, "type": "preempt", "job": "low1", "by": "prod1", "reason": "priority"},
        _admit(730, "prod1", {"n1": 8}, workers=2),
    ]
    assert _check(scenario, events) == []


# --------------------------------------------------------------------------- capacity and nodes


def test_node_over_capacity_is_caught() -> None:
    scenario = _scenario([_job("x"), _job("y", workers=2, gpus_per_worker=3)])
    events = [_admit(0, "x", {"n1": 4}), _admit(5, "y", {"n1": 6}, workers=2)]
    assert _check(scenario, events) == [
        "t=5: admit y: node n1 over capacity: 10 of 8 h100",
    ]


def test_capacity_of_a_stopped_job_is_held_for_its_grace_period() -> None:
    # std has a 30 s grace period: the cancelled job's GPUs come free at 80, not 50
    scenario = _scenario([_job("old", gpus_per_worker=8), _job("new", gpus_per_worker=8)])
    full = [_admit(0, "old", {"n1": 8}), {"t": 50, "type": "cancel", "job": "old"}]
    too_early = [*full, _admit(60, "new", {"n1": 8})]
    after_grace = [*full, _admit(80, "new", {"n1": 8})]
    assert _check(scenario, too_early) == ["t=60: admit new: node n1 over capacity: 16 of 8 h100"]
    assert _check(scenario, after_grace) == []


def test_mig_slices_only_on_nodes_that_expose_them() -> None:
    queues = [{"name": "a", "quotas": {"h100-1g.10gb": {"nominal": 7}}}]
    scenario = _scenario([_job("nb", flavor="h100-1g.10gb", gpus_per_worker=1)], queues=queues)
    assert _check(scenario, [_admit(0, "nb", {"mig": 1}, flavor="h100-1g.10gb")]) == []
    assert _check(scenario, [_admit(0, "nb", {"n1": 1}, flavor="h100-1g.10gb")]) == [
        "t=0: admit nb: node n1 does not expose flavor h100-1g.10gb",
    ]


def test_a_job_left_running_on_a_drained_node_is_caught() -> None:
    scenario = _scenario([_job("x")], events=[{"at": 5, "node": "n1", "action": "drain"}])
    left = [_admit(0, "x", {"n1": 4}), {"t": 1000, "type": "finish", "job": "x"}]
    assert _check(scenario, left) == ["t=5: job x: still running on draining node n1"]
    stopped = [
        _admit(0, "x", {"n1": 4}),
        {"t": 5, "type": "preempt", "job": "x", "reason": "node-drain"},
        {"t": 5, "type": "requeue", "job": "x"},
        _admit(40, "x", {"n2": 4}),
        {"t": 1040, "type": "finish", "job": "x"},
    ]
    assert _check(scenario, stopped) == []
    back_on_it = [*stopped[:3], _admit(40, "x", {"n1": 4})]
    assert "t=40: admit x: placed on cordoned node n1" in _check(scenario, back_on_it)


def test_admitting_onto_a_failed_node_is_caught() -> None:
    scenario = _scenario([_job("x", submit_at=10)],
                         events=[{"at": 5, "node": "n1", "action": "fail"}])  # fmt: skip
    assert _check(scenario, [_admit(10, "x", {"n1": 4})]) == [
        "t=10: admit x: placed on failed node n1",
    ]


def test_a_job_left_running_on_a_failed_node_is_caught() -> None:
    scenario = _scenario([_job("x")], events=[{"at": 5, "node": "n1", "action": "fail"}])
    left = [_admit(0, "x", {"n1": 4}), {"t": 1000, "type": "finish", "job": "x"}]
    assert _check(scenario, left) == ["t=5: job x: still running on failed node n1"]
    stopped = [
        _admit(0, "x", {"n1": 4}),
        {"t": 5, "type": "preempt", "job": "x", "reason": "node-failure"},
        {"t": 5, "type": "requeue", "job": "x"},
        _admit(40, "x", {"n2": 4}),
        {"t": 1040, "type": "finish", "job": "x"},
    ]
    assert _check(scenario, stopped) == []


def test_a_worker_split_across_nodes_and_a_cluster_mismatch_are_caught() -> None:
    scenario = _scenario([_job("x", workers=1, gpus_per_worker=4)])
    split = [_admit(0, "x", {"n1": 2, "n2": 2}, workers=1)]
    assert _check(scenario, split) == [
        "t=0: admit x: 2 GPUs on n1 is not a whole number of workers of 4 GPUs "
        "(a worker must sit on one node)",
        "t=0: admit x: 2 GPUs on n2 is not a whole number of workers of 4 GPUs "
        "(a worker must sit on one node)",
    ]
    elsewhere = [{**_admit(0, "x", {"n1": 4}), "cluster": "west"}]
    assert _check(scenario, elsewhere) == ["t=0: admit x: node n1 is not in cluster 'west'"]


# --------------------------------------------------------------------------- gangs and topology


def test_a_gang_started_with_fewer_workers_is_caught() -> None:
    scenario = _scenario([_job("gang", workers=4, gpus_per_worker=4)])
    events = [_admit(0, "gang", {"n1": 8}, workers=2)]
    assert _check(scenario, events) == ["t=0: admit gang: gang of 4 workers started with 2"]


def test_an_elastic_job_below_min_workers_is_caught_and_within_range_passes() -> None:
    scenario = _scenario([_job("el", workers=4, gpus_per_worker=2, min_workers=2)])
    assert _check(scenario, [_admit(0, "el", {"n1": 4}, workers=2)]) == []
    grow = {"t": 9, "type": "scale", "job": "el", "workers": 4, "placement": {"n1": 8}}
    assert _check(scenario, [_admit(0, "el", {"n1": 4}, workers=2), grow]) == []
    shrink = {"t": 9, "type": "scale", "job": "el", "workers": 1, "placement": {"n1": 2}}
    assert _check(scenario, [_admit(0, "el", {"n1": 4}, workers=2), shrink]) == [
        "t=9: scale el: elastic job runs 1 workers, outside 2..4",
    ]


def test_required_topology_across_racks_is_caught() -> None:
    scenario = _scenario([_job("tg", workers=2, gpus_per_worker=8,
                               topology={"required": "rack"})])  # fmt: skip
    events = [_admit(0, "tg", {"n1": 8, "n2": 8}, workers=2)]
    assert _check(scenario, events) == [
        "t=0: admit tg: topology required rack, but placed across ['r1', 'r2']",
    ]


# --------------------------------------------------------------------------- quota


def test_a_queue_without_cohort_above_nominal_is_caught() -> None:
    scenario = _scenario([_job("s1", queue="solo"), _job("s2", queue="solo")])
    events = [_admit(0, "s1", {"n1": 4}, queue="solo"), _admit(0, "s2", {"n2": 4}, queue="solo")]
    assert _check(scenario, events) == ["t=0: admit s2: queue solo uses 8 h100, above its limit 4"]


def test_borrowing_above_the_borrowing_limit_is_caught() -> None:
    queues = [
        {"name": "a", "cohort": "c", "quotas": {"h100": {"nominal": 4, "borrowing_limit": 2}}},
        {"name": "b", "cohort": "c", "quotas": {"h100": {"nominal": 12}}},
    ]
    scenario = _scenario([_job("x", gpus_per_worker=8)], queues=queues)
    assert _check(scenario, [_admit(0, "x", {"n1": 8})]) == [
        "t=0: admit x: queue a uses 8 h100, above its limit 6",
    ]


def test_a_cohort_pool_limited_by_lending_limits_is_enforced() -> None:
    queues = [
        {"name": "a", "cohort": "c", "quotas": {"h100": {"nominal": 4}}},
        {"name": "b", "cohort": "c", "quotas": {"h100": {"nominal": 6, "lending_limit": 2}}},
    ]
    scenario = _scenario([_job("x", gpus_per_worker=6), _job("y", gpus_per_worker=8)],
                         queues=queues)  # fmt: skip
    assert _check(scenario, [_admit(0, "x", {"n1": 6})]) == []  # 4 own + 2 lent by b
    assert _check(scenario, [_admit(0, "y", {"n1": 8})]) == [
        "t=0: admit y: cohort c pool of h100 exceeded: 8 used of 6",
    ]


# --------------------------------------------------------------------------- preemption rules


def _two_running_then(*more: dict[str, Any]) -> list[dict[str, Any]]:
    return [_admit(0, "v", {"n1": 4}), *more]


def test_preempting_a_non_preemptible_job_is_caught_unless_its_node_failed() -> None:
    scenario = _scenario([_job("v", cls="prod"), _job("p", cls="prod", submit_at=5)])
    bad = _two_running_then({"t": 900, "type": "preempt", "job": "v", "by": "p",
                             "reason": "priority"})  # fmt: skip
    violations = _check(scenario, bad)
    assert "t=900: preempt v: class prod is not preemptible (priority)" in violations
    scenario = _scenario([_job("v", cls="prod")], events=[{"at": 900, "node": "n1",
                                                           "action": "fail"}])  # fmt: skip
    ok = _two_running_then({"t": 900, "type": "preempt", "job": "v", "reason": "node-failure"})
    assert _check(scenario, ok) == []


def test_preemption_inside_min_runtime_is_caught() -> None:
    scenario = _scenario([_job("v", cls="std"), _job("p", cls="prod", submit_at=100)])
    events = _two_running_then({"t": 100, "type": "preempt", "job": "v", "by": "p",
                                "reason": "priority"})  # fmt: skip
    assert _check(scenario, events) == [
        "t=100: preempt v: preempted (priority) after 100 s, inside its class min_runtime of 600 s",
    ]


def test_priority_preemption_needs_strictly_higher_priority_in_the_same_queue() -> None:
    scenario = _scenario([_job("v", cls="low"), _job("p", cls="low", submit_at=5),
                          _job("other", queue="b", cls="prod", submit_at=5)])  # fmt: skip
    same = _two_running_then({"t": 9, "type": "preempt", "job": "v", "by": "p",
                              "reason": "priority"})  # fmt: skip
    assert _check(scenario, same) == [
        "t=9: preempt v: p (priority 10) may not stop a job of its own queue with priority 10",
    ]
    across = _two_running_then({"t": 9, "type": "preempt", "job": "v", "by": "other",
                                "reason": "priority"})  # fmt: skip
    assert _check(scenario, across) == [
        "t=9: preempt v: priority preemption across queues (by other of b)",
    ]


def test_reclaim_from_a_queue_that_is_not_borrowing_is_caught() -> None:
    scenario = _scenario([_job("v", cls="low"), _job("p", queue="b", submit_at=5)])
    events = _two_running_then({"t": 9, "type": "preempt", "job": "v", "by": "p",
                                "reason": "reclaim"})  # fmt: skip
    assert _check(scenario, events) == [
        "t=9: preempt v: reclaim of queue a, which is not borrowing",
    ]


def test_reclaim_needs_a_preemptor_from_the_same_cohort() -> None:
    scenario = _scenario([_job("v", cls="low", gpus_per_worker=8, workers=2),
                          _job("p", queue="solo", submit_at=5)])  # fmt: skip
    events = [_admit(0, "v", {"n1": 8, "n2": 8}, workers=2),
              {"t": 9, "type": "preempt", "job": "v", "by": "p", "reason": "reclaim"}]  # fmt: skip
    assert _check(scenario, events) == [
        "t=9: preempt v: reclaim needs a preemptor from another queue of the victim's cohort; "
        "p is in solo",
    ]


# --------------------------------------------------------------------------- consistency


def test_a_job_table_that_disagrees_with_the_events_is_caught() -> None:
    scenario = _scenario([_job("x")])
    events = [_admit(10, "x", {"n1": 4}), {"t": 1010, "type": "finish", "job": "x"}]
    report = _report(scenario, events)
    report["jobs"][0].update(started_at=0, state="running")
    report["summary"]["preemptions"] = 3
    assert check_report(scenario, report, conservation=False) == [
        "jobs: x: started_at is 0, but the events give 10.0",
        "jobs: x: state is 'running', but the events finished it at t=1010",
        "summary: preemptions is 3, but the events give 0",
    ]


def test_a_finish_that_does_not_match_the_duration_is_caught() -> None:
    scenario = _scenario([_job("x", duration=1000)])
    events = [_admit(0, "x", {"n1": 4}), {"t": 400, "type": "finish", "job": "x"}]
    assert _check(scenario, events) == ["t=400: finish x: ran 400 s, but its duration is 1000"]


def test_admission_before_submission_and_events_out_of_order_are_caught() -> None:
    scenario = _scenario([_job("x", submit_at=50), _job("y")])
    events = [_admit(20, "x", {"n1": 4}), _admit(10, "y", {"n2": 4})]
    assert _check(scenario, events) == [
        "t=10: events[1] (admit): events out of time order",
        "t=20: admit x: admitted before its submission at 50",
    ]


def test_an_event_for_an_unknown_job_is_caught() -> None:
    scenario = _scenario([_job("x")])
    assert _check(scenario, [{"t": 0, "type": "finish", "job": "ghost"}]) == [
        "t=0: finish 'ghost': names no job of the scenario",
    ]


def test_preemption_counts_leave_out_node_failures() -> None:
    scenario = _scenario([_job("x")], events=[{"at": 5, "node": "n1", "action": "fail"}])
    events = [
        _admit(0, "x", {"n1": 4}),
        {"t": 5, "type": "preempt", "job": "x", "reason": "node-failure"},
    ]
    report = _report(scenario, events)
    assert report["jobs"][0]["preemptions"] == 0
    assert check_report(scenario, report) == []
    report["jobs"][0]["preemptions"] = 1
    assert check_report(scenario, report) == [
        "jobs: x: preemptions is 1, but the events hold 0 (reclaim, fair-share, priority)",
    ]


def test_stopping_a_job_for_a_preemptor_that_never_starts_is_caught() -> None:
    scenario = _scenario([_job("v", cls="low"), _job("p", submit_at=5), _job("z")])
    events = _two_running_then(
        {"t": 9, "type": "preempt", "job": "v", "by": "p", "reason": "priority"},
        _admit(100, "z", {"n2": 4}),  # the report goes on past the deadline
    )
    assert _check(scenario, events) == [
        "t=9: preempt v: its preemptor p did not start by t=19 "
        "(the victims' grace period plus one cycle)",
    ]
    started = [*events[:2], _admit(9, "p", {"n1": 4}), events[2]]
    assert _check(scenario, started) == []


def test_shrinking_an_elastic_job_follows_the_preemption_rules() -> None:
    scenario = _scenario([_job("el", workers=4, gpus_per_worker=2, min_workers=1),
                          _job("p", cls="prod", submit_at=5, gpus_per_worker=2)])  # fmt: skip
    shrink = {"t": 100, "type": "scale", "job": "el", "workers": 3, "placement": {"n1": 6},
              "by": "p", "reason": "priority"}  # fmt: skip
    events = [_admit(0, "el", {"n1": 8}, workers=4), shrink, _admit(100, "p", {"n1": 2})]
    assert _check(scenario, events) == [
        "t=100: scale el: preempted (priority) after 100 s, inside its class min_runtime of 600 s",
    ]
    later = [
        _admit(0, "el", {"n1": 8}, workers=4),
        {**shrink, "t": 700},
        _admit(700, "p", {"n1": 2}),
    ]
    assert _check(scenario, later) == []


def test_decisions_of_one_instant_may_be_listed_in_any_order() -> None:
    # queue a (nominal 8) borrows once "big" is admitted; the reclaim for b's job is listed
    # first, though the engine decided it after admitting "big" in the same cycle
    scenario = _scenario([_job("v", cls="low"), _job("big", gpus_per_worker=8, submit_at=5),
                          _job("p", queue="b", submit_at=5)])  # fmt: skip
    events = [
        _admit(0, "v", {"n1": 4}),
        {"t": 9, "type": "preempt", "job": "v", "by": "p", "reason": "reclaim"},
        _admit(9, "big", {"n2": 8}),
        _admit(9, "p", {"n1": 4}, queue="b"),
    ]
    assert _check(scenario, events) == []
    # a class that cannot borrow, listed after a borrowing admit of the same instant
    scenario = _scenario([_job("s", gpus_per_worker=8), _job("p", cls="prod", submit_at=0)])
    events = [_admit(0, "s", {"n1": 8}), _admit(0, "p", {"n2": 4})]
    assert _check(scenario, events) == []
    # at a later instant s only counts as the queue's borrower if it ranks below p: here not
    classes = [
        {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
        {"name": "std", "priority": 2000},
    ]
    scenario = _scenario([_job("s", gpus_per_worker=8), _job("p", cls="prod", submit_at=0)],
                         service_classes=classes)  # fmt: skip
    later = [_admit(0, "s", {"n1": 8}), _admit(5, "p", {"n2": 4})]
    assert _check(scenario, later) == [
        "t=5: admit p: class prod cannot borrow, but queue a now uses 12 h100 above its nominal 8, "
        "more than its lower-priority jobs that may borrow hold",
    ]


# --------------------------------------------------------------------------- work conservation


def test_a_job_left_waiting_while_it_fits_is_caught() -> None:
    scenario = _scenario([
        {"name": "x", "queue": "a", "class": "std", "submit_at": 0, "workers": 1,
         "gpus_per_worker": 4, "flavor": "h100", "duration": 100},
    ])  # fmt: skip
    late = [_admit(20, "x", {"n1": 4}), {"t": 120, "type": "finish", "job": "x"}]
    assert _check(scenario, late, conservation=True) == [
        "t=0: job x: still pending after the cycle, although its quota and free capacity of "
        "h100 hold it (work conservation)"
    ]
    on_time = [_admit(0, "x", {"n1": 4}), {"t": 100, "type": "finish", "job": "x"}]
    assert _check(scenario, on_time, conservation=True) == []
    fifo = _report(scenario, late) | {"policy": "fifo"}  # FIFO gives it up by design
    assert check_report(scenario, fifo) == []


def test_a_job_its_quota_or_the_free_gpus_cannot_hold_may_wait() -> None:
    scenario = _scenario([
        {"name": "held", "queue": "solo", "class": "std", "submit_at": 0, "workers": 1,
         "gpus_per_worker": 4, "flavor": "h100", "duration": 100},
        {"name": "over-quota", "queue": "solo", "class": "std", "submit_at": 1, "workers": 1,
         "gpus_per_worker": 4, "flavor": "h100", "duration": 100},
        {"name": "wide", "queue": "a", "class": "std", "submit_at": 2, "workers": 3,
         "gpus_per_worker": 8, "flavor": "h100", "duration": 100},
        {"name": "rack", "queue": "a", "class": "std", "submit_at": 3, "workers": 2,
         "gpus_per_worker": 4, "flavor": "h100", "duration": 100, "topology": {"required": "rack"}},
    ])  # fmt: skip
    events = [
        _admit(0, "held", {"n1": 4}, queue="solo"),
        {"t": 100, "type": "finish", "job": "held"},
        _admit(100, "over-quota", {"n1": 4}, queue="solo"),
        {"t": 200, "type": "finish", "job": "over-quota"},
    ]
    # over-quota waits for solo's nominal of 4 and wide needs 24 GPUs of 16: both may wait.
    # rack needs 8 GPUs in one rack: n2 (rack r2) is free, so it should have started
    violations = _check(scenario, events, conservation=True)
    assert violations[0] == (
        "t=3: job rack: still pending after the cycle, although its quota and free capacity of "
        "h100 hold it (work conservation)"
    )
    assert {v.split(": ")[1] for v in violations} == {"job rack"}  # at every later cycle too


def test_a_long_job_may_wait_behind_the_reservation_but_a_short_one_may_not() -> None:
    scenario = load_scenario(SCENARIOS / "backfill-gang.yaml")
    events = [
        _admit(0, "running", {"n1": 8, "n2": 4}, queue="q", flavor="a100", workers=3),
        {"t": 1, "type": "reserve", "job": "gang", "start": 1000, "cluster": "main",
         "flavor": "a100", "nodes": {"n1": 8, "n2": 8}},
        {"t": 1000, "type": "finish", "job": "running"},
        _admit(1000, "gang", {"n1": 8, "n2": 8}, queue="q", flavor="a100", workers=2),
        {"t": 1500, "type": "finish", "job": "gang"},
        _admit(1500, "short", {"n2": 2}, queue="q", flavor="a100"),
        _admit(1500, "long", {"n1": 2}, queue="q", flavor="a100"),
        {"t": 1800, "type": "finish", "job": "short"},
        {"t": 3500, "type": "finish", "job": "long"},
    ]  # fmt: skip
    # short would end before the reservation starts and fits n2's 4 free GPUs; long would not
    assert _check(scenario, events, conservation=True) == [
        f"t={t}: job short: still pending after the cycle, although its quota and free capacity "
        "of a100 hold it (work conservation)"
        for t in (2, 3)  # its submission, then long's
    ]


def test_a_within_nominal_job_one_borrower_would_make_room_for_must_start_in_time() -> None:
    scenario = _scenario([
        {"name": "borrow", "queue": "b", "class": "low", "submit_at": 0, "workers": 2,
         "gpus_per_worker": 8, "flavor": "h100", "duration": 5000},
        {"name": "mine", "queue": "a", "class": "std", "submit_at": 100, "workers": 1,
         "gpus_per_worker": 8, "flavor": "h100", "duration": 100},
    ])  # fmt: skip
    start = [_admit(0, "borrow", {"n1": 8, "n2": 8}, queue="b", workers=2)]
    ignored = [
        *start,
        {"t": 5000, "type": "finish", "job": "borrow"},
        _admit(5000, "mine", {"n1": 8}),
        {"t": 5100, "type": "finish", "job": "mine"},
    ]
    # a is at 0 of its nominal 8; b borrows all 16; stopping borrow alone makes room
    assert _check(scenario, ignored, conservation=True) == [
        "t=100: job mine: within nominal and stopping borrow alone would make room, but it did "
        "not start by t=140 (invariant 7)"
    ]
    reclaimed = [
        *start,
        {"t": 100, "type": "preempt", "job": "borrow", "reason": "reclaim", "by": "mine"},
        {"t": 100, "type": "requeue", "job": "borrow"},
        _admit(100, "mine", {"n1": 8}),
        {"t": 200, "type": "finish", "job": "mine"},
        _admit(200, "borrow", {"n1": 8, "n2": 8}, queue="b", workers=2),
        {"t": 5200, "type": "finish", "job": "borrow"},
    ]
    assert _check(scenario, reclaimed, conservation=True) == []


def test_a_fair_share_stop_both_share_tests_forbid_is_caught() -> None:
    """b (nominal 8 of a pool of 24) runs 12 GPUs: share 4/24. a runs 4. Stopping b's 4-GPU job
    for a's 8-GPU job leaves b at 0 and puts a at 4/24: neither test passes. For a 4-GPU job, a
    stays at its nominal (share 0), which the first test allows."""

    def case(workers: int) -> list[str]:
        jobs = [("bj1", "b", "low", 8), ("bj2", "b", "low", 4), ("aj", "a", "std", 4)]
        scenario = _scenario(
            [
                {"name": n, "queue": q, "class": c, "submit_at": 0, "workers": 1,
                 "gpus_per_worker": g, "flavor": "h100", "duration": None}
                for n, q, c, g in jobs
            ] + [{"name": "p", "queue": "a", "class": "std", "submit_at": 600,
                  "workers": workers, "gpus_per_worker": 4, "flavor": "h100", "duration": None}],
            clusters=[{"name": "main", "nodes": [
                {"name": f"n{i}", "gpus": {"h100": 8}, "labels": {"rack": "r1"}}
                for i in (1, 2, 3)
            ]}],
            queues=[{"name": q, "cohort": "c", "quotas": {"h100": {"nominal": 8}}}
                    for q in ("a", "b", "idle")],
        )  # fmt: skip
        placement = {"n2": 4, "n3": 4} if workers == 2 else {"n2": 4}
        events = [
            _admit(0, "bj1", {"n1": 8}, queue="b"),
            _admit(0, "bj2", {"n2": 4}, queue="b"),
            _admit(0, "aj", {"n2": 4}),
            {"t": 700, "type": "preempt", "job": "bj2", "reason": "fair-share", "by": "p"},
            {"t": 700, "type": "requeue", "job": "bj2"},
            _admit(700, "p", placement, workers=workers),
        ]
        return _check(scenario, events)

    assert case(workers=2) == [
        "t=700: preempt bj2: fair-share for p, but a's share after admitting it (0.166667) is "
        "above b's after the stop (0) and not below it before (0.166667)"
    ]
    assert case(workers=1) == []
