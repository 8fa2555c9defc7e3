"""A class's preemption protection (SCHEDULING.md section 4, rule 1): after each (re)start only
a reclaim (rule 2) may stop the job, no fair-share (rule 3) or priority (rule 4) stop."""

from __future__ import annotations

from dataclasses import replace

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import CycleResult, ServiceClass
from tests.gpusched.engine_builders import CLASSES, nodes, pending, queue, running, snapshot


def stopped(result: CycleResult) -> dict[str, str]:
    return {s.job: s.reason for s in result.stops}


def protected(name: str, seconds: float) -> tuple[ServiceClass, ...]:
    return tuple(
        replace(c, preemption_protection=seconds) if c.name == name else c for c in CLASSES
    )


def _priority_case(now: float, protection: float) -> CycleResult:
    busy = [running("young", "q", {"n0": 8}, gpus=8, cls="low", started_at=500)]
    jobs = [pending("p", "q", gpus=8, cls="high")]
    classes = protected("low", protection)
    return run_cycle(
        snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 8)], busy, jobs, now=now, classes=classes)
    )


def test_priority_stop_waits_for_the_protection_to_end() -> None:
    assert not _priority_case(now=1000, protection=600).stops
    assert stopped(_priority_case(now=1100, protection=600)) == {"young": "priority"}
    assert stopped(_priority_case(now=1000, protection=0)) == {"young": "priority"}


def _fair_share_case(now: float, protection: float) -> CycleResult:
    """As test_preemption's: a borrows 4 of the pool of 12 with one 8-GPU job; b asks for 1."""
    queues = [queue(q, 4, cohort="c") for q in ("a", "b", "c")]
    busy = [running("big", "a", {"n0": 8}, gpus=8, started_at=500)]
    busy += [running(f"b{i}", "b", {"n0": 1}, started_at=2) for i in range(4)]
    classes = protected("std", protection)
    return run_cycle(
        snapshot(
            nodes("n", 1, {"h100": 12}), queues, busy, [pending("new", "b")], now=now,
            classes=classes,
        )
    )  # fmt: skip


def test_fair_share_stop_waits_for_the_protection_to_end() -> None:
    assert stopped(_fair_share_case(now=1000, protection=0)) == {"big": "fair-share"}
    early = _fair_share_case(now=1000, protection=600)
    assert not early.stops and not early.admits
    assert stopped(_fair_share_case(now=1100, protection=600)) == {"big": "fair-share"}


def test_reclaim_is_not_held_back_by_the_protection() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")]
    busy = [running(f"a{i}", "a", {"n0": 1}, started_at=990 + i) for i in range(8)]
    result = run_cycle(
        snapshot(
            nodes("n", 1, {"h100": 8}), queues, busy, [pending("b0", "b", gpus=2)], now=1000,
            classes=protected("std", 3600),
        )
    )  # fmt: skip
    assert stopped(result) == {"a7": "reclaim", "a6": "reclaim"}
    assert [a.job for a in result.admits] == ["b0"]


def test_min_runtime_still_holds_against_a_reclaim() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 4, cohort="c")]
    busy = [running(f"a{i}", "a", {"n0": 1}, started_at=990 + i) for i in range(8)]
    classes = tuple(replace(c, min_runtime=600) if c.name == "std" else c for c in CLASSES)
    result = run_cycle(
        snapshot(
            nodes("n", 1, {"h100": 8}), queues, busy, [pending("b0", "b", gpus=2)], now=1000,
            classes=classes,
        )
    )  # fmt: skip
    assert not result.stops
