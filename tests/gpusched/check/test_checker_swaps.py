"""The checker's rule 8 (docs/SCHEDULING.md section 4; issue 21): no stop of a running job of
a queue, for a preemptor of another queue, in a cycle that has just admitted a job of that
queue whose GPUs would have held the preemptor."""

from __future__ import annotations

from typing import Any

from gpusched.check.checker import check_report
from tests.gpusched.check.test_checker import _report
from tests.gpusched.swap_scenario import swap_scenario

SWAP = (
    "t=100: preempt for b-new: same-cycle swap: stopped 1 GPU(s) of queue a although this "
    "cycle had just admitted a-new of a on 1 GPU(s) of gpu that would have held b-new (rule 8: "
    "take that admission back instead)"
)


def _admit(t: float, job: str, queue: str, gpus: int) -> dict[str, Any]:
    return {"t": t, "type": "admit", "job": job, "queue": queue, "cluster": "c",
            "flavor": "gpu", "workers": 1, "placement": {"n1": gpus}}  # fmt: skip


START = [_admit(0, "b-old", "b", 4), _admit(0, "a-old-1", "a", 1), _admit(0, "a-old-2", "a", 1)]
RESERVE = {"t": 50, "type": "reserve", "job": "b-big", "start": 3600, "cluster": "c",
           "flavor": "gpu", "nodes": {"n1": 4}}  # fmt: skip
STOP = [
    {"t": 100, "type": "preempt", "job": "a-old-1", "reason": "fair-share", "by": "b-new"},
    {"t": 100, "type": "requeue", "job": "a-old-1"},
]


def _check(events: list[dict[str, Any]]) -> list[str]:
    scenario = swap_scenario()
    return check_report(scenario, _report(scenario, events), conservation=False)


def test_a_same_cycle_swap_is_caught() -> None:
    # what the engine decided before rule 8: stop a-old-1 for b-new, after admitting a-new
    swap = [*START, RESERVE, *STOP, _admit(100, "a-new", "a", 1), _admit(100, "b-new", "b", 1)]
    assert _check(swap) == [SWAP]


def test_taking_the_admission_back_passes() -> None:
    assert _check([*START, RESERVE, _admit(100, "b-new", "b", 1)]) == []


def test_an_admission_walked_after_the_preemptor_is_no_swap() -> None:
    # a-new came after b-new in the walk: b-new could not have taken it back
    later = [*START, RESERVE, *STOP, _admit(100, "b-new", "b", 1), _admit(100, "a-new", "a", 1)]
    assert _check(later) == []


def test_a_reservation_the_same_cycle_made_holds_its_nodes_against_the_preemptor() -> None:
    """The report lists a cycle's reservation after its admissions, though the walk may have
    made it before the preemptor's turn: b-new (600 s) would still run at a reservation of n1
    starting at t=650, so it could not have taken a-new's GPU; at t=800 it would have."""
    swap = [*START, *STOP, _admit(100, "a-new", "a", 1), _admit(100, "b-new", "b", 1)]
    for start, problems in ((650, []), (800, [SWAP])):
        made_now = {**RESERVE, "t": 100, "start": start}
        assert _check([*swap, made_now]) == problems
