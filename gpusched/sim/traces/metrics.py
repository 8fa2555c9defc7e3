"""Metrics of simulator reports for trace benchmarks: percentiles, fairness, time series.

Pure functions over the report dict of docs/SCENARIOS.md (and the scenario dict it came from).

- Percentiles interpolate linearly between order statistics (numpy's default "linear").
- Jain's fairness index of x_1..x_n is (sum x)^2 / (n * sum x^2): 1 when all are equal, 1/n
  when one takes everything. For queues, x_i = GPU-hours of queue i / its nominal quota in
  GPU-equivalents, over queues with a nominal > 0 (a queue with no quota has no fair share to
  measure against).
- Time series are step functions rebuilt from the report's events: a job holds
  sum(placement) x gpu_equivalent of its flavor from its ``admit`` (a ``scale`` replaces the
  placement) until its ``finish``/``fail``, or until ``preempt``/``cancel`` plus its class
  grace period. A job is pending from its submission until it is admitted, and again from its
  ``requeue`` (a preempted job is stopping, not pending, until then; ``max-runtime`` ends it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Report = Mapping[str, Any]
ScenarioDict = Mapping[str, Any]
Series = list[tuple[float, float]]
"""A step function: (t, value) points sorted by t; the value holds until the next point."""


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) with linear interpolation; ValueError if empty."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index; 1.0 for all-zero values (nobody got more than anyone else)."""
    if not values:
        raise ValueError("Jain index of no values")
    if any(v < 0 for v in values):
        raise ValueError("Jain index needs values >= 0")
    squares = sum(v * v for v in values)
    if squares == 0:
        return 1.0
    return sum(values) ** 2 / (len(values) * squares)


def flavor_equivalents(scenario: ScenarioDict) -> dict[str, float]:
    return {f["name"]: float(f.get("gpu_equivalent", 1.0)) for f in scenario["flavors"]}


def nominal_equivalents(scenario: ScenarioDict) -> dict[str, float]:
    """Each queue's nominal quota summed over flavors, in GPU-equivalents."""
    geq = flavor_equivalents(scenario)
    return {
        q["name"]: sum(
            float(quota.get("nominal", 0)) * geq[flavor]
            for flavor, quota in (q.get("quotas") or {}).items()
        )
        for q in scenario["queues"]
    }


def capacity_equivalents(scenario: ScenarioDict) -> float:
    """All GPUs of all clusters in GPU-equivalents (``count`` expands ``name_prefix`` entries)."""
    geq = flavor_equivalents(scenario)
    total = 0.0
    for cluster in scenario["clusters"]:
        for node in cluster["nodes"]:
            per_node = sum(n * geq[f] for f, n in node["gpus"].items())
            total += per_node * int(node.get("count", 1))
    return total


def quota_fairness(report: Report, scenario: ScenarioDict) -> float:
    """Jain index of x_i = gpu_hours_i / nominal_i over queues with nominal > 0."""
    used = report.get("queues", {})
    shares = [
        float(used.get(name, {}).get("gpu_hours", 0.0)) / nominal
        for name, nominal in nominal_equivalents(scenario).items()
        if nominal > 0
    ]
    return jain_index(shares) if shares else 1.0


@dataclass(frozen=True, slots=True)
class JobTimes:
    jcts: list[float]  # finish - submit, finished jobs
    waits: list[float]  # first start - submit, started jobs
    longest_wait: float  # also counts never-started jobs, waiting until the horizon
    never_started: int


def job_times(report: Report) -> JobTimes:
    horizon = report_horizon(report)
    jcts: list[float] = []
    waits: list[float] = []
    longest = 0.0
    never = 0
    for job in report.get("jobs", []):
        submitted = float(job["submitted_at"])
        started = job.get("started_at")
        if started is None:
            never += 1
            longest = max(longest, horizon - submitted)
            continue
        wait = float(started) - submitted
        waits.append(wait)
        longest = max(longest, wait)
        if job.get("state") == "finished" and job.get("finished_at") is not None:
            jcts.append(float(job["finished_at"]) - submitted)
    return JobTimes(jcts, waits, longest, never)


def report_horizon(report: Report) -> float:
    """The last moment the report knows of: makespan, last event, last submission."""
    times = [float(report.get("summary", {}).get("makespan") or 0.0)]
    times += [float(e["t"]) for e in report.get("events", [])]
    times += [float(j["submitted_at"]) for j in report.get("jobs", [])]
    return max(times)


def _job_classes(scenario: ScenarioDict) -> dict[str, float]:
    grace = {c["name"]: float(c.get("grace_period", 0) or 0) for c in scenario["service_classes"]}
    return {j["name"]: grace.get(j["class"], 0.0) for j in scenario["jobs"]}


def allocation_series(report: Report, scenario: ScenarioDict) -> Series:
    """GPU-equivalents allocated over time (a step function starting at 0)."""
    geq = flavor_equivalents(scenario)
    grace = _job_classes(scenario)
    holding: dict[str, float] = {}
    flavor_of: dict[str, str] = {}
    deltas: list[tuple[float, float]] = []
    for event in report.get("events", []):
        kind, job, t = event["type"], event.get("job"), float(event["t"])
        if job is None:
            continue
        if kind in ("admit", "scale"):
            if kind == "admit":
                flavor_of[job] = event["flavor"]
            amount = sum(event.get("placement", {}).values()) * geq[flavor_of[job]]
            deltas.append((t, amount - holding.get(job, 0.0)))
            holding[job] = amount
        elif kind in ("finish", "fail", "preempt", "cancel") and job in holding:
            release = t + (grace.get(job, 0.0) if kind in ("preempt", "cancel") else 0.0)
            deltas.append((release, -holding.pop(job)))
    return _accumulate(deltas)


def pending_series(report: Report) -> Series:
    """Number of pending (submitted, not running, not ended) jobs over time."""
    deltas = [(float(j["submitted_at"]), 1.0) for j in report.get("jobs", [])]
    state: dict[str, str] = {j["name"]: "pending" for j in report.get("jobs", [])}
    for event in report.get("events", []):
        kind, job, t = event["type"], event.get("job"), float(event["t"])
        if job is None or job not in state:
            continue
        before = state[job]
        if kind == "admit":
            after = "running"
        elif kind == "preempt":
            after = "done" if event.get("reason") == "max-runtime" else "stopping"
        elif kind == "requeue":
            after = "pending" if before != "done" else before
        elif kind in ("finish", "fail", "cancel"):
            after = "done"
        else:
            continue
        if before != after:
            change = (after == "pending") - (before == "pending")
            if change:
                deltas.append((t, float(change)))
            state[job] = after
    return _accumulate(deltas)


def _accumulate(deltas: Iterable[tuple[float, float]]) -> Series:
    series: Series = [(0.0, 0.0)]
    level = 0.0
    for t, change in sorted(deltas, key=lambda d: d[0]):
        level += change
        if series[-1][0] == t:
            series[-1] = (t, level)
        else:
            series.append((t, level))
    return series


def bucket_means(series: Series, end: float, buckets: int) -> list[tuple[float, float]]:
    """Time-weighted mean of a step function over ``buckets`` equal buckets of [0, end];
    returns (bucket start, mean) pairs."""
    if buckets < 1 or end <= 0:
        raise ValueError("need at least one bucket and end > 0")
    width = end / buckets
    sums = [0.0] * buckets
    points = [*series, (end, series[-1][1])]
    for (t0, value), (t1, _) in itertools.pairwise(points):
        lo, hi = max(t0, 0.0), min(t1, end)
        if hi <= lo or value == 0:
            continue
        first = max(0, min(buckets - 1, int(lo / width) - 1))  # -1: float rounding at edges
        for index in range(first, buckets):
            left, right = index * width, (index + 1) * width
            if left >= hi:
                break
            overlap = min(hi, right) - max(lo, left)
            if overlap > 0:
                sums[index] += value * overlap
    return [(i * width, s / width) for i, s in enumerate(sums)]


def summary_row(report: Report, scenario: ScenarioDict) -> dict[str, float | int | str]:
    """The benchmark table's numbers for one (scenario, policy) report."""
    summary = report.get("summary", {})
    times = job_times(report)
    return {
        "policy": str(report.get("policy", "?")),
        "jobs": len(report.get("jobs", [])),
        "finished": int(summary.get("finished", len(times.jcts))),
        "mean_jct": sum(times.jcts) / len(times.jcts) if times.jcts else math.nan,
        "p95_jct": percentile(times.jcts, 95) if times.jcts else math.nan,
        "mean_wait": sum(times.waits) / len(times.waits) if times.waits else math.nan,
        "p95_wait": percentile(times.waits, 95) if times.waits else math.nan,
        "makespan": float(summary.get("makespan", math.nan)),
        "gpu_utilization": float(summary.get("gpu_utilization", math.nan)),
        "preemptions": int(summary.get("preemptions", 0)),
        "jain_quota": quota_fairness(report, scenario),
        "longest_wait": times.longest_wait,
        "never_started": times.never_started,
        "engine_seconds": float(summary.get("engine_seconds", math.nan)),
        "worst_cycle_ms": float(summary.get("cycle_ms", {}).get("max", math.nan)),
    }


COLUMNS = (
    ("policy", "policy"),
    ("jobs", "jobs"),
    ("finished", "finished"),
    ("mean_jct", "mean JCT s"),
    ("p95_jct", "p95 JCT s"),
    ("mean_wait", "mean wait s"),
    ("p95_wait", "p95 wait s"),
    ("makespan", "makespan s"),
    ("gpu_utilization", "GPU util"),
    ("preemptions", "preemptions"),
    ("jain_quota", "Jain (GPU-h/quota)"),
    ("longest_wait", "longest wait s"),
    ("never_started", "never started"),
    ("engine_seconds", "engine s"),
    ("worst_cycle_ms", "worst cycle ms"),
)


def markdown_table(rows: Sequence[Mapping[str, float | int | str]]) -> str:
    """A markdown table of :func:`summary_row` rows."""
    lines = [
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(key, row[key]) for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def _cell(key: str, value: float | int | str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return "-"
    if key in ("gpu_utilization", "jain_quota"):
        return f"{value:.3f}"
    if key == "engine_seconds":
        return f"{value:.2f}"
    if key == "worst_cycle_ms":
        return f"{value:.1f}"
    return f"{value:,.0f}"
