"""The engine's contract: an immutable snapshot in, decisions out (docs/SCHEDULING.md).

The live platform fills a ``Snapshot`` from the database (job identity is ``str(job.pk)``, nodes
are identified by ``(cluster, name)``); the simulator fills it from a scenario. Nothing here
knows about Django, clocks or I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpusched.engine.explain import PendingInfo

__all__ = [
    "STOP_REASONS",
    "Admit",
    "AdmittedJob",
    "Cluster",
    "Cohort",
    "CycleResult",
    "Flavor",
    "Node",
    "PendingInfo",
    "PendingJob",
    "Queue",
    "Quota",
    "Reserve",
    "Scale",
    "ServiceClass",
    "Snapshot",
    "Stop",
    "Topology",
]

STOP_REASONS = (
    "reclaim", "fair-share", "priority", "node-failure", "node-drain", "max-runtime"
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Flavor:
    """One schedulable kind of GPU: whole GPUs of a model or one MIG profile."""

    name: str
    resource: str = "nvidia.com/gpu"
    gpu_equivalent: float = 1.0
    price_per_hour: float | None = None


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    capacity: Mapping[str, int]  # flavor name -> units exposed
    labels: Mapping[str, str] = field(default_factory=dict)
    schedulable: bool = True  # False: cordoned or NotReady (running jobs stay)
    failed: bool = False  # True: jobs with a worker here are stopped and requeued
    draining: bool = False  # True: takes no new work, and its jobs are stopped and requeued


@dataclass(frozen=True, slots=True)
class Cluster:
    name: str
    nodes: tuple[Node, ...]
    prices: Mapping[str, float] = field(default_factory=dict)  # per-flavor price override


@dataclass(frozen=True, slots=True)
class ServiceClass:
    name: str
    priority: int
    preemptible: bool = True
    can_borrow: bool = True
    min_runtime: float = 0.0
    grace_period: float = 0.0
    max_runtime: float | None = None
    # seconds after each (re)start during which only a reclaim (rule 2) may stop the job: no
    # fair-share (rule 3) or priority (rule 4) stop; the platform resolves a class's null to its
    # default (``PREEMPTION_PROTECTION_SECONDS``)
    preemption_protection: float = 0.0


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None  # None: no limit (bounded by the cohort pool)
    lending_limit: int | None = None  # None: all of the nominal may be lent


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    quotas: Mapping[str, Quota]
    team: str = ""
    cohort: str | None = None
    weight: float = 1.0
    decayed_usage: float = 0.0  # H(q): GPU-equivalent-seconds, decayed with the half-life


@dataclass(frozen=True, slots=True)
class Cohort:
    """A declared cohort of the tree (docs/SCHEDULING.md section 2a). A cohort a queue names
    but the snapshot does not declare is a flat root cohort without quota of its own."""

    name: str
    parent: str | None = None
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Topology:
    level: str
    required: bool


@dataclass(frozen=True, slots=True)
class PendingJob:
    name: str
    queue: str
    service_class: str
    submitted_at: float
    workers: int
    gpus_per_worker: int
    flavors: tuple[str, ...]  # ordered preference; the first that fits wins
    min_workers: int | None = None  # set: elastic
    topology: Topology | None = None
    estimated_runtime: float | None = None
    # set: only these clusters may run it (a workload applied to one cluster, docs/KUEUE.md)
    clusters: tuple[str, ...] = ()
    stops: int = 0  # times it was stopped and requeued before (any reason): it does not age


@dataclass(frozen=True, slots=True)
class AdmittedJob:
    """A job holding GPUs: running, waiting for its victims' grace period, or stopping."""

    name: str
    queue: str
    service_class: str
    submitted_at: float
    cluster: str
    flavor: str
    gpus_per_worker: int
    workers: int  # current worker count
    placement: Mapping[str, int]  # node name -> units of `flavor`
    started_at: float | None  # None while waiting for victims (see start_at)
    requested_workers: int | None = None  # elastic upper bound; None: == workers
    min_workers: int | None = None
    topology: Topology | None = None
    estimated_runtime: float | None = None
    start_at: float | None = None  # a preemptor waiting for its victims' grace period
    stopping: bool = False
    release_at: float | None = None  # stopping: when its GPUs come free
    held_for: str | None = None  # stopping: capacity held for this preemptor
    stops: int = 0  # times it was stopped and requeued before (any reason): rule 5 picks it last
    checkpoint_interval: float | None = None  # None: a stop loses all the work of this run

    @property
    def max_workers(self) -> int:
        return self.requested_workers if self.requested_workers is not None else self.workers


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: float
    flavors: tuple[Flavor, ...]
    clusters: tuple[Cluster, ...]
    service_classes: tuple[ServiceClass, ...]
    queues: tuple[Queue, ...]
    admitted: tuple[AdmittedJob, ...]
    pending: tuple[PendingJob, ...]
    topology_levels: tuple[str, ...] = ()
    default_runtime: float = 3600.0
    half_life: float = 7 * 24 * 3600.0
    cohorts: tuple[Cohort, ...] = ()  # the declared cohorts (a tree); empty: flat cohorts


# ---- decisions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Admit:
    job: str
    cluster: str
    flavor: str
    workers: int
    placement: Mapping[str, int]  # node name -> units
    start_at: float  # == now, or later when it waits for victims' grace periods
    borrowing: bool = False


@dataclass(frozen=True, slots=True)
class Stop:
    job: str
    reason: str  # one of STOP_REASONS
    by: str | None  # the preemptor, if any
    release_at: float  # when its GPUs come free (now + grace period)
    requeue: bool = True  # False for max-runtime (the job failed)


@dataclass(frozen=True, slots=True)
class Scale:
    job: str
    workers: int
    placement: Mapping[str, int]
    by: str | None = None  # set when shrunk for a preemptor
    reason: str | None = None  # "grow", or the preemption reason of a shrink
    release_at: float | None = None


@dataclass(frozen=True, slots=True)
class Reserve:
    job: str
    start: float
    cluster: str
    flavor: str
    nodes: Mapping[str, int]  # node name -> units reserved at `start`


@dataclass(frozen=True, slots=True)
class CycleResult:
    admits: tuple[Admit, ...]
    stops: tuple[Stop, ...]
    scales: tuple[Scale, ...]
    reservations: tuple[Reserve, ...]  # backfill's, by start
    pending: Mapping[str, PendingInfo]  # every job still pending, by name (empty: explain off)

    @property
    def reservation(self) -> Reserve | None:
        """The first reservation to start, if any."""
        return self.reservations[0] if self.reservations else None
