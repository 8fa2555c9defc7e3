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

    def work_lost(self, now: float) -> float:
        ran = now - self.started_at if self.started_at is not None else 0.0
        return lost_work(ran, self.count * self.g, self.checkpoint_interval)

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
