"""The checker's stop bound (docs/SCHEDULING.md section 4, rule 1): a job already stopped and
requeued three times may be stopped again only by a reclaim."""

from __future__ import annotations

from typing import Any

from tests.gpusched.check.test_checker import _admit, _check, _job, _scenario


def stopped_again(times: int, reason: str = "priority") -> list[str]:
    """v (low) is stopped ``times`` times by std jobs of its own queue, each finishing 50 s
    later, v coming back each time."""
    jobs = [_job("v", cls="low", duration=None)]
    jobs += [_job(f"p{k}", submit_at=100 * k, duration=None) for k in range(1, times + 1)]
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
    return _check(_scenario(jobs), events)


def test_a_fourth_priority_stop_is_caught() -> None:
    assert stopped_again(3) == []
    assert stopped_again(4) == [
        "t=400: preempt v: preempted (priority) after 3 earlier stops; from 3 on only a "
        "reclaim may stop it",
    ]
