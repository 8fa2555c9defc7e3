"""Scenario files (docs/SCENARIOS.md): the simulator's input, as typed, validated values.

Stdlib only (plus PyYAML for reading files). A loaded ``Scenario`` is what the simulator runs;
it knows nothing of the engine's snapshot types, so the loader and the engine stay independent.

Every mistake in a scenario raises ``ScenarioError`` whose message names the file, the entry and
the field, e.g. ``scenarios/x.yaml: jobs[3] (a1): field 'workers': must be an integer >= 1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

DEFAULT_HALF_LIFE = 7 * 24 * 3600.0
DEFAULT_RUNTIME = 3600.0
"""Estimated runtime used by backfill for a job with neither an estimate nor a class max_runtime."""

NODE_ACTIONS = ("fail", "recover", "cordon", "uncordon")
JOB_ACTIONS = ("cancel",)


class ScenarioError(ValueError):
    """A scenario that cannot be simulated; the message names file, entry and field."""


@dataclass(frozen=True, slots=True)
class FlavorSpec:
    name: str
    resource: str
    gpu_equivalent: float = 1.0
    price_per_hour: Decimal | None = None


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    gpus: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    name: str
    nodes: tuple[NodeSpec, ...]


@dataclass(frozen=True, slots=True)
class ServiceClassSpec:
    name: str
    priority: int
    preemptible: bool = True
    can_borrow: bool = True
    min_runtime: float = 0.0
    grace_period: float = 0.0
    max_runtime: float | None = None
    price_multiplier: Decimal = Decimal(1)


@dataclass(frozen=True, slots=True)
class QuotaSpec:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class QueueSpec:
    name: str
    team: str
    quotas: Mapping[str, QuotaSpec]
    cohort: str | None = None
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class TopologySpec:
    level: str
    required: bool


@dataclass(frozen=True, slots=True)
class JobSpec:
    name: str
    queue: str
    service_class: str  # the YAML key is `class`
    submit_at: float
    workers: int
    gpus_per_worker: int
    flavors: tuple[str, ...]  # `flavor: x` loads as ("x",); `flavors: [x, y]` keeps the order
    duration: float | None = None  # None: never ends
    estimated_runtime: float | None = None
    min_workers: int | None = None
    topology: TopologySpec | None = None
    checkpoint_interval: float | None = None


@dataclass(frozen=True, slots=True)
class EventSpec:
    at: float
    action: str  # one of NODE_ACTIONS (node set) or JOB_ACTIONS (job set)
    node: str | None = None
    job: str | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    cycle_interval: float
    flavors: tuple[FlavorSpec, ...]
    clusters: tuple[ClusterSpec, ...]
    service_classes: tuple[ServiceClassSpec, ...]
    queues: tuple[QueueSpec, ...]
    jobs: tuple[JobSpec, ...]
    events: tuple[EventSpec, ...] = ()
    topology_levels: tuple[str, ...] = ()
    until: float | None = None
    half_life: float = DEFAULT_HALF_LIFE
    default_runtime: float = DEFAULT_RUNTIME
    source: str = "<scenario>"  # the file it came from, for messages
