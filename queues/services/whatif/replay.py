"""One replay of the submissions through the engine's simulator, measured per queue.

``WhatIfSimulator`` is the pure simulator (``gpusched.sim.simulate.Simulator``) that also keeps,
between two events, what each queue holds: GPU-equivalent-seconds per hour of the window (the
allocation plot) and, per flavor, the GPU-equivalent-seconds above the queue's nominal quota of
this run (borrowed); per cohort, the GPU-equivalent-seconds its subtree used beyond its capacity
in the tree (what it borrowed from its parent: docs/SCHEDULING.md section 2a, the engine's
arithmetic). Waits and preemptions come from the simulator's own jobs at the end.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from gpusched.engine.model import Queue
from gpusched.engine.quota import QuotaState, QuotaStatics
from gpusched.sim.scenario import Scenario
from gpusched.sim.simulate import SimJob, Simulator

BUCKET = 3600.0  # the allocation plot's step: hourly averages
HOLDING = ("running", "stopping")  # states in which a job's GPUs count as allocated


@dataclass(frozen=True)
class JobOutcome:
    queue: str
    wait: float  # seconds from submission to first start, or to the end if it never started
    started: bool
    preemptions: int


@dataclass(frozen=True)
class RunOutcome:
    jobs: dict[str, JobOutcome]
    gpu_seconds: dict[str, float]  # per queue, GPU-equivalent-seconds allocated
    borrowed_seconds: dict[str, float]  # per queue, GPU-equivalent-seconds above nominal
    cohort_borrowed_seconds: dict[str, float]  # per cohort, above its capacity in the tree
    allocation: dict[str, list[float]]  # per queue, mean GPU-equivalents per hourly bucket
    capacity: float  # GPU-equivalents of the nodes that are up


class WhatIfSimulator(Simulator):
    def __init__(
        self, scenario: Scenario, start: float, end: float, progress: Callable[[float], None]
    ) -> None:
        super().__init__(scenario)
        self.window = (start, end)
        self.on_progress = progress
        self.buckets = max(1, math.ceil((end - start) / BUCKET))
        self.allocation = {q.name: [0.0] * self.buckets for q in scenario.queues}
        self.gpu_seconds: dict[str, float] = defaultdict(float)
        self.borrowed: dict[str, float] = defaultdict(float)
        self.cohort_borrowed: dict[str, float] = defaultdict(float)
        queues = [Queue(q.name, self.quotas[q.name], cohort=q.cohort) for q in scenario.queues]
        self.tree_quotas = QuotaStatics(queues, self.cohorts)
        self.reported = -1

    def advance(self, t: float) -> None:
        if t > self.last_t:
            self._hold(self.last_t, t)
        super().advance(t)
        start, end = self.window
        done = int(20 * min(1.0, (t - start) / max(1.0, end - start)))
        if done != self.reported:  # at most 20 reports per run
            self.reported = done
            self.on_progress(done / 20)

    def _hold(self, t0: float, t1: float) -> None:
        held: dict[tuple[str, str], int] = defaultdict(int)
        for job in self.admitted.values():
            if job.state in HOLDING and job.placement:
                held[(job.spec.queue, job.flavor)] += sum(job.placement.values())
        if not held:
            return
        dt = t1 - t0
        per_queue: dict[str, float] = defaultdict(float)
        for (queue, flavor), units in held.items():
            geq = self.geq.get(flavor, 1.0)
            per_queue[queue] += units * geq
            quota = self.quotas[queue].get(flavor)
            nominal = quota.nominal if quota is not None else 0
            if units > nominal:
                self.borrowed[queue] += (units - nominal) * geq * dt
        tree = QuotaState(list(self.tree_quotas.queues.values()), held, self.tree_quotas)
        for (cohort, flavor), used in tree.pool_used.items():
            over = used - tree.tree.cohort_limits(cohort, flavor).nominal
            if over > 0:
                self.cohort_borrowed[cohort] += over * self.geq.get(flavor, 1.0) * dt
        for queue, rate in per_queue.items():
            self.gpu_seconds[queue] += rate * dt
            self._spread(self.allocation[queue], t0, t1, rate)

    def _spread(self, series: list[float], t0: float, t1: float, rate: float) -> None:
        start, end = self.window
        t0, t1 = max(t0, start), min(t1, end)
        while t1 > t0:
            index = min(self.buckets - 1, int((t0 - start) // BUCKET))
            edge = min(t1, start + (index + 1) * BUCKET)
            if edge <= t0:  # the last bucket: the window's end is not on an hour
                edge = t1
            series[index] += rate * (edge - t0) / BUCKET
            t0 = edge

    def outcome(self) -> RunOutcome:
        end = self.window[1]
        return RunOutcome(
            jobs={name: _job_outcome(job, end) for name, job in self.jobs.items()},
            gpu_seconds=dict(self.gpu_seconds),
            borrowed_seconds=dict(self.borrowed),
            cohort_borrowed_seconds=dict(self.cohort_borrowed),
            allocation=self.allocation,
            capacity=self.available_geq(),
        )


def _job_outcome(job: SimJob, end: float) -> JobOutcome:
    started = job.first_start is not None
    until = job.first_start if job.first_start is not None else end
    return JobOutcome(
        queue=job.spec.queue,
        wait=max(0.0, until - job.spec.submit_at),
        started=started,
        preemptions=job.preemptions,
    )


def replay(
    scenario: Scenario, start: float, end: float, progress: Callable[[float], None]
) -> RunOutcome:
    """Replay ``scenario`` from ``start`` to ``end`` (its ``until``) and measure it."""
    sim = WhatIfSimulator(scenario, start, end, progress)
    sim.run()
    progress(1.0)  # the last event may come before the window's end
    return sim.outcome()
