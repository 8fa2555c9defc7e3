"""A cycle runs without Python's cyclic garbage collector and leaves it as it found it."""

from __future__ import annotations

import gc
from typing import Any

from benchmarks.generate import generate
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
