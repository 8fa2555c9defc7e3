"""The checker's stop bound (docs/SCHEDULING.md section 4, rule 1): a job already stopped and
requeued three times is stopped again by no fair-share or priority stop, and when its queue's
nominal could hold it, it is held to that nominal: it starts only within it, and no reclaim
stops it either."""

from __future__ import annotations

from typing import Any

from tests.gpusched.check.test_checker import _admit, _check, _job, _scenario


def stopped_events(times: int, reason: str = "priority") -> list[dict[str, Any]]:
    """v (low, 4 GPUs of queue a's nominal 8) is stopped ``times`` times by std jobs of its own
    queue, each finishing 50 s later, v coming back each time."""
    events: list[dict[str, Any]] = [_admit(0, "v", {"n1": 4})]
    for k in range(1, times + 1):
        t = 100 * k
        events += [
            {"t": t, "type": "preempt", "job": "v", "by": f"p{k}", "reason": reason},
            {"t": t, "type": "requeue", "job": "v"},
            _admit(t, f"p{k}", {"n1": 4}),
            {"t": t + 50, "type": "finish", "job": f"p{k}"},
            _admit(t + 50, "v", {"n1": 4}),
        ]
    return events


def jobs(times: int, *more: dict[str, Any]) -> list[dict[str, Any]]:
    out = [_job("v", cls="low", duration=None)]
    out += [_job(f"p{k}", submit_at=100 * k, duration=None) for k in range(1, times + 1)]
    return out + list(more)


def stopped_again(times: int, reason: str = "priority") -> list[str]:
    return _check(_scenario(jobs(times)), stopped_events(times, reason))


def test_a_fourth_priority_stop_is_caught() -> None:
    assert stopped_again(3) == []
    assert stopped_again(4) == [
        "t=400: preempt v: class low (held to nominal) is not preemptible (priority)",
        "t=400: preempt v: preempted (priority) after 3 earlier stops; from 3 on only a "
        "reclaim may stop it",
    ]


def test_a_reclaim_of_a_job_held_to_nominal_is_caught_and_of_its_queues_borrower_is_not() -> None:
    """After v's three stops, w (8 GPUs) takes queue a to 12 of its nominal 8; b's job b1
    reclaims 4 GPUs. Stopping w is allowed; stopping v, held to a's nominal, is not."""
    more = (_job("w", cls="low", submit_at=360, duration=None, gpus_per_worker=8),
            _job("b1", queue="b", submit_at=400, duration=None))  # fmt: skip
    before = [*stopped_events(3), _admit(360, "w", {"n2": 8})]
    for victim, problems in (
        ("w", []),
        ("v", ["t=400: preempt v: class low (held to nominal) is not preemptible (reclaim)"]),
    ):
        events = [
            *before,
            {"t": 400, "type": "preempt", "job": victim, "by": "b1", "reason": "reclaim"},
            {"t": 400, "type": "requeue", "job": victim},
            _admit(400, "b1", {"n1" if victim == "v" else "n2": 4}, queue="b"),
        ]
        assert _check(_scenario(jobs(3, *more)), events) == problems


def test_a_job_held_to_nominal_that_starts_borrowing_is_caught() -> None:
    """w holds all of queue a's nominal 8 when v comes back after its third stop."""
    more = (_job("w", cls="low", submit_at=340, duration=None, gpus_per_worker=8),)
    events = stopped_events(3)
    events.insert(-2, _admit(340, "w", {"n2": 8}))  # before p3 ends and v comes back at 350
    problems = _check(_scenario(jobs(3, *more)), events)
    assert problems == [
        "t=350: admit v: class low (held to nominal) cannot borrow, but queue a now uses 12 "
        "h100 above its nominal 8, more than its lower-priority jobs that may borrow hold"
    ]
