"""How one scheduling cycle's cost grows with nodes, pending jobs and queues.

    .venv/bin/python benchmarks/scale_sweep.py [--cycles 5] [--out DIR] [--quick]

Engine only: for each point a scenario comes from ``benchmarks/generate.py`` (same mix as
``engine_bench.py``: whole GPUs and MIG slices, gangs up to 64 GPUs, prod / std / spot classes,
queues in cohorts), a first cycle fills part of the cluster with ``nodes`` jobs (about 70% of its
GPUs are asked for), then the pending jobs are submitted and ``run_cycle`` is timed on fresh
snapshots ``--cycles`` times at the same instant (nothing is applied between them, so every
cycle decides the same situation), first as the simulator runs it (``explain_pending=False``),
then as the live cycle does (every pending job's explanation built too). One factor moves at a
time, the others stay at the middle value (1,000 nodes, 10,000 pending jobs, 100 queues in 10
cohorts).

Reports the median and the max of the timed cycles per point (the max is usually the first,
which also builds what the simulator's ``EngineState`` keeps), prints a markdown table and
writes ``scale_sweep.md``, ``scale_sweep.csv`` and ``scale_sweep.png`` (log-log, one panel per
factor) into ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import generate

from gpusched.engine.cycle import run_cycle
from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import Simulator

MIDDLE = {"nodes": 1_000, "pending": 10_000, "queues": 100}
SWEEP = {
    "nodes": (100, 300, 1_000, 2_000, 5_000),
    "pending": (1_000, 3_000, 10_000, 20_000, 50_000),
    "queues": (10, 30, 100, 300, 1_000),
}
QUICK_SWEEP = {"nodes": (100, 300), "pending": (300, 1_000), "queues": (10, 30)}
QUICK_MIDDLE = {"nodes": 200, "pending": 500, "queues": 20}


@dataclass(frozen=True)
class Point:
    factor: str
    nodes: int
    pending: int
    queues: int
    running: int
    median_ms: float
    max_ms: float
    explain_median_ms: float
    explain_max_ms: float
    admits: int
    stops: int
    setup_s: float


def measure(nodes: int, pending: int, queues: int, cycles: int, policy: str, factor: str) -> Point:
    began = time.perf_counter()
    fill = nodes  # ~5.6 GPUs per job on average: asks for ~70% of the cluster's GPUs
    data = generate(
        seed=0, nodes=nodes, queues=queues, cohorts=max(1, queues // 10), jobs=fill + pending
    )
    scenario = parse_scenario(data, source="<generated>")
    sim = Simulator(scenario, policy)
    jobs = list(sim.jobs.values())
    for job in jobs[:fill]:
        sim.submit(job)
    sim.cycle(0.0)
    for job in jobs[fill:]:
        sim.submit(job)
    setup = time.perf_counter() - began
    times: dict[bool, list[float]] = {False: [], True: []}
    admits = stops = 0
    snapshot = sim.snapshot(60.0)
    for explain in (False, True):
        for _ in range(cycles):
            snapshot = sim.snapshot(60.0)
            t0 = time.perf_counter()
            result = run_cycle(snapshot, policy, explain_pending=explain, state=sim.engine_state)
            times[explain].append((time.perf_counter() - t0) * 1000)
            admits, stops = len(result.admits), len(result.stops)
    return Point(
        factor=factor,
        nodes=sum(len(c.nodes) for c in scenario.clusters),
        pending=len(snapshot.pending),
        queues=len(scenario.queues),
        running=len(snapshot.admitted),
        median_ms=statistics.median(times[False]),
        max_ms=max(times[False]),
        explain_median_ms=statistics.median(times[True]),
        explain_max_ms=max(times[True]),
        admits=admits,
        stops=stops,
        setup_s=setup,
    )


HEADER = (
    "| varied | nodes | pending | queues | running | median ms | max ms "
    "| explained: median ms | explained: max ms | admits | stops |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
)


def table_row(p: Point) -> str:
    return (
        f"| {p.factor} | {p.nodes:,} | {p.pending:,} | {p.queues:,} | {p.running:,} | "
        f"{p.median_ms:,.0f} | {p.max_ms:,.0f} | {p.explain_median_ms:,.0f} | "
        f"{p.explain_max_ms:,.0f} | {p.admits:,} | {p.stops:,} |"
    )


def plot(points: Sequence[Point], path: Path, title: str) -> Path | None:
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        print("(no PNG: matplotlib is not installed; pip install -e '.[bench]')")
        return None
    fig, axes = plt.subplots(1, 3, figsize=(9.0, 3.4), dpi=100, sharey=True)
    for axis, factor in zip(axes, SWEEP, strict=True):
        mine = sorted((p for p in points if p.factor == factor), key=lambda p: getattr(p, factor))
        xs = [getattr(p, factor) for p in mine]
        axis.plot(xs, [p.median_ms for p in mine], "o-", color="C0", label="median")
        axis.plot(xs, [p.max_ms for p in mine], "x--", color="C0", label="max")
        axis.plot(xs, [p.explain_median_ms for p in mine], "o-", color="C1", label="explained")
        axis.plot(xs, [p.explain_max_ms for p in mine], "x--", color="C1", label="explained max")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel(factor)
        axis.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("cycle ms")
    axes[0].legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=5, help="timed cycles per point and mode")
    parser.add_argument("--policy", default="default")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the script")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    if args.cycles < 1:
        parser.error("--cycles must be at least 1")
    sweep, middle = (QUICK_SWEEP, QUICK_MIDDLE) if args.quick else (SWEEP, MIDDLE)
    args.out.mkdir(parents=True, exist_ok=True)

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    points: list[Point] = []
    print("\n".join(HEADER), flush=True)
    for factor, values in sweep.items():
        for value in values:
            sizes = {**middle, factor: value}
            point = measure(
                sizes["nodes"],
                sizes["pending"],
                sizes["queues"],
                args.cycles,
                args.policy,
                factor,
            )
            points.append(point)
            print(table_row(point) + f"  (setup {point.setup_s:.1f} s)", flush=True)
    total = time.perf_counter() - started

    title = f"one {args.policy} cycle vs scale (blue: as the simulator; orange: + explanations)"
    lines = [
        "# Scale sweep: one scheduling cycle",
        "",
        f"Policy `{args.policy}`; {args.cycles} timed cycles per point and mode: without "
        "explanations of pending jobs (as the simulator and the traces run) and `explained` "
        "(as the live cycle, which tells every pending job why it waits); middle values "
        f"{middle['nodes']:,} nodes, {middle['pending']:,} pending jobs, "
        f"{middle['queues']:,} queues; `running` = jobs admitted by the fill cycle. "
        f"Total wall time {total:.0f} s; {os.cpu_count()} CPUs, load average "
        f"{load_before:.1f} before and {os.getloadavg()[0]:.1f} after (other processes "
        "share the machine; a busy machine makes the numbers noisier and larger).",
        "",
        *HEADER,
        *(table_row(p) for p in points),
    ]
    (args.out / "scale_sweep.md").write_text("\n".join(lines) + "\n")
    with (args.out / "scale_sweep.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["varied", "nodes", "pending", "queues", "running", "median_ms", "max_ms",
             "explained_median_ms", "explained_max_ms"]
        )  # fmt: skip
        for p in points:
            writer.writerow(
                [p.factor, p.nodes, p.pending, p.queues, p.running, f"{p.median_ms:.1f}",
                 f"{p.max_ms:.1f}", f"{p.explain_median_ms:.1f}", f"{p.explain_max_ms:.1f}"]
            )  # fmt: skip
    png = plot(points, args.out / "scale_sweep.png", title)
    print(f"\nTotal wall time: {total:.0f} s; wrote {args.out / 'scale_sweep.md'}" + (
        f", {png}" if png else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
