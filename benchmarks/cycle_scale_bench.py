"""One explained engine cycle at scale (issue 27: 50,000 pending jobs on 5,000 nodes, <= 1 s),
this tree side by side with another checkout of the project in the same run.

    .venv/bin/python benchmarks/cycle_scale_bench.py                       # this tree alone
    .venv/bin/python benchmarks/cycle_scale_bench.py --against ../cyclescale-base --rounds 3

The world is ``scale_sweep.py``'s point (``benchmarks/generate.py``, seed 0, 100 queues in 10
cohorts): a first cycle fills part of the cluster, then the pending jobs are submitted, and
``run_cycle`` is timed on a snapshot at t=60 s with explanations on, as the live cycle runs it:

- ``fresh``: a new ``EngineState`` every cycle (the live cycle: every snapshot object is new);
- ``kept``: the simulator's state kept across cycles (the simulator and ``scale_sweep.py``);
- ``live``: what the live cycle does now: every snapshot object copied anew (as a read from the
  database makes them; the copy is not timed), then handed to the engine through the process's
  ``SnapshotKeep`` (gpusched/engine/snapshot_keep.py: the last cycle's equal objects swapped
  in, timed) and decided with its kept state. Nothing changes between two timed cycles here, so
  every object is found again: a live cycle where a few jobs changed costs a little more.

Each tree runs in a process of its own (its own interpreter and code, the world built once per
process); the rounds alternate between them, so both see the same machine load. Prints wall and
CPU milliseconds per cycle (median and worst of the round's cycles), and a digest of each
cycle's decisions and explanations: the same digest in both trees means the same decisions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def serve(root: Path, nodes: int, pending: int, queues: int) -> int:
    """Worker: build the world with ``root``'s code, then time one cycle per line of stdin
    (``fresh`` or ``kept``), answering with one JSON line each."""
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    from generate import generate  # type: ignore[import-not-found, unused-ignore]

    from gpusched.engine.cycle import run_cycle
    from gpusched.engine.state import EngineState

    try:
        from gpusched.engine.snapshot_keep import SnapshotKeep

        keep = SnapshotKeep()
    except ImportError:  # an older tree: no live mode
        keep = None
    from gpusched.sim.scenario import parse_scenario
    from gpusched.sim.simulate import Simulator

    began = time.perf_counter()
    cohorts = max(1, queues // 10)
    data = generate(seed=0, nodes=nodes, queues=queues, cohorts=cohorts, jobs=nodes + pending)
    sim = Simulator(parse_scenario(data, source="<generated>"), "default")
    jobs = list(sim.jobs.values())
    for job in jobs[:nodes]:
        sim.submit(job)
    sim.cycle(0.0)
    for job in jobs[nodes:]:
        sim.submit(job)
    print(json.dumps({"ready": time.perf_counter() - began}), flush=True)
    for line in sys.stdin:
        mode = line.strip()
        snapshot = sim.snapshot(60.0)
        if mode == "live":
            if keep is None:
                print(json.dumps({"error": "this tree has no SnapshotKeep"}), flush=True)
                continue
            snapshot = copied(snapshot)
            wall, cpu = time.perf_counter(), time.process_time()
            with keep.use(snapshot) as (same, state):
                result = run_cycle(same, "default", explain_pending=True, state=state)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        else:
            state = EngineState() if mode == "fresh" else sim.engine_state
            wall, cpu = time.perf_counter(), time.process_time()
            result = run_cycle(snapshot, "default", explain_pending=True, state=state)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        digest = hashlib.sha256(
            repr(
                (
                    result.admits,
                    result.stops,
                    result.scales,
                    result.reservation,
                    sorted((name, repr(info)) for name, info in result.pending.items()),
                )
            ).encode()
        ).hexdigest()[:12]
        print(
            json.dumps(
                {
                    "wall_ms": wall * 1000,
                    "cpu_ms": cpu * 1000,
                    "pending": len(snapshot.pending),
                    "admitted": len(snapshot.admitted),
                    "admits": len(result.admits),
                    "explained": len(result.pending),
                    "digest": digest,
                }
            ),
            flush=True,
        )
    return 0


def copied(snapshot: Any) -> Any:
    """The snapshot with every job, cluster, class, queue and cohort a new, equal object, as
    the live cycle's read from the database gives them."""
    import copy
    import dataclasses

    def fresh(items: Any) -> tuple[Any, ...]:
        return tuple(copy.deepcopy(item) for item in items)

    return dataclasses.replace(
        snapshot,
        pending=tuple(copy.copy(job) for job in snapshot.pending),
        admitted=tuple(copy.copy(job) for job in snapshot.admitted),
        clusters=fresh(snapshot.clusters),
        flavors=fresh(snapshot.flavors),
        service_classes=fresh(snapshot.service_classes),
        queues=fresh(snapshot.queues),
        cohorts=fresh(snapshot.cohorts),
    )


class Worker:
    def __init__(self, label: str, root: Path, args: argparse.Namespace) -> None:
        self.label = label
        python = root / ".venv" / "bin" / "python"
        command = [
            str(python if python.exists() else sys.executable),
            str(HERE),
            "--serve",
            str(root),
            "--nodes",
            str(args.nodes),
            "--pending",
            str(args.pending),
            "--queues",
            str(args.queues),
        ]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=root
        )
        self.setup_s = float(self._read()["ready"])

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label}: the worker exited")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{self.label}: {answer['error']}")
        return answer

    def cycle(self, mode: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(mode + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pending", type=int, default=50000)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--cycles", type=int, default=3, help="timed cycles per mode and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--modes", default="fresh,kept,live", help="of: fresh, kept, live")
    parser.add_argument("--against", type=Path, help="another checkout, e.g. the old commit's")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve, args.nodes, args.pending, args.queues)

    trees = [("this", HERE.parent.parent)]
    if args.against is not None:
        trees.insert(0, ("against", args.against.resolve()))
    print(
        f"{args.nodes:,} nodes, {args.pending:,} jobs submitted after the fill cycle, "
        f"{args.queues} queues; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    workers = [Worker(label, root, args) for label, root in trees]
    for worker, (_, root) in zip(workers, trees, strict=True):
        print(f"  {worker.label}: {root} (world built in {worker.setup_s:.1f} s)", flush=True)
    print(
        "| round | tree | mode | pending | admits | explained | wall ms median / max "
        "| CPU ms median / max | digest |\n|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    summary: dict[tuple[str, str], list[float]] = {}
    try:
        for number in range(1, args.rounds + 1):
            for worker in workers:
                for mode in args.modes.split(","):
                    runs = [worker.cycle(mode) for _ in range(args.cycles)]
                    walls = [r["wall_ms"] for r in runs]
                    cpus = [r["cpu_ms"] for r in runs]
                    summary.setdefault((worker.label, mode), []).extend(cpus)
                    last = runs[-1]
                    digests = sorted({r["digest"] for r in runs})
                    print(
                        f"| {number} | {worker.label} | {mode} | {last['pending']:,} | "
                        f"{last['admits']:,} | {last['explained']:,} | "
                        f"{statistics.median(walls):,.0f} / {max(walls):,.0f} | "
                        f"{statistics.median(cpus):,.0f} / {max(cpus):,.0f} | "
                        f"{' '.join(digests)} |",
                        flush=True,
                    )
    finally:
        for worker in workers:
            worker.close()
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}; CPU ms median over all rounds:")
    for (label, mode), cpus in summary.items():
        print(f"  {label} {mode}: {statistics.median(cpus):,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
