"""The checker's rule for a class's preemption protection (docs/SCHEDULING.md section 4, rule 1):
no fair-share or priority stop within it since the job's last start; a reclaim may stop it."""

from __future__ import annotations

from typing import Any

from tests.gpusched.check.test_checker import _admit, _check, _job, _scenario

CLASSES = [
    {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
    {"name": "std", "priority": 100, "grace_period": 30},
    {"name": "low", "priority": 10, "preemption_protection": 300},
]


def test_a_priority_stop_inside_the_protection_is_caught() -> None:
    scenario = _scenario([_job("v", cls="low"), _job("p", submit_at=50, gpus_per_worker=8)],
                         service_classes=CLASSES)  # fmt: skip

    def stop_at(t: float) -> list[dict[str, Any]]:
        return [
            _admit(0, "v", {"n1": 4}),
            {"t": t, "type": "preempt", "job": "v", "by": "p", "reason": "priority"},
            _admit(t, "p", {"n1": 8}),
        ]

    assert _check(scenario, stop_at(100)) == [
        "t=100: preempt v: preempted (priority) after 100 s, inside its class "
        "preemption_protection of 300 s (only a reclaim may stop it then)",
    ]
    assert _check(scenario, stop_at(300)) == []


def test_a_reclaim_inside_the_protection_passes() -> None:
    # queue a (nominal 8) borrows once "big" is admitted: b's job reclaims v at once
    scenario = _scenario([_job("v", cls="low"), _job("big", gpus_per_worker=8, submit_at=5),
                          _job("p", queue="b", submit_at=5)], service_classes=CLASSES)  # fmt: skip
    events = [
        _admit(0, "v", {"n1": 4}),
        _admit(9, "big", {"n2": 8}),
        {"t": 9, "type": "preempt", "job": "v", "by": "p", "reason": "reclaim"},
        _admit(9, "p", {"n1": 4}, queue="b"),
    ]
    assert _check(scenario, events) == []


def test_a_fair_share_stop_inside_the_protection_is_caught() -> None:
    """As test_checker's fair-share case: b borrows 4 of a pool of 24, a at its nominal asks for
    4 more; stopping b's 4-GPU job is a fair-share stop, 700 s after b's job started."""

    def case(protection: float) -> list[str]:
        classes = [{**c, "preemption_protection": protection} if c["name"] == "low" else c
                   for c in CLASSES]  # fmt: skip
        jobs = [("bj1", "b", "low", 8), ("bj2", "b", "low", 4), ("aj", "a", "std", 4)]
        scenario = _scenario(
            [
                {"name": n, "queue": q, "class": c, "submit_at": 0, "workers": 1,
                 "gpus_per_worker": g, "flavor": "h100", "duration": None}
                for n, q, c, g in jobs
            ] + [{"name": "p", "queue": "a", "class": "std", "submit_at": 600,
                  "workers": 1, "gpus_per_worker": 4, "flavor": "h100", "duration": None}],
            clusters=[{"name": "main", "nodes": [
                {"name": f"n{i}", "gpus": {"h100": 8}, "labels": {"rack": "r1"}}
                for i in (1, 2, 3)
            ]}],
            queues=[{"name": q, "cohort": "c", "quotas": {"h100": {"nominal": 8}}}
                    for q in ("a", "b", "idle")],
            service_classes=classes,
        )  # fmt: skip
        events = [
            _admit(0, "bj1", {"n1": 8}, queue="b"),
            _admit(0, "bj2", {"n2": 4}, queue="b"),
            _admit(0, "aj", {"n2": 4}),
            {"t": 700, "type": "preempt", "job": "bj2", "reason": "fair-share", "by": "p"},
            {"t": 700, "type": "requeue", "job": "bj2"},
            _admit(700, "p", {"n2": 4}),
        ]
        return _check(scenario, events)

    assert case(600) == []
    assert case(3600) == [
        "t=700: preempt bj2: preempted (fair-share) after 700 s, inside its class "
        "preemption_protection of 3600 s (only a reclaim may stop it then)",
    ]


def test_the_scenario_default_fills_a_class_without_its_own() -> None:
    classes = [{"name": "a", "priority": 1}, {"name": "b", "priority": 2,
                                              "preemption_protection": None},
               {"name": "c", "priority": 3, "preemption_protection": 0}]  # fmt: skip
    scenario = _scenario([], service_classes=classes, preemption_protection=120)
    got = {c.name: c.preemption_protection for c in scenario.service_classes}
    assert got == {"a": 120.0, "b": 120.0, "c": 0.0}
    assert {c.preemption_protection for c in _scenario([]).service_classes} == {0.0}


def test_a_priority_stop_of_a_job_cheaper_to_wait_for_is_caught() -> None:
    """v (4 GPUs, estimated 1,000 s) is stopped for p (8 GPUs) near its end: at t = 900 the
    wait would cost 100 s x 8 GPUs, the stop throws away 900 s x 4 GPUs (rule 1). At t = 300 the
    wait (700 x 8) costs more than the loss (300 x 4): the stop is allowed. Without an estimate
    nothing protects v."""

    def stop_at(t: float, **victim: Any) -> list[str]:
        jobs = [_job("v", cls="std", **victim), _job("p", submit_at=t, gpus_per_worker=8,
                                                      cls="prod")]  # fmt: skip
        classes = [{**c, "preemptible": True} for c in CLASSES]
        events = [
            _admit(0, "v", {"n1": 4}),
            {"t": t, "type": "preempt", "job": "v", "by": "p", "reason": "priority"},
            {"t": t, "type": "requeue", "job": "v"},
            _admit(t + 30, "p", {"n1": 8}),
        ]
        return _check(_scenario(jobs, service_classes=classes), events)

    assert stop_at(900, estimated_runtime=1000) == [
        "t=900: preempt v: preempted (priority) 100 s before its estimated end, which p (8 "
        "GPUs) could have waited for: 800 GPU-s against the 3600 GPU-s the stop throws away",
    ]
    assert stop_at(300, estimated_runtime=1000) == []
    assert stop_at(900) == []
    assert stop_at(900, estimated_runtime=1000, checkpoint_interval=850) == []  # loses 50 x 4
