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

    @property
    def count(self) -> int:
        return sum(self.workers.values())

    def units(self) -> dict[int, int]:
        return {i: w * self.g for i, w in self.workers.items()}
