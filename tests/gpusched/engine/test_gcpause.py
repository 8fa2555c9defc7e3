"""A cycle runs without Python's cyclic garbage collector and leaves it as it found it."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from benchmarks.generate import generate
from gpusched.engine import gcpause
from gpusched.engine.cycle import run_cycle
from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import Simulator


def _busy_snapshot() -> Any:
    data = generate(seed=2, nodes=40, queues=8, cohorts=2, jobs=1500)
    sim = Simulator(parse_scenario(data, source="generated"))
    for job in sim.jobs.values():
        sim.submit(job)
    return sim.snapshot(0.0)


def test_a_cycle_runs_no_garbage_collection_and_leaves_the_collector_enabled() -> None:
    snapshot = _busy_snapshot()
    collections: list[str] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(phase)

    gc.collect()
    gc.callbacks.append(seen)
    try:
        result = run_cycle(snapshot)
    finally:
        gc.callbacks.remove(seen)

    assert len(result.pending) > 1000  # enough allocations to trigger collections otherwise
    assert len(collections) <= 1  # the one the first allocation after the cycle may start
    assert gc.isenabled()


def test_a_cycle_leaves_a_disabled_collector_disabled() -> None:
    snapshot = _busy_snapshot()
    gc.disable()
    try:
        run_cycle(snapshot)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_a_large_cycle_leaves_alive_costs_no_young_collection_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The result of a cycle large enough (an explanation per waiting job: here more than 500
    objects) joins the oldest generation as the collector resumes: the next allocations start
    no collection that walks it again."""
    monkeypatch.setattr(gcpause, "MOVE_AFTER", 500)
    snapshot = _busy_snapshot()
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(seen)
    try:
        result = run_cycle(snapshot)
        after = [[n] for n in range(100)]  # the next allocations
    finally:
        gc.callbacks.remove(seen)
    assert len(after) == 100
    assert collections == []
    young = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
    assert young < 1000 < len(result.pending)


def test_what_a_small_cycle_leaves_alive_stays_young(monkeypatch: pytest.MonkeyPatch) -> None:
    # about 1,500 objects left alive, about 10,000 young ones counted (the collector is paused
    # during the cycle, so its garbage counts too): a threshold well above that
    monkeypatch.setattr(gcpause, "MOVE_AFTER", 50_000)
    snapshot = _busy_snapshot()
    gc.collect()
    result = run_cycle(snapshot)
    young = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
    assert 1000 < len(result.pending) < young


def test_objects_the_process_froze_stay_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcpause, "MOVE_AFTER", 500)
    snapshot = _busy_snapshot()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        run_cycle(snapshot)
        # unfrozen they would all be gone from the permanent generation (a count of 0, or only
        # the cycle's own); a frozen object freed meanwhile (another thread of a test run drops
        # a reference) may take one or two off
        assert gc.get_freeze_count() > frozen - 100
        assert gc.isenabled()
    finally:
        gc.unfreeze()
