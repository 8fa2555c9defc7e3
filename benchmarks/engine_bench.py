"""Benchmark the scheduling engine on a large generated scenario.

    .venv/bin/python benchmarks/engine_bench.py                  # 1,000 nodes, 20,000 jobs
    .venv/bin/python benchmarks/engine_bench.py --jobs 2000 --nodes 100 --queues 20 --cohorts 4
    .venv/bin/python benchmarks/engine_bench.py --profile        # cProfile's top functions

Prints engine_seconds, cycles, cycle_ms mean/p99/max and the wall time of the whole replay.
Targets (docs): worst cycle under 1 s, whole 20,000-job replay under 2 minutes.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import generate

from gpusched.engine.cycle import run_cycle
from gpusched.sim.scenario import Scenario, parse_scenario
from gpusched.sim.simulate import Simulator, simulate


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--policy", default="default")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 30")
    parser.add_argument(
        "--single-cycle",
        action="store_true",
        help="instead of a replay: time one cycle with every job pending at once (explained)",
    )
    args = parser.parse_args(argv)

    data = generate(
        seed=args.seed, nodes=args.nodes, queues=args.queues, cohorts=args.cohorts, jobs=args.jobs
    )
    scenario = parse_scenario(data, source="<generated>")
    print(
        f"scenario: {len(scenario.jobs)} jobs, "
        f"{sum(len(c.nodes) for c in scenario.clusters)} nodes, {len(scenario.queues)} queues, "
        f"policy {args.policy}",
        flush=True,
    )
    if args.single_cycle:
        return single_cycle(scenario, args.policy)
    profiler = cProfile.Profile() if args.profile else None
    began = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    report = simulate(scenario, args.policy)
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - began
    s = report["summary"]
    ms = s["cycle_ms"]
    print(f"engine_seconds: {s['engine_seconds']:.2f}")
    print(f"cycles: {s['cycles']}")
    print(f"cycle_ms: mean {ms['mean']:.2f}  p99 {ms['p99']:.2f}  max {ms['max']:.2f}")
    print(f"wall seconds (whole replay): {wall:.2f}")
    print(
        f"outcome: finished {s['finished']}, never started {s['never_started']}, "
        f"preemptions {s['preemptions']}, utilization {s['gpu_utilization']}, "
        f"mean wait {s['mean_wait']:.0f} s"
    )
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return 0


def single_cycle(scenario: Scenario, policy: str) -> int:
    """Worst case for one cycle: every job pending, half the cluster busy, explanations on."""
    sim = Simulator(scenario, policy)
    jobs = list(sim.jobs.values())
    for job in jobs[: len(jobs) // 10]:  # fill part of the cluster first
        sim.submit(job)
    sim.cycle(0.0)
    for job in jobs[len(jobs) // 10 :]:
        sim.submit(job)
    snap = sim.snapshot(60.0)
    print(f"pending {len(snap.pending)}, admitted {len(snap.admitted)}", flush=True)
    for label in ("first", "second"):
        began = time.perf_counter()
        result = run_cycle(snap, policy, state=sim.engine_state)
        took = time.perf_counter() - began
        print(
            f"{label} cycle: {took * 1000:.0f} ms, {len(result.admits)} admits, "
            f"{len(result.stops)} stops, {len(result.pending)} explained"
        )
    sample = next(iter(result.pending.values()), None)
    if sample is not None:
        print(f"sample explanation: {sample.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
