"""The simulator: report format, determinism, command line, and engine purity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.generate import generate
from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import CycleResult
from gpusched.engine.state import EngineState
from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import Simulator, main, simulate
from tests.gpusched.engine_builders import scenario

ROOT = Path(__file__).resolve().parents[3]
TIMING = ("engine_seconds", "cycle_ms")


def without_timing(report: dict[str, Any]) -> dict[str, Any]:
    summary = {k: v for k, v in report["summary"].items() if k not in TIMING}
    return {**report, "summary": summary}


def _generated() -> dict[str, Any]:
    return generate(seed=4, nodes=30, queues=6, cohorts=2, jobs=250, mig_fraction=0.2)


def test_report_has_every_documented_section_and_summary_field() -> None:
    report = simulate(
        scenario(
            [{"name": "a1", "submit_at": 0, "gpus_per_worker": 4, "workers": 2, "duration": 3600}]
        )
    )
    assert set(report) == {"scenario", "policy", "summary", "queues", "jobs", "events"}
    assert set(report["summary"]) >= {
        "jobs",
        "finished",
        "failed",
        "cancelled",
        "never_started",
        "makespan",
        "mean_jct",
        "mean_wait",
        "p95_wait",
        "gpu_utilization",
        "preemptions",
        "cycles",
        "engine_seconds",
        "cycle_ms",
    }
    assert set(report["summary"]["cycle_ms"]) == {"mean", "p99", "max"}
    assert report["summary"]["makespan"] == 3600
    assert report["summary"]["gpu_utilization"] == 0.5
    assert report["queues"]["q"] == {"gpu_hours": 8.0, "mean_wait": 0.0, "jobs": 1}
    assert report["jobs"][0] == {
        "name": "a1",
        "queue": "q",
        "state": "finished",
        "submitted_at": 0,
        "started_at": 0,
        "finished_at": 3600,
        "workers": 2,
        "cluster": "main",
        "flavor": "h100",
        "preemptions": 0,
    }
    assert [e["type"] for e in report["events"]] == ["admit", "finish"]


def test_events_are_in_time_order() -> None:
    report = simulate(parse_scenario(_generated(), source="gen"))
    times = [e["t"] for e in report["events"]]
    assert times == sorted(times)


def test_the_same_scenario_gives_the_same_report_apart_from_timing() -> None:
    sc = parse_scenario(_generated(), source="gen")
    first, second = simulate(sc), simulate(sc)
    assert without_timing(first) == without_timing(second)


def test_run_cycle_gives_identical_decisions_for_the_same_snapshot() -> None:
    sim = Simulator(parse_scenario(_generated(), source="gen"))
    for job in sim.jobs.values():
        sim.submit(job)
    snap = sim.snapshot(0.0)
    kept = EngineState()
    assert run_cycle(snap, state=kept) == run_cycle(snap, state=kept) == run_cycle(snap)


def test_gpus_are_never_overcommitted_in_a_generated_replay() -> None:
    sc = parse_scenario(_generated(), source="gen")
    capacity = {n.name: dict(n.gpus) for c in sc.clusters for n in c.nodes}
    report = simulate(sc)
    held: dict[str, tuple[str, dict[str, int]]] = {}
    used: dict[tuple[str, str], int] = {}
    for e in report["events"]:
        job = e.get("job")
        if e["type"] in ("admit", "scale"):
            flavor = e.get("flavor") or held[job][0]
            for node, units in held.get(job, (flavor, {}))[1].items():
                used[(node, flavor)] -= units
            held[job] = (flavor, e["placement"])
            for node, units in e["placement"].items():
                used[(node, flavor)] = used.get((node, flavor), 0) + units
                assert used[(node, flavor)] <= capacity[node][flavor], e
        elif e["type"] in ("finish", "requeue", "cancel", "fail") and job in held:
            flavor, placement = held.pop(job)
            for node, units in placement.items():
                used[(node, flavor)] -= units


def test_command_line_writes_the_report_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = main(
        [str(ROOT / "scenarios" / "backfill-gang.yaml"), "--output", str(out), "--policy", "fifo"]
    )
    assert code == 0
    assert json.loads(out.read_text())["policy"] == "fifo"


def test_command_line_rejects_a_bad_scenario_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ncycle_interval: 10\nflavors: []\nclusters: []\n"
        "service_classes: []\nqueues: []\njobs:\n  - {name: j, queue: nope}\n"
    )
    assert main([str(bad)]) != 0
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "error" in err


def test_command_line_rejects_an_unknown_policy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(ROOT / "scenarios" / "mig-slices.yaml"), "--policy", "magic"]) != 0
    assert "unknown policy 'magic'" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [1, 3, 4])
def test_generated_replays_keep_every_rule_the_checker_knows(seed: int) -> None:
    from gpusched.check.checker import check_report

    data = generate(seed=seed, nodes=40, queues=10, cohorts=3, jobs=500, mig_fraction=0.2)
    sc = parse_scenario(data, source=f"generated-{seed}")
    for policy in ("default", "fifo", "greedy"):
        assert check_report(sc, simulate(sc, policy)) == [], policy


def test_run_cycle_does_not_depend_on_the_snapshots_it_saw_before() -> None:
    sim = Simulator(parse_scenario(_generated(), source="gen"))
    for job in list(sim.jobs.values())[:120]:
        sim.submit(job)
    first = sim.snapshot(0.0)
    kept = EngineState()
    before = run_cycle(first, state=kept)
    sim.apply(before, 0.0)
    later = sim.snapshot(50.0)
    run_cycle(later, state=kept)  # the state now holds the later snapshot's jobs
    assert run_cycle(first, state=kept) == before


@pytest.mark.parametrize("seed", [0, 2, 5])
def test_reusing_admission_failures_by_job_shape_changes_no_decision(seed: int) -> None:
    """The walk's shortcuts (failures reused by job shape; once only admissions remain, shapes
    their quota blocks passed over whole) must decide exactly what trying every job decides."""
    data = generate(seed=seed, nodes=30, queues=8, cohorts=2, jobs=300, mig_fraction=0.2)
    sc = parse_scenario(data, source=f"generated-{seed}")
    for policy in ("default", "fifo", "greedy"):
        memoized = simulate(sc, policy)
        fresh = Simulator(sc, policy, engine_state=EngineState(memoize=False)).run()
        assert memoized["events"] == fresh["events"], policy
        assert without_timing(memoized) == without_timing(fresh), policy


class _FromScratch(Simulator):
    """Every cycle on a fresh engine state, with every pending job explained."""

    def cycle(self, t: float) -> None:
        self.engine_state = EngineState()
        super().cycle(t)


@pytest.mark.parametrize("seed", [2, 5])
def test_state_kept_between_cycles_and_skipped_explanations_change_no_decision(seed: int) -> None:
    """The engine state keeps the layout, release ends, victim pools, quota usage and the
    ranking from cycle to cycle, and the walk skips jobs it need not explain. Replaying every
    cycle from scratch and with explanations must decide exactly the same."""
    data = generate(seed=seed, nodes=30, queues=8, cohorts=2, jobs=300, mig_fraction=0.2)
    sc = parse_scenario(data, source=f"generated-{seed}")
    kept = simulate(sc, "default")
    fresh = _FromScratch(sc, "default", explain_pending=True).run()
    assert kept["events"] == fresh["events"]
    assert without_timing(kept) == without_timing(fresh)


def _protected_victim(
    interval: float, extra_jobs: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[float]]:
    """``young1`` (min_runtime 600) fills the only node at 0; ``prod1`` waits for it from 100.
    The report and the times of the cycles up to 700."""
    classes = [
        {"name": "young", "priority": 10, "preemptible": True, "min_runtime": 600},
        {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
    ]
    jobs = [
        {"name": "young1", "class": "young", "submit_at": 0, "gpus_per_worker": 8},
        {"name": "prod1", "class": "prod", "submit_at": 100, "gpus_per_worker": 8},
        *extra_jobs,
    ]
    jobs[0]["duration"] = 5000
    sc = scenario(
        jobs,
        cycle_interval=interval,
        service_classes=classes,
        clusters=[{"name": "main", "nodes": [{"name": "n1", "gpus": {"h100": 8}}]}],
        queues=[{"name": "q", "quotas": {"h100": {"nominal": 8}}}],
    )
    times: list[float] = []

    class Watched(Simulator):
        def decided(self, result: CycleResult, t: float, seconds: float) -> None:
            if t <= 700:
                times.append(t)

    return Watched(sc).run(), times


def _preempted_at(report: dict[str, Any], job: str) -> list[float]:
    return [e["t"] for e in report["events"] if e["type"] == "preempt" and e["job"] == job]


def test_a_job_leaving_its_min_runtime_is_looked_at_by_the_next_periodic_cycle() -> None:
    report, cycles = _protected_victim(10, [])
    # min_runtime ends at 600: changed input for the periodic cycle at 610, not a cycle of its own
    assert _preempted_at(report, "young1") == [610]
    assert cycles == [0, 100, 610, 620]  # 620: the periodic cycle after a stop


def test_an_event_driven_cycle_before_the_periodic_one_preempts_at_once() -> None:
    report, cycles = _protected_victim(10, [{"name": "late", "class": "prod", "submit_at": 604}])
    assert _preempted_at(report, "young1") == [604]
    assert cycles == [0, 100, 604, 610]
