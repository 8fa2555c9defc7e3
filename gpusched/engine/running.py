"""An admitted job as a cycle sees it (``RunningJob``), and the class of a job naming none."""

from __future__ import annotations

from dataclasses import dataclass

from gpusched.engine.model import ServiceClass, Topology
from gpusched.engine.placement import Workers

DEFAULT_CLASS = ServiceClass(name="", priority=0)  # for a job whose class the snapshot lacks


@dataclass(slots=True)
class RunningJob:
    """An admitted job as the cycle sees it (workers per node index, mutable by shrink/grow)."""

    name: str
    queue: str
    cls: ServiceClass
    cluster: str
    flavor: str
    g: int  # GPUs (units of the flavor) per worker
    workers: Workers
    started_at: float | None
    est_end: float
    min_workers: int | None
    max_workers: int
    topology: Topology | None
    preemptible_now: bool  # started, not stopping, not waiting for victims
    stops: int = 0  # times stopped and requeued before this run (AdmittedJob.stops)
    checkpoint_interval: float | None = None
    known_end: float | None = None  # est_end when an estimate or its class max_runtime gives it

    def work_lost(self, now: float) -> float:
        ran = now - self.started_at if self.started_at is not None else 0.0
        return lost_work(ran, self.count * self.g, self.checkpoint_interval)

    def cheaper_to_wait_for(self, now: float, need: int) -> bool:
        """Rule 1: a preemptor of ``need`` GPUs waiting for this job's estimated end costs less
        GPU time than stopping it throws away (the time since its last checkpoint times its
        GPUs), so fair sharing and priority let it finish. Never for a job without an estimate
        (``estimated_runtime`` or its class ``max_runtime``) or past it: the estimate is wrong."""
        if self.known_end is None or self.started_at is None or now >= self.known_end:
            return False
        ran = now - self.started_at
        since_checkpoint = ran % self.checkpoint_interval if self.checkpoint_interval else ran
        return (self.known_end - now) * need < since_checkpoint * self.count * self.g

    @property
    def count(self) -> int:
        return sum(self.workers.values())

    def units(self) -> dict[int, int]:
        return {i: w * self.g for i, w in self.workers.items()}


def lost_work(ran: float, units: int, checkpoint_interval: float | None) -> float:
    """GPU-seconds a stop throws away after ``ran`` seconds since the job's last (re)start: the
    time since its last checkpoint (all of it without checkpoints) times its GPUs. A restart
    resumes from a checkpoint, so checkpoints fall every ``checkpoint_interval`` from the start."""
    ran = max(0.0, ran)
    if checkpoint_interval:
        ran %= checkpoint_interval
    return ran * units
