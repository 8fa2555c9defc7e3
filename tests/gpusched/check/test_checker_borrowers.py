"""The checker's rule for classes that may not borrow (docs/SCHEDULING.md section 4, who
borrows in a queue): such a job keeps its queue within nominal, counting the queue's
lower-priority jobs that may borrow as its borrowers."""

from __future__ import annotations

from tests.gpusched.check.test_checker import _admit, _check, _job, _scenario


def test_a_class_that_cannot_borrow_running_above_nominal_is_caught() -> None:
    scenario = _scenario([_job("p", cls="prod", gpus_per_worker=8, workers=2)])
    events = [_admit(0, "p", {"n1": 8, "n2": 8}, workers=2)]
    assert _check(scenario, events) == [
        "t=0: admit p: class prod cannot borrow, but queue a now uses 16 h100 above its nominal 8, "
        "more than its lower-priority jobs that may borrow hold",
    ]


def test_a_class_that_cannot_borrow_may_run_above_nominal_that_lower_jobs_borrow() -> None:
    """Who borrows in a queue: its lowest-priority jobs. A prod job admitted while a `low` job
    of its queue holds the part above nominal is within nominal; a `std` job (higher priority
    than `low`, lower than prod) holds it just as well, but not a job admitted with it."""
    jobs = [_job("l", cls="low", gpus_per_worker=8), _job("p", cls="prod", gpus_per_worker=4)]
    scenario = _scenario(jobs)
    assert _check(scenario, [_admit(0, "l", {"n1": 8}), _admit(10, "p", {"n2": 4})]) == []
    prod_first = [_admit(0, "p", {"n2": 4}), _admit(10, "l", {"n1": 8})]
    assert _check(scenario, prod_first) == []  # the low job borrows, admitted after
    two_prod = _scenario([_job("q", cls="prod", gpus_per_worker=8), *jobs[1:]])
    assert _check(two_prod, [_admit(0, "q", {"n1": 8}), _admit(10, "p", {"n2": 4})]) == [
        "t=10: admit p: class prod cannot borrow, but queue a now uses 12 h100 above its "
        "nominal 8, more than its lower-priority jobs that may borrow hold",
    ]
