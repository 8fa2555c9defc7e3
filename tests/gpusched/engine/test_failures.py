"""Node failures, max_runtime and cancellation, in the engine and through the simulator."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Node, ServiceClass
from gpusched.sim.simulate import simulate
from tests.gpusched.engine_builders import CLASSES, queue, running, scenario, snapshot


def test_a_failed_node_stops_every_job_with_a_worker_on_it() -> None:
    node_list = [Node("n0", {"h100": 8}, failed=True, schedulable=False), Node("n1", {"h100": 8})]
    busy = [
        running("spread", "q", {"n0": 4, "n1": 4}, gpus=4),
        running("safe", "q", {"n1": 2}, gpus=2),
    ]
    result = run_cycle(snapshot(node_list, [queue("q", 16)], busy))
    assert [(s.job, s.reason, s.requeue) for s in result.stops] == [
        ("spread", "node-failure", True)
    ]


def test_a_drained_node_stops_and_requeues_its_jobs_and_takes_no_new_work() -> None:
    node_list = [Node("n0", {"h100": 8}, draining=True), Node("n1", {"h100": 8})]
    busy = [
        running("spread", "q", {"n0": 4, "n1": 4}, gpus=4),
        running("safe", "q", {"n1": 2}, gpus=2),
    ]
    result = run_cycle(snapshot(node_list, [queue("q", 16)], busy))
    assert [(s.job, s.reason, s.requeue) for s in result.stops] == [("spread", "node-drain", True)]
    assert all("n0" not in admit.placement for admit in result.admits)


def test_a_drained_gang_stops_through_its_grace_period_and_restarts_elsewhere() -> None:
    sc = scenario(
        [{"name": "gang", "submit_at": 0, "workers": 2, "gpus_per_worker": 8, "duration": 1000}],
        events=[
            {"at": 100, "node": "n0", "action": "drain"},
            {"at": 300, "node": "n0", "action": "uncordon"},
        ],
        clusters=[
            {"name": "main", "nodes": [{"name_prefix": "n", "count": 3, "gpus": {"h100": 8}}]}
        ],
        service_classes=[
            {"name": "std", "priority": 100, "preemptible": True, "grace_period": 20},
        ],
    )
    report = simulate(sc)
    gang = _events(report, "gang")
    assert gang[:3] == [(0, "admit"), (100, "preempt"), (120, "requeue")]  # after its grace
    preempt = next(e for e in report["events"] if e["type"] == "preempt")
    assert preempt["reason"] == "node-drain"
    second = next(e for e in report["events"] if e["type"] == "admit" and e["t"] > 0)
    # restarted elsewhere once its GPUs came free after the grace period, before the uncordon
    assert "n0" not in second["placement"] and 120 <= second["t"] < 300


def test_a_job_past_its_max_runtime_is_stopped_and_not_requeued() -> None:
    limited = ServiceClass("std", priority=100, max_runtime=500)
    classes = (*[c for c in CLASSES if c.name != "std"], limited)
    busy = [
        running("old", "q", {"n0": 1}, started_at=0),
        running("new", "q", {"n0": 1}, started_at=900),
    ]
    result = run_cycle(
        snapshot([Node("n0", {"h100": 8})], [queue("q", 16)], busy, now=1000, classes=classes)
    )
    assert [(s.job, s.reason, s.requeue) for s in result.stops] == [("old", "max-runtime", False)]


def _events(report: dict[str, Any], job: str) -> list[tuple[Any, str]]:
    return [(e["t"], e["type"]) for e in report["events"] if e.get("job") == job]


def test_node_failure_requeues_the_gang_with_its_original_submit_time() -> None:
    sc = scenario(
        [
            {"name": "gang", "submit_at": 5, "workers": 2, "gpus_per_worker": 8, "duration": 1000},
            {"name": "later", "submit_at": 500, "gpus_per_worker": 8, "duration": 1000},
        ],
        events=[
            {"at": 100, "node": "n0", "action": "fail"},
            {"at": 400, "node": "n0", "action": "recover"},
        ],
    )
    report = simulate(sc)
    gang = _events(report, "gang")
    assert gang[:3] == [(5, "admit"), (100, "preempt"), (100, "requeue")]
    preempt = next(e for e in report["events"] if e["type"] == "preempt")
    assert preempt["reason"] == "node-failure"
    # after recovery the gang starts again from zero
    restarts = [t for t, kind in gang if kind == "admit"]
    assert restarts[1] == 400
    row = next(j for j in report["jobs"] if j["name"] == "gang")
    assert row["submitted_at"] == 5 and row["state"] == "finished"
    assert row["finished_at"] == 1400  # no checkpoint: the work restarts from zero


def test_checkpoints_keep_work_done_before_a_preemption() -> None:
    sc = scenario(
        [
            {
                "name": "ck",
                "submit_at": 0,
                "gpus_per_worker": 8,
                "workers": 2,
                "duration": 1000,
                "checkpoint_interval": 300,
            }
        ],
        events=[
            {"at": 700, "node": "n1", "action": "fail"},
            {"at": 800, "node": "n1", "action": "recover"},
        ],
    )
    report = simulate(sc)
    row = next(j for j in report["jobs"] if j["name"] == "ck")
    # 600 s checkpointed before the failure at 700: 400 s left from t=800
    assert row["finished_at"] == 1200


@pytest.mark.parametrize(("interval", "finished_at"), [(300, 1200), (None, 1800)])
def test_a_preempted_job_loses_the_work_since_its_last_checkpoint(
    interval: int | None, finished_at: int
) -> None:
    """Rule 7: stopped by priority at t=700, a job checkpointing every 300 s keeps 600 s of its
    1000 s and finishes 400 s after it restarts at t=800; without checkpoints it starts over."""
    ck: dict[str, object] = {
        "name": "ck", "submit_at": 0, "class": "low", "gpus_per_worker": 8, "workers": 2,
        "duration": 1000,
    }  # fmt: skip
    if interval is not None:
        ck["checkpoint_interval"] = interval
    urgent = {"name": "urgent", "submit_at": 700, "gpus_per_worker": 8, "workers": 2,
              "duration": 100}  # fmt: skip
    report = simulate(scenario([ck, urgent]))
    stops = [(e["t"], e["job"], e["reason"]) for e in report["events"] if e["type"] == "preempt"]
    assert stops == [(700, "ck", "priority")]
    row = next(j for j in report["jobs"] if j["name"] == "ck")
    assert (row["preemptions"], row["finished_at"]) == (1, finished_at)


def test_max_runtime_fails_the_job_in_the_report() -> None:
    sc = scenario(
        [{"name": "runaway", "submit_at": 0, "class": "capped", "duration": 5000}],
        service_classes=[{"name": "capped", "priority": 1, "max_runtime": 600}],
    )
    report = simulate(sc)
    row = report["jobs"][0]
    assert row["state"] == "failed" and row["finished_at"] == 600
    assert (600, "fail") in _events(report, "runaway")
    assert report["summary"]["failed"] == 1


def test_cancelling_a_job_that_failed_during_its_grace_period_changes_nothing() -> None:
    sc = scenario(
        [{"name": "runaway", "submit_at": 0, "class": "capped", "duration": 5000}],
        service_classes=[{"name": "capped", "priority": 1, "max_runtime": 600, "grace_period": 30}],
        events=[{"at": 610, "job": "runaway", "action": "cancel"}],
    )
    report = simulate(sc)
    row = report["jobs"][0]
    assert (row["state"], row["finished_at"]) == ("failed", 600)
    assert [kind for _, kind in _events(report, "runaway")] == ["admit", "preempt", "fail"]
    assert report["summary"]["failed"] == 1 and report["summary"]["cancelled"] == 0


def test_cancel_removes_a_pending_job_and_stops_a_running_one() -> None:
    sc = scenario(
        [
            {"name": "run", "submit_at": 0, "gpus_per_worker": 8, "workers": 2, "duration": 1000},
            {"name": "wait", "submit_at": 1, "gpus_per_worker": 8, "duration": 100},
        ],
        events=[
            {"at": 50, "job": "wait", "action": "cancel"},
            {"at": 200, "job": "run", "action": "cancel"},
        ],
    )
    report = simulate(sc)
    states = {j["name"]: j["state"] for j in report["jobs"]}
    assert states == {"run": "cancelled", "wait": "cancelled"}
    assert [e for e in _events(report, "wait") if e[1] != "reserve"] == [(50, "cancel")]
    assert report["summary"]["cancelled"] == 2


def test_a_waiting_preemptor_that_loses_its_node_is_stopped_once() -> None:
    """p waits for its victim's grace period with a worker on n1, which fails: one stop, back
    to pending. (It used to get a second stop, which the simulator took for a running job's.)"""
    lost = Node("n1", {"h100": 8}, {}, schedulable=False, failed=True)
    waiting = running("p", "q", {"n1": 4}, gpus=4, cls="prod", started_at=None, start_at=1010.0)
    victim = running(
        "v", "q", {"n0": 4}, gpus=4, cls="low", stopping=True, release_at=1010.0, held_for="p"
    )
    snap = snapshot([Node("n0", {"h100": 8}), lost], [queue("q", 16)], [waiting, victim])
    assert [(s.job, s.reason) for s in run_cycle(snap).stops] == [("p", "node-failure")]
