"""Explain the trace benchmark's numbers from the reports' events.

    .venv/bin/python benchmarks/run_traces.py --keep-reports      # writes <trace>-<policy>.json.gz
    .venv/bin/python benchmarks/trace_findings.py [--dir benchmarks/results/traces] [--no-ablation]

Reads the reports kept by ``run_traces.py`` and writes ``findings.md`` next to them:

- waits by gang size (1 GPU, 2-8 GPUs, more) per policy, and backfill reservations made;
- preemptions by reason, how many distinct jobs were hit, how often the same job was hit again
  (churn), how many victims had run less than 10 minutes since their (re)start, how many were
  stopped in a cycle that also admitted another job of the victim's own queue (a "swap": that
  queue's allocation does not change, only work is lost), and the GPU-hours those jobs had run
  before being stopped (lost unless checkpointed);
- the job that waited longest under each policy: its queue, class, shape, flavors and the
  quota its queue has for them;
- an ablation on each trace (unless ``--no-ablation``): the ``default`` engine with backfill
  reservations off, and with preemption off, so that each mechanism's effect is measured
  rather than guessed (``greedy`` is the engine with both off).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpusched.engine.policies import Policy
from gpusched.sim.scenario import parse_scenario
from gpusched.sim.simulate import simulate
from gpusched.sim.traces.metrics import flavor_equivalents, summary_row

TRACES = ("philly", "alibaba", "itp")
POLICIES = ("default", "fifo", "greedy")
ABLATIONS = {
    "default-no-backfill": Policy("default-no-backfill", backfill=False),
    "default-no-preemption": Policy("default-no-preemption", preemption=False),
}
SCHEDULING_REASONS = ("reclaim", "fair-share", "priority")
YOUNG_S = 600.0
SIZE_BUCKETS = (("1 GPU", 0.0, 1.0), ("2-8 GPUs", 1.0, 8.0), (">8 GPUs", 8.0, float("inf")))


def load(path: Path) -> Any:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def job_gpus(scenario: dict[str, Any]) -> dict[str, float]:
    geq = flavor_equivalents(scenario)
    out = {}
    for job in scenario["jobs"]:
        flavors = job.get("flavors") or [job["flavor"]]
        out[job["name"]] = job["workers"] * job["gpus_per_worker"] * geq[flavors[0]]
    return out


def waits_by_size(report: dict[str, Any], gpus: dict[str, float]) -> dict[str, tuple[int, float]]:
    buckets: dict[str, list[float]] = defaultdict(list)
    for job in report["jobs"]:
        if job.get("started_at") is None:
            continue
        size = gpus[job["name"]]
        label = next(name for name, lo, hi in SIZE_BUCKETS if lo < size <= hi)
        buckets[label].append(float(job["started_at"]) - float(job["submitted_at"]))
    return {
        name: (len(buckets[name]), statistics.fmean(buckets[name]) if buckets[name] else 0.0)
        for name, _, _ in SIZE_BUCKETS
    }


def preemption_facts(report: dict[str, Any], scenario: dict[str, Any]) -> dict[str, Any]:
    geq = flavor_equivalents(scenario)
    reasons: Counter[str] = Counter()
    per_job: Counter[str] = Counter()
    by_preemptor: Counter[str] = Counter()
    running_since: dict[str, tuple[float, float]] = {}
    lost_gpu_hours = 0.0
    queue_of = {j["name"]: j["queue"] for j in scenario["jobs"]}
    by_time: dict[float, list[dict[str, Any]]] = defaultdict(list)
    for event in report["events"]:
        by_time[float(event["t"])].append(event)
    swaps = 0
    for events in by_time.values():
        preemptors = {e.get("by") for e in events if e["type"] == "preempt"}
        admitted = {
            queue_of[e["job"]]
            for e in events
            if e["type"] == "admit" and e["job"] not in preemptors
        }
        swaps += sum(
            1
            for e in events
            if e["type"] == "preempt"
            and e.get("reason") in SCHEDULING_REASONS
            and queue_of[e["job"]] in admitted
        )
    young = 0
    for event in report["events"]:
        kind, job = event["type"], event.get("job")
        if kind == "admit":
            gpus = sum(event["placement"].values()) * geq[event["flavor"]]
            running_since[job] = (float(event["t"]), gpus)
        elif kind == "preempt":
            reasons[event.get("reason", "?")] += 1
            per_job[job] += 1
            if event.get("by"):
                by_preemptor[event["by"]] += 1
            if job in running_since:
                began, gpus = running_since.pop(job)
                lost_gpu_hours += max(0.0, float(event["t"]) - began) * gpus / 3600
                young += float(event["t"]) - began < YOUNG_S
    hits = Counter(per_job.values())
    return {
        "total": sum(reasons.values()),
        "reasons": dict(reasons.most_common()),
        "jobs_hit": len(per_job),
        "hit_once": hits.get(1, 0),
        "hit_2_4": sum(n for k, n in hits.items() if 2 <= k <= 4),
        "hit_5_plus": sum(n for k, n in hits.items() if k >= 5),
        "max_per_job": max(per_job.values(), default=0),
        "worst_job": per_job.most_common(1)[0][0] if per_job else None,
        "preemptors": len(by_preemptor),
        "lost_gpu_hours": lost_gpu_hours,
        "young": young,
        "swaps": swaps,
    }


def longest_wait(report: dict[str, Any], scenario: dict[str, Any]) -> dict[str, Any]:
    horizon = max(float(e["t"]) for e in report["events"]) if report["events"] else 0.0
    specs = {j["name"]: j for j in scenario["jobs"]}
    queues = {q["name"]: q for q in scenario["queues"]}
    classes = {c["name"]: c for c in scenario["service_classes"]}
    worst, worst_wait = None, -1.0
    for job in report["jobs"]:
        start = job.get("started_at")
        wait = (float(start) if start is not None else horizon) - float(job["submitted_at"])
        if wait > worst_wait:
            worst, worst_wait = job, wait
    assert worst is not None
    spec = specs[worst["name"]]
    flavors = spec.get("flavors") or [spec["flavor"]]
    quotas = queues[spec["queue"]].get("quotas") or {}
    reserves = sum(
        1 for e in report["events"] if e["type"] == "reserve" and e["job"] == worst["name"]
    )
    return {
        "job": worst["name"],
        "wait": worst_wait,
        "queue": spec["queue"],
        "class": spec["class"],
        "class_can_borrow": classes[spec["class"]].get("can_borrow", True),
        "shape": f"{spec['workers']} x {spec['gpus_per_worker']}",
        "flavors": flavors,
        "nominal": {f: (quotas.get(f) or {}).get("nominal", 0) for f in flavors},
        "duration": spec.get("duration"),
        "submitted_at": spec["submit_at"],
        "started_at": worst.get("started_at"),
        "reservations": reserves,
    }


def capacity_by_flavor(scenario: dict[str, Any]) -> Counter[str]:
    total: Counter[str] = Counter()
    for cluster in scenario["clusters"]:
        for node in cluster["nodes"]:
            for flavor, n in node["gpus"].items():
                total[flavor] += n * int(node.get("count", 1))
    return total


def ablation_rows(scenario: dict[str, Any], trace: str) -> list[dict[str, Any]]:
    parsed = parse_scenario(scenario, f"<{trace} trace>")
    rows = []
    for name, policy in ABLATIONS.items():
        began = time.perf_counter()
        report = simulate(parsed, policy)
        row = summary_row(report, scenario)
        row["wall_s"] = time.perf_counter() - began
        row["reserves"] = sum(1 for e in report["events"] if e["type"] == "reserve")
        rows.append(row)
        print(f"  {trace} {name}: {row['wall_s']:.1f} s", flush=True)
    return rows


def fmt(value: float) -> str:
    return f"{value:,.0f}"


def trace_section(folder: Path, trace: str, ablation: bool) -> list[str]:
    scenario = load(folder / f"{trace}-scenario.json.gz")
    reports = {p: load(folder / f"{trace}-{p}.json.gz") for p in POLICIES}
    gpus = job_gpus(scenario)
    lines = [f"## {trace}", ""]

    lines += [
        "Waits by gang size (jobs, mean wait s) and backfill reservations (`reserve` events, "
        "distinct jobs):",
        "",
        "| policy | " + " | ".join(n for n, _, _ in SIZE_BUCKETS) + " | reserves | reserved jobs |",
        "|---|" + "---|" * (len(SIZE_BUCKETS) + 2),
    ]
    for policy, report in reports.items():
        sizes = waits_by_size(report, gpus)
        reserves = [e for e in report["events"] if e["type"] == "reserve"]
        cells = " | ".join(f"{n:,}: {fmt(w)}" for n, w in sizes.values())
        reserved = len({e["job"] for e in reserves})
        lines.append(f"| {policy} | {cells} | {len(reserves):,} | {reserved:,} |")

    facts = preemption_facts(reports["default"], scenario)
    if facts["total"]:
        reasons = ", ".join(f"{k} {v:,}" for k, v in facts["reasons"].items())
        lines += [
            "",
            f"Preemptions under `default`: {facts['total']:,} ({reasons}) of "
            f"{facts['jobs_hit']:,} distinct jobs by {facts['preemptors']:,} distinct "
            f"preemptors; hit once {facts['hit_once']:,}, 2-4 times {facts['hit_2_4']:,}, "
            f"5+ times {facts['hit_5_plus']:,}; most hit: `{facts['worst_job']}` "
            f"({facts['max_per_job']} times). Victims that had run < 10 min since their "
            f"(re)start: {facts['young']:,}. Stopped in a cycle that also admitted another "
            f"job of the victim's own queue: {facts['swaps']:,}. GPU-hours those jobs had "
            f"run before being stopped (lost without checkpoints): "
            f"{facts['lost_gpu_hours']:,.0f}.",
        ]

    capacity = capacity_by_flavor(scenario)
    lines += ["", "Longest wait per policy:", ""]
    for policy, report in reports.items():
        w = longest_wait(report, scenario)
        cap = ", ".join(
            f"{f}: nominal {w['nominal'][f]}, cluster {capacity[f]}" for f in w["flavors"]
        )
        lines.append(
            f"- `{policy}`: `{w['job']}` waited {fmt(w['wait'])} s ({w['wait'] / 86400:.1f} d); "
            f"queue `{w['queue']}`, class `{w['class']}` (can borrow: {w['class_can_borrow']}), "
            f"{w['shape']} GPUs of {w['flavors']} ({cap}), runs {fmt(w['duration'] or 0)} s, "
            f"submitted at {fmt(w['submitted_at'])}, {w['reservations']} reserve events."
        )

    if ablation:
        rows = [summary_row(reports[p], scenario) for p in ("default", "greedy")]
        rows[:1] += ablation_rows(scenario, trace)
        lines += [
            "",
            "Ablation (the engine with one mechanism off; `greedy` has both off):",
            "",
            "| policy | mean wait s | p95 wait s | mean JCT s | longest wait s | preemptions |",
            "|---|---|---|---|---|---|",
        ]
        for row in rows:
            lines.append(
                f"| {row['policy']} | {fmt(row['mean_wait'])} | {fmt(row['p95_wait'])} | "
                f"{fmt(row['mean_jct'])} | {fmt(row['longest_wait'])} | "
                f"{row['preemptions']:,} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("benchmarks/results/traces"))
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--no-ablation", action="store_true", help="skip the ablation replays")
    args = parser.parse_args(argv)
    lines = [
        "# Trace findings",
        "",
        "Computed from the reports kept by `run_traces.py --keep-reports` "
        "(`benchmarks/trace_findings.py`).",
    ]
    for trace in (t.strip() for t in args.traces.split(",") if t.strip()):
        if not (args.dir / f"{trace}-scenario.json.gz").is_file():
            print(f"{trace}: no kept reports in {args.dir}; run run_traces.py --keep-reports")
            continue
        lines += ["", *trace_section(args.dir, trace, not args.no_ablation)]
    (args.dir / "findings.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
