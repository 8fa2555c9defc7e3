"""The scheduling-quality numbers of issue 21, from the reports ``run_traces.py`` keeps.

    .venv/bin/python benchmarks/run_traces.py --policies default,greedy --out DIR --keep-reports
    .venv/bin/python benchmarks/preemption_quality.py DIR

Prints one row per trace and policy:

- mean JCT (finish - submit) over the jobs that finished;
- lost GPU-hours %: the GPU-equivalent-hours every stopped job had run since its last (re)start
  (the traces have no checkpoints, so all of it is lost), over the GPU-equivalent-hours used;
- most stops of one job by reclaim, fair share or priority (node failures etc. not counted);
- within-nominal wait: mean first-start wait of the jobs that fitted their queue's nominal quota
  when submitted (the queue's running GPUs in one of the job's flavors, plus the job's, at most
  that flavor's nominal), under that policy's own run; and how many such jobs there were.

``--jct-by-queue`` prints, per trace, where the first policy's mean JCT differs from the
second's: each queue's jobs, their mean JCT under both, and the queue's share of the overall
difference (its jobs' summed difference over all jobs), largest first.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpusched.sim.traces.metrics import flavor_equivalents

TRACES = ("philly", "alibaba", "itp")
SCHEDULING_REASONS = ("reclaim", "fair-share", "priority")


def load(path: Path) -> Any:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def quality(report: dict[str, Any], scenario: dict[str, Any]) -> dict[str, Any]:
    geq = flavor_equivalents(scenario)
    specs = {j["name"]: j for j in scenario["jobs"]}
    nominal = {
        (q["name"], f): (v or {}).get("nominal", 0)
        for q in scenario["queues"]
        for f, v in (q.get("quotas") or {}).items()
    }
    # submissions and events on one clock; at one instant, releases before admits before submits
    order = {"finish": 0, "preempt": 0, "admit": 1}
    timeline: list[tuple[float, int, str, dict[str, Any]]] = [
        (float(e["t"]), order[e["type"]], e["type"], e)
        for e in report["events"]
        if e["type"] in order
    ]
    timeline += [(float(j["submit_at"]), 2, "submit", j) for j in scenario["jobs"]]
    timeline.sort(key=lambda x: (x[0], x[1]))
    used: dict[tuple[str, str], int] = defaultdict(int)
    running: dict[str, tuple[float, str, int]] = {}  # job -> (since, flavor, units)
    used_gpu_s = lost_gpu_s = 0.0
    stops: Counter[str] = Counter()
    within: set[str] = set()
    for t, _, kind, e in timeline:
        if kind == "submit":
            need = e["workers"] * e["gpus_per_worker"]
            flavors = e.get("flavors") or [e["flavor"]]
            if any(
                used[(e["queue"], f)] + need <= nominal.get((e["queue"], f), 0) for f in flavors
            ):
                within.add(e["name"])
            continue
        job = e["job"]
        if kind == "admit":
            units = sum(e["placement"].values())  # a report's placement: GPUs per node
            running[job] = (t, e["flavor"], units)
            used[(specs[job]["queue"], e["flavor"])] += units
            continue
        if job not in running:
            continue
        since, flavor, units = running.pop(job)
        used[(specs[job]["queue"], flavor)] -= units
        gpu_s = (t - since) * units * geq[flavor]
        used_gpu_s += gpu_s
        if kind == "preempt":
            lost_gpu_s += gpu_s
            if e.get("reason") in SCHEDULING_REASONS:
                stops[job] += 1
            kept = e.get("placement") or {}
            if kept:  # a shrink: the job goes on with the kept workers
                left = sum(kept.values())
                running[job] = (t, flavor, left)
                used[(specs[job]["queue"], flavor)] += left
    jobs = report["jobs"]
    jct = [
        float(j["finished_at"]) - float(j["submitted_at"])
        for j in jobs
        if j.get("finished_at") is not None
    ]
    waits = [
        float(j["started_at"]) - float(j["submitted_at"])
        for j in jobs
        if j["name"] in within and j.get("started_at") is not None
    ]
    return {
        "mean_jct": statistics.fmean(jct) if jct else 0.0,
        "lost_pct": 100 * lost_gpu_s / used_gpu_s if used_gpu_s else 0.0,
        "lost_gpu_h": lost_gpu_s / 3600,
        "most_stops": max(stops.values(), default=0),
        "stops": sum(stops.values()),
        "within_wait": statistics.fmean(waits) if waits else 0.0,
        "within_jobs": len(waits),
    }


def jct_by_queue(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    """Per queue, the jobs finished under both reports: how many, their mean JCT under each,
    and the queue's part of the difference of the overall means (first minus second; the
    parts add up to it), largest part first."""

    def jct(report: dict[str, Any]) -> dict[str, tuple[str, float]]:
        return {
            j["name"]: (j["queue"], float(j["finished_at"]) - float(j["submitted_at"]))
            for j in report["jobs"]
            if j.get("finished_at") is not None
        }

    a, b = jct(first), jct(second)
    both = [name for name in a if name in b]
    by_queue: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name in both:
        by_queue[a[name][0]].append((a[name][1], b[name][1]))
    rows = [
        {
            "queue": queue,
            "jobs": len(pairs),
            "first": statistics.fmean(x for x, _ in pairs),
            "second": statistics.fmean(y for _, y in pairs),
            "part": sum(x - y for x, y in pairs) / len(both),
        }
        for queue, pairs in by_queue.items()
    ]
    return sorted(rows, key=lambda row: -row["part"])


def print_jct_by_queue(folder: Path, traces: list[str], policies: list[str]) -> None:
    first, second = policies[:2]
    print(
        f"| trace | queue | jobs | mean JCT s {first} | mean JCT s {second} "
        f"| part of the mean's difference s |"
    )
    print("|---|---|---|---|---|---|")
    for trace in traces:
        rows = jct_by_queue(
            load(folder / f"{trace}-{first}.json.gz"), load(folder / f"{trace}-{second}.json.gz")
        )
        for row in rows:
            print(
                f"| {trace} | {row['queue']} | {row['jobs']:,} | {row['first']:,.0f} "
                f"| {row['second']:,.0f} | {row['part']:+,.0f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--policies", default="default,greedy")
    parser.add_argument(
        "--jct-by-queue", action="store_true", help="where the two policies' mean JCT differ"
    )
    args = parser.parse_args()
    if args.jct_by_queue:
        print_jct_by_queue(args.folder, args.traces.split(","), args.policies.split(","))
        return
    print(
        "| trace | policy | mean JCT s | lost GPU-h % | lost GPU-h | stops | most stops of one job "
        "| within-nominal wait s (jobs) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for trace in args.traces.split(","):
        scenario = load(args.folder / f"{trace}-scenario.json.gz")
        for policy in args.policies.split(","):
            path = args.folder / f"{trace}-{policy}.json.gz"
            if not path.exists():
                continue
            q = quality(load(path), scenario)
            print(
                f"| {trace} | {policy} | {q['mean_jct']:,.0f} | {q['lost_pct']:.2f} "
                f"| {q['lost_gpu_h']:,.0f} | {q['stops']:,} | {q['most_stops']} "
                f"| {q['within_wait']:,.0f} ({q['within_jobs']:,}) |"
            )


if __name__ == "__main__":
    main()
