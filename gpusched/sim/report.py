"""The simulator's JSON report (docs/SCENARIOS.md): summary, queues, jobs and events."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from gpusched.sim.scenario import Scenario

if TYPE_CHECKING:
    from gpusched.sim.simulate import SimJob


def num(x: float) -> float | int:
    """Integral floats as ints, so that reports read ``"t": 100`` rather than ``100.0``."""
    return int(x) if float(x).is_integer() else round(x, 6)


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = max(0, math.ceil(p / 100.0 * len(ordered)) - 1)
    return ordered[k]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


class ReportBuilder:
    def __init__(self, scenario: Scenario, policy: str, geq: Mapping[str, float]) -> None:
        self.scenario = scenario
        self.policy = policy
        self.geq = geq
        self.events: list[dict[str, Any]] = []
        self.cycle_seconds: list[float] = []
        self.allocated = 0.0
        self.available = 0.0
        self.queue_seconds: dict[str, float] = {q.name: 0.0 for q in scenario.queues}

    def event(self, t: float, kind: str, **fields: Any) -> None:
        entry: dict[str, Any] = {"t": num(t), "type": kind}
        for key, value in fields.items():
            entry[key] = num(value) if isinstance(value, float) else value
        self.events.append(entry)

    def cycle_time(self, seconds: float) -> None:
        self.cycle_seconds.append(seconds)

    def integrate(self, alloc: Mapping[str, float], available: float, dt: float) -> None:
        total = 0.0
        for q, rate in alloc.items():
            if rate:
                self.queue_seconds[q] = self.queue_seconds.get(q, 0.0) + rate * dt
                total += rate
        self.allocated += total * dt
        self.available += available * dt

    def build(self, jobs: Iterable[SimJob], end: float) -> dict[str, Any]:
        job_list = list(jobs)
        waits: list[float] = []
        jcts: list[float] = []
        per_queue_waits: dict[str, list[float]] = {q.name: [] for q in self.scenario.queues}
        per_queue_jobs: dict[str, int] = {q.name: 0 for q in self.scenario.queues}
        counts = {"finished": 0, "failed": 0, "cancelled": 0}
        never = 0
        rows = []
        for j in job_list:
            spec = j.spec
            per_queue_jobs[spec.queue] = per_queue_jobs.get(spec.queue, 0) + 1
            if j.state in counts:
                counts[j.state] += 1
            if j.first_start is None:
                never += 1
            else:
                wait = j.first_start - spec.submit_at
                waits.append(wait)
                per_queue_waits.setdefault(spec.queue, []).append(wait)
            if j.state == "finished" and j.ended_at is not None:
                jcts.append(j.ended_at - spec.submit_at)
            state = "pending" if j.state in ("waiting", "starting") else j.state
            rows.append(
                {
                    "name": spec.name,
                    "queue": spec.queue,
                    "state": state,
                    "submitted_at": num(spec.submit_at),
                    "started_at": num(j.first_start) if j.first_start is not None else None,
                    "finished_at": num(j.ended_at) if j.ended_at is not None else None,
                    "workers": j.workers or spec.workers,
                    "cluster": j.cluster or None,
                    "flavor": j.flavor or None,
                    "preemptions": j.preemptions,
                }
            )
        start = min((j.spec.submit_at for j in job_list), default=0.0)
        makespan = max(0.0, end - start)
        cycles = self.cycle_seconds
        ms = [s * 1000.0 for s in cycles]
        summary = {
            "jobs": len(job_list),
            "finished": counts["finished"],
            "failed": counts["failed"],
            "cancelled": counts["cancelled"],
            "never_started": never,
            "makespan": round(makespan, 3),
            "mean_jct": round(_mean(jcts), 3),
            "mean_wait": round(_mean(waits), 3),
            "p95_wait": round(_percentile(waits, 95), 3),
            "gpu_utilization": round(self.allocated / self.available, 4) if self.available else 0.0,
            "preemptions": sum(j.preemptions for j in job_list),
            "cycles": len(cycles),
            "engine_seconds": round(sum(cycles), 4),
            "cycle_ms": {
                "mean": round(_mean(ms), 3),
                "p99": round(_percentile(ms, 99), 3),
                "max": round(max(ms, default=0.0), 3),
            },
        }
        queues = {
            name: {
                "gpu_hours": round(self.queue_seconds.get(name, 0.0) / 3600.0, 4),
                "mean_wait": round(_mean(per_queue_waits.get(name, [])), 3),
                "jobs": per_queue_jobs.get(name, 0),
            }
            for name in per_queue_jobs
        }
        events = sorted(self.events, key=lambda e: e["t"])  # stable: keeps decision order
        return {
            "scenario": self.scenario.name,
            "policy": self.policy,
            "summary": summary,
            "queues": queues,
            "jobs": rows,
            "events": events,
        }
