"""Quota rules (SCHEDULING.md section 2), including its worked check."""

from __future__ import annotations

import pytest

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Flavor, Queue
from gpusched.engine.quota import QuotaState, lent_by_member
from tests.gpusched.engine_builders import nodes, pending, queue, running, snapshot


def admitted_count(queues: list[Queue], asking: str, busy: dict[str, int] | None = None) -> int:
    """How many 1-GPU jobs of queue ``asking`` start on a big, idle cluster."""
    admitted = [
        running(f"{q}-busy-{i}", q, {f"n{i}": 1}) for q, n in (busy or {}).items() for i in range(n)
    ]
    jobs = [pending(f"{asking}-{i:02d}", asking, submitted_at=i) for i in range(30)]
    result = run_cycle(snapshot(nodes("n", 8, {"h100": 8}), queues, admitted, jobs))
    return len(result.admits)


def test_worked_check_first_queue_uses_all_ten_while_the_second_is_idle() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 6, cohort="c")]
    assert admitted_count(queues, "a") == 10


def test_worked_check_borrowing_limit_two_caps_the_first_queue_at_six() -> None:
    queues = [queue("a", 4, cohort="c", borrowing_limit=2), queue("b", 6, cohort="c")]
    assert admitted_count(queues, "a") == 6


def test_worked_check_lending_limit_two_lends_only_two_of_the_second_queue() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 6, cohort="c", lending_limit=2)]
    assert admitted_count(queues, "a") == 6
    assert admitted_count(queues, "b") == 10


def test_queue_without_cohort_never_goes_above_nominal() -> None:
    assert admitted_count([queue("solo", 5)], "solo") == 5


def test_class_that_may_not_borrow_stops_at_nominal() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 6, cohort="c")]
    jobs = [pending(f"p{i}", "a", cls="prod", submitted_at=i) for i in range(10)]
    result = run_cycle(snapshot(nodes("n", 2, {"h100": 8}), queues, (), jobs))
    assert len(result.admits) == 4
    assert not any(a.borrowing for a in result.admits)
    info = result.pending["p4"]
    assert info.reason == "cannot-borrow"
    assert "may not borrow" in info.message and "uses 4 of 4 h100" in info.message


def test_pool_full_message_names_the_cohort_and_the_numbers() -> None:
    queues = [queue("a", 4, cohort="research"), queue("b", 6, cohort="research")]
    busy = [running(f"b{i}", "b", {"n0": 1}, cls="prod") for i in range(8)]
    jobs = [pending(f"a{i}", "a", submitted_at=i) for i in range(4)]
    result = run_cycle(snapshot(nodes("n", 2, {"h100": 8}), queues, busy, jobs))
    assert len(result.admits) == 2
    info = result.pending["a2"]
    assert info.reason == "cohort-pool"
    assert "cohort pool of research (10 h100) has 0 free" in info.message
    assert info.position == 1


@pytest.mark.parametrize(
    ("used_a", "used_b", "headroom_a"),
    [(0, 0, 10), (4, 0, 6), (4, 6, 0), (0, 6, 4), (2, 3, 5)],
)
def test_headroom_is_what_the_pool_has_left(used_a: int, used_b: int, headroom_a: int) -> None:
    state = QuotaState([queue("a", 4, cohort="c"), queue("b", 6, cohort="c")])
    state.add("a", "h100", used_a)
    state.add("b", "h100", used_b)
    assert state.headroom("a", "h100") == headroom_a


def test_reserved_part_of_nominal_is_never_lent() -> None:
    state = QuotaState([queue("a", 4, cohort="c"), queue("b", 6, cohort="c", lending_limit=2)])
    state.add("a", "h100", 6)
    assert state.headroom("a", "h100") == 0
    assert state.headroom("b", "h100") == 4  # its unlent 4 stay reserved for it


@pytest.mark.parametrize(
    ("queues", "units", "can_borrow", "never"),
    [
        # no cohort: the nominal quota is all the queue will ever have
        ([queue("a", 4)], 4, True, False),
        ([queue("a", 4)], 5, True, True),
        # a class that may not borrow stops at nominal, whatever the cohort lends
        ([queue("a", 4, cohort="c"), queue("b", 6, cohort="c")], 5, False, True),
        ([queue("a", 4, cohort="c"), queue("b", 6, cohort="c")], 10, True, False),
        # borrowing is bounded by the borrowing limit and by what the cohort lends
        ([queue("a", 4, cohort="c", borrowing_limit=2), queue("b", 6, cohort="c")], 7, True, True),
        ([queue("a", 4, cohort="c"), queue("b", 6, cohort="c", lending_limit=2)], 6, True, False),
        ([queue("a", 4, cohort="c"), queue("b", 6, cohort="c", lending_limit=2)], 7, True, True),
    ],
)
def test_never_fits_is_what_the_quota_refuses_even_with_the_whole_cohort_idle(
    queues: list[Queue], units: int, can_borrow: bool, never: bool
) -> None:
    state = QuotaState(queues)
    assert state.never_fits("a", "h100", units, can_borrow) is never
    # cross-check with the admission test on an idle cohort
    assert (state.blocked_reason("a", "h100", units, can_borrow) is not None) is never


def test_a_job_larger_than_its_queue_can_ever_hold_says_so() -> None:
    jobs = [
        pending("big", "solo", gpus=8, cls="prod"),
        pending("wide", "a", gpus=8, workers=2, cls="prod"),
    ]
    queues = [queue("solo", 4), queue("a", 8, cohort="c"), queue("b", 8, cohort="c")]
    result = run_cycle(snapshot(nodes("n", 4, {"h100": 8}), queues, [], jobs))
    assert not result.admits
    big, wide = result.pending["big"], result.pending["wide"]
    assert big.reason == wide.reason == "quota-exceeded"
    assert "needs 8 h100, more than queue solo can ever use" in big.message
    assert "nominal quota of 4, and the queue has no cohort" in big.message
    assert "nominal quota of 8, and class prod may not borrow" in wide.message


def test_jobs_the_quota_can_never_hold_change_no_decision_with_or_without_explanations() -> None:
    # "both" can never fit its h100 quota but fits on a100; "never" fits neither, and ranks
    # first (oldest). Without explanations the walk leaves out only "never".
    queues = [queue("a", {"h100": 4, "a100": 16})]
    jobs = [
        pending("never", "a", gpus=8, workers=4, flavors=("h100", "a100"), submitted_at=0),
        pending("both", "a", gpus=8, flavors=("h100", "a100"), submitted_at=1),
        pending("small", "a", gpus=4, submitted_at=2),
        pending("blocked", "a", gpus=8, flavors=("a100",), submitted_at=3, estimated_runtime=60),
    ]
    cluster = [
        *nodes("h", 1, {"h100": 8}),
        *nodes("g", 2, {"a100": 8}),
    ]
    busy = [running("busy", "a", {"g1": 8}, flavor="a100")]
    snap = snapshot(cluster, queues, busy, jobs, flavors=(Flavor("h100"), Flavor("a100")))
    explained = run_cycle(snap)
    quiet = run_cycle(snap, explain_pending=False)
    assert {a.job: a.flavor for a in quiet.admits} == {"both": "a100", "small": "h100"}
    assert quiet.admits == explained.admits
    assert quiet.reservation == explained.reservation
    assert quiet.reservation is not None and quiet.reservation.job == "blocked"
    assert explained.pending["never"].reason == "quota-exceeded"


def test_what_the_borrowers_use_is_shown_as_lent_by_the_members_with_unused_lendable_nominal() -> (
    None
):
    # b and c lend; a borrows 6 above its nominal 4. c can lend only 2 (its lending limit), b 8:
    # 6 spread 8:2 -> 4.8 and 1.2 -> 5 and 1 (largest remainder)
    quotas = {"a": (4, None), "b": (8, None), "c": (8, 2)}
    assert lent_by_member(quotas, {"a": 10, "b": 0, "c": 0}) == {"a": 0, "b": 5, "c": 1}
    # nobody borrows: nothing is lent
    assert lent_by_member(quotas, {"a": 4, "b": 3}) == {"a": 0, "b": 0, "c": 0}
    # what a member uses of its own nominal it cannot lend: b has 1 unused, c 2
    assert lent_by_member(quotas, {"a": 7, "b": 7, "c": 0}) == {"a": 0, "b": 1, "c": 2}
