"""The checker reads a cycle's reservations as one set (docs/SCHEDULING.md section 6): every
``reserve`` event of one instant holds together, and a later instant's set replaces it."""

from __future__ import annotations

from typing import Any

from gpusched.check.checker import check_report
from gpusched.sim.scenario import Scenario, parse_scenario
from tests.gpusched.check.test_checker import _admit, _report

LONG_FITS = (
    "t=3: job long: still pending after the cycle, although its quota and free capacity of a100 "
    "hold it (work conservation)"
)


def _reserve(t: float, job: str, nodes: list[str]) -> dict[str, Any]:
    return {"t": t, "type": "reserve", "job": job, "start": 1000, "flavor": "a100",
            "nodes": nodes}  # fmt: skip


def _scenario() -> Scenario:
    """backfill-gang with three queues: gang in q, short in r, long in p. 4 GPUs of n2 are
    free until t=1000."""
    job = {"class": "std", "workers": 1, "gpus_per_worker": 2, "flavor": "a100"}
    return parse_scenario({
        "name": "two-reservations", "cycle_interval": 10,
        "flavors": [{"name": "a100", "resource": "nvidia.com/gpu"}],
        "clusters": [{"name": "main", "nodes": [
            {"name": "n1", "gpus": {"a100": 8}}, {"name": "n2", "gpus": {"a100": 8}}]}],
        "service_classes": [{"name": "std", "priority": 100, "can_borrow": False}],
        "queues": [{"name": q, "quotas": {"a100": {"nominal": 16}}} for q in ("q", "r", "p")],
        "jobs": [
            {**job, "name": "running", "queue": "q", "submit_at": 0, "workers": 3,
             "gpus_per_worker": 4, "duration": 1000, "estimated_runtime": 1000},
            {**job, "name": "gang", "queue": "q", "submit_at": 1, "workers": 2,
             "gpus_per_worker": 8, "duration": 500, "estimated_runtime": 500},
            {**job, "name": "short", "queue": "r", "submit_at": 2, "duration": 300,
             "estimated_runtime": 300},
            {**job, "name": "long", "queue": "p", "submit_at": 3, "duration": 2000,
             "estimated_runtime": 2000},
        ],
    }, source="two-reservations.yaml")  # fmt: skip


def _violations(reserves: list[dict[str, Any]]) -> list[str]:
    """``long`` (2 GPUs, 2,000 s) waits from t=3 to 1500, so only reservations it would outlive
    may keep it off n2's free GPUs."""
    scenario = _scenario()
    events = [
        _admit(0, "running", {"n1": 8, "n2": 4}, queue="q", flavor="a100", workers=3),
        *reserves,
        {"t": 1000, "type": "finish", "job": "running"},
        _admit(1000, "gang", {"n1": 8, "n2": 8}, queue="q", flavor="a100", workers=2),
        {"t": 1500, "type": "finish", "job": "gang"},
        _admit(1500, "short", {"n1": 2}, queue="r", flavor="a100"),
        _admit(1500, "long", {"n2": 2}, queue="p", flavor="a100"),
        {"t": 1800, "type": "finish", "job": "short"},
        {"t": 3500, "type": "finish", "job": "long"},
    ]
    events.sort(key=lambda e: e["t"])
    return check_report(scenario, _report(scenario, events))


def test_every_reservation_of_one_instant_holds() -> None:
    """gang's reservation covers n2; short's, reported after it at the same instant, only n1.
    Read as one set, n2 stays reserved and ``long`` may wait."""
    reserves = [_reserve(1, "gang", ["n1", "n2"]), _reserve(1, "short", ["n1"])]
    assert _violations(reserves) == []


def test_a_later_instants_reservations_replace_the_earlier_set() -> None:
    """At t=3 the cycle reports short's reservation alone: gang's no longer holds, n2's free
    GPUs would have held ``long``."""
    first = [_reserve(1, "gang", ["n1", "n2"]), _reserve(1, "short", ["n1"])]
    reserves = [*first, _reserve(3, "short", ["n1"])]
    assert _violations(reserves) == [LONG_FITS]
