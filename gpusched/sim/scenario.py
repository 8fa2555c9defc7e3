"""Scenario files (docs/SCENARIOS.md): the simulator's input, as typed, validated values.

Stdlib only (plus PyYAML for reading files). A loaded ``Scenario`` is what the simulator runs;
it knows nothing of the engine's snapshot types, so the loader and the engine stay independent.

Every mistake in a scenario raises ``ScenarioError`` whose message names the file, the entry and
the field, e.g. ``scenarios/x.yaml: jobs[3] (a1): field 'workers': must be an integer >= 1``.

Loader rules beyond the format's example:

- Required: ``name``, ``cycle_interval``, ``flavors``, ``clusters``, ``service_classes``,
  ``queues``, ``jobs`` (may be empty); per job ``name``, ``queue``, ``class``, ``submit_at``,
  ``workers``, ``gpus_per_worker``, ``duration`` (``null`` = never ends) and exactly one of
  ``flavor`` / ``flavors``. A queue's ``quotas`` may be left out (nominal 0 everywhere).
- Optional top-level ``default_runtime`` (seconds, default 3600): the backfill estimate for a
  job with neither ``estimated_runtime`` nor a class ``max_runtime``.
- Optional top-level ``preemption_protection`` (seconds, default 0): the default of a class
  whose ``preemption_protection`` is absent or ``null`` (the loaded class holds the result).
- Booleans are never numbers (YAML ``true`` is not ``1``); counts are integers, times finite
  numbers. Node label values that YAML reads as integers (``rack: 1``) are kept as text.
- A ``borrowing_limit`` / ``lending_limit`` on a queue without ``cohort`` is accepted and has no
  effect: such a queue never borrows and has nobody to lend to.
- Optional top-level ``cohorts`` (docs/SCHEDULING.md section 2a): ``{name, parent?, weight?,
  quotas?}`` per cohort; a ``parent`` must be a declared cohort and the parents may not form a
  cycle; a cohort's ``lending_limit`` may exceed its own nominal (it bounds what its subtree
  lends). A cohort a queue names but ``cohorts`` leaves out is a flat root cohort.
- Lists keep file order: jobs, events (the simulator orders events by ``at``), and a job's
  ``flavors`` (its preference order).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

import yaml

from gpusched.sim.scenario_fields import Entry, kind
from gpusched.sim.scenario_fields import ScenarioError as ScenarioError  # re-exported

DEFAULT_HALF_LIFE = 7 * 24 * 3600.0
DEFAULT_RUNTIME = 3600.0
"""Estimated runtime used by backfill for a job with neither an estimate nor a class max_runtime."""

_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""``yaml.safe_load``'s loader, in C when libyaml is there (10x faster on large scenarios)."""

NODE_ACTIONS = ("fail", "recover", "cordon", "drain", "uncordon")
JOB_ACTIONS = ("cancel",)


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
    # resolved: the class's own value, or the scenario's top-level ``preemption_protection``
    preemption_protection: float = 0.0


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
class CohortSpec:
    name: str
    parent: str | None = None
    quotas: Mapping[str, QuotaSpec] = field(default_factory=dict)
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
    cohorts: tuple[CohortSpec, ...] = ()  # the declared cohorts (a tree; section 2a)


# --------------------------------------------------------------------------- loading


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario YAML file; every problem raises ``ScenarioError``."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ScenarioError(f"{source}: cannot read the file: {exc.strerror or exc}") from exc
    try:
        data = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        detail = str(exc).replace("\n", " ")
        raise ScenarioError(f"{source}: invalid YAML: {detail}") from exc
    if not isinstance(data, Mapping):
        raise ScenarioError(
            f"{source}: the file must hold a mapping (name, flavors, clusters, ...), "
            f"got {kind(data)}"
        )
    return parse_scenario(data, source=source)


def parse_scenario(data: Mapping[str, Any], source: str = "<scenario>") -> Scenario:
    """Validate a scenario given as plain data (what ``yaml.safe_load`` returns).

    Lists keep their order (jobs stay in file order, ``flavors`` keep their preference order);
    names must be unique per kind, node names across all clusters.
    """
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: a scenario must be a mapping, got {kind(data)}")
    top = Entry(source, "", data)
    name = top.string("name")
    cycle_interval = top.number("cycle_interval", minimum=0.0, strict=True)
    until = top.number("until", minimum=0.0, strict=True, optional=True)
    half_life = top.number("half_life", minimum=0.0, strict=True, default=DEFAULT_HALF_LIFE)
    default_runtime = top.number(
        "default_runtime", minimum=0.0, strict=True, default=DEFAULT_RUNTIME
    )
    topology_levels = _topology_levels(top)
    protection = top.number("preemption_protection", minimum=0.0, default=0.0)

    flavors = tuple(_flavor(e) for e in top.entries("flavors", allow_empty=False))
    _unique(flavors, "flavor", top, "flavors")
    flavor_names = {f.name for f in flavors}

    clusters = tuple(_cluster(e, flavor_names) for e in top.entries("clusters", allow_empty=False))
    _unique(clusters, "cluster", top, "clusters")
    _unique_nodes(top, clusters)

    classes = tuple(
        _service_class(e, protection) for e in top.entries("service_classes", allow_empty=False)
    )
    _unique(classes, "service class", top, "service_classes")

    queues = tuple(_queue(e, flavor_names) for e in top.entries("queues", allow_empty=False))
    _unique(queues, "queue", top, "queues")
    cohorts = tuple(_cohort(e, flavor_names) for e in top.entries("cohorts", optional=True))
    _unique(cohorts, "cohort", top, "cohorts")
    _cohort_parents(top, cohorts)

    refs = _Refs(
        flavors=flavor_names,
        classes={c.name for c in classes},
        queues={q.name for q in queues},
        topology_levels=topology_levels,
    )
    jobs = tuple(_job(e, refs) for e in top.entries("jobs"))
    _unique(jobs, "job", top, "jobs")

    node_names = {n.name for c in clusters for n in c.nodes}
    job_names = {j.name for j in jobs}
    events = tuple(_event(e, node_names, job_names) for e in top.entries("events", optional=True))
    top.finish()
    return Scenario(
        name=name,
        cycle_interval=cycle_interval,
        flavors=flavors,
        clusters=clusters,
        service_classes=classes,
        queues=queues,
        jobs=jobs,
        events=events,
        topology_levels=topology_levels,
        until=until,
        half_life=half_life,
        default_runtime=default_runtime,
        source=source,
        cohorts=cohorts,
    )


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def _unique(items: Sequence[_Named], kind: str, top: Entry, key: str) -> None:
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.name in first:
            raise ScenarioError(
                f"{top.source}: {key}[{index}] ({item.name}): field 'name': duplicate {kind} "
                f"name {item.name!r} (first at {key}[{first[item.name]}])"
            )
        first[item.name] = index


def _unique_nodes(top: Entry, clusters: Sequence[ClusterSpec]) -> None:
    seen: dict[str, str] = {}
    for c_index, cluster in enumerate(clusters):
        for node in cluster.nodes:
            if node.name in seen:
                raise ScenarioError(
                    f"{top.source}: clusters[{c_index}] ({cluster.name}): node {node.name!r}: "
                    f"field 'name': duplicate node name (also in cluster {seen[node.name]!r}); "
                    "node names must be unique across all clusters"
                )
            seen[node.name] = cluster.name


def _topology_levels(top: Entry) -> tuple[str, ...]:
    levels = top.items("topology_levels", optional=True)
    for level in levels:
        if not isinstance(level, str) or not level:
            raise top.bad("topology_levels", "a list of label keys (strings)", level)
    if len(set(levels)) != len(levels):
        raise top.error("topology_levels", f"duplicate level in {levels!r}")
    return tuple(levels)


def _flavor(entry: Entry) -> FlavorSpec:
    name = entry.string("name")
    resource = entry.string("resource")
    equivalent = entry.number("gpu_equivalent", minimum=0.0, strict=True, default=1.0)
    if equivalent > 1.0:
        raise entry.bad("gpu_equivalent", "a number in (0, 1]", entry.data["gpu_equivalent"])
    price = entry.decimal("price_per_hour", default=None)
    entry.finish()
    return FlavorSpec(name, resource, equivalent, price)


def _gpus(entry: Entry, flavors: set[str]) -> dict[str, int]:
    gpus = entry.mapping("gpus")
    if not gpus:
        raise entry.error("gpus", "must name at least one flavor, e.g. {h100: 8}")
    result: dict[str, int] = {}
    for flavor, count in gpus.items():
        if flavor not in flavors:
            raise entry.error(f"gpus.{flavor}", f"unknown flavor {flavor!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise entry.bad(f"gpus.{flavor}", "an integer >= 0", count)
        result[flavor] = count
    return result


def _labels(entry: Entry) -> dict[str, str]:
    result: dict[str, str] = {}
    for key, value in entry.mapping("labels", optional=True).items():
        # YAML reads `rack: 1` as an int; a label value is a string, so numbers are accepted
        # and kept as their text. Anything else is a mistake.
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise entry.bad(f"labels.{key}", "a string", value)
        result[key] = str(value)
    return result


def _nodes(entry: Entry, flavors: set[str]) -> list[NodeSpec]:
    has_name = "name" in entry.data
    has_prefix = "name_prefix" in entry.data
    if has_name == has_prefix:
        raise ScenarioError(
            f"{entry.where()}: give exactly one of 'name' or 'name_prefix' (with 'count')"
        )
    if has_name:
        names = [entry.string("name")]
        if "count" in entry.data:
            raise entry.error("count", "only allowed with 'name_prefix'")
    else:
        prefix = entry.string("name_prefix")
        count = entry.required_integer("count", minimum=1)
        names = [f"{prefix}{i}" for i in range(count)]
    gpus = _gpus(entry, flavors)
    labels = _labels(entry)
    entry.finish()
    return [NodeSpec(name, dict(gpus), dict(labels)) for name in names]


def _cluster(entry: Entry, flavors: set[str]) -> ClusterSpec:
    name = entry.string("name")
    nodes = [n for e in entry.entries("nodes", allow_empty=False) for n in _nodes(e, flavors)]
    entry.finish()
    return ClusterSpec(name, tuple(nodes))


def _service_class(entry: Entry, default_protection: float) -> ServiceClassSpec:
    name = entry.string("name")
    priority = entry.raw("priority", optional=False)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise entry.bad("priority", "an integer", priority)
    # null or absent: the scenario's top-level default
    protection = entry.number("preemption_protection", minimum=0.0, optional=True, nullable=True)
    spec = ServiceClassSpec(
        name=name,
        priority=priority,
        preemptible=entry.boolean("preemptible", default=True),
        can_borrow=entry.boolean("can_borrow", default=True),
        min_runtime=entry.number("min_runtime", minimum=0.0, default=0.0),
        grace_period=entry.number("grace_period", minimum=0.0, default=0.0),
        max_runtime=entry.number(
            "max_runtime", minimum=0.0, strict=True, optional=True, nullable=True
        ),
        price_multiplier=entry.decimal("price_multiplier", default=Decimal(1)) or Decimal(0),
        preemption_protection=default_protection if protection is None else protection,
    )
    entry.finish()
    return spec


def _quota(entry: Entry, flavor: str, value: object, cohort: bool = False) -> QuotaSpec:
    key = f"quotas.{flavor}"
    if not isinstance(value, Mapping):
        raise entry.bad(key, "a mapping {nominal: N, borrowing_limit: B, lending_limit: L}", value)
    quota = Entry(entry.source, f"{entry.label}: quota {flavor!r}", value)
    nominal = quota.required_integer("nominal", minimum=0)
    borrowing = quota.integer("borrowing_limit", minimum=0, optional=True, nullable=True)
    lending = quota.integer("lending_limit", minimum=0, optional=True, nullable=True)
    if lending is not None and lending > nominal and not cohort:
        raise quota.error("lending_limit", f"must be <= nominal ({nominal}), got {lending}")
    quota.finish()
    return QuotaSpec(nominal, borrowing, lending)


def _queue(entry: Entry, flavors: set[str]) -> QueueSpec:
    name = entry.string("name")
    team = entry.optional_string("team") or name
    cohort = entry.optional_string("cohort")
    weight = entry.number("weight", minimum=0.0, strict=True, default=1.0)
    quotas: dict[str, QuotaSpec] = {}
    for flavor, value in entry.mapping("quotas", optional=True).items():
        if flavor not in flavors:
            raise entry.error(f"quotas.{flavor}", f"unknown flavor {flavor!r}")
        quotas[flavor] = _quota(entry, flavor, value)
    # A borrowing or lending limit on a queue without a cohort is accepted but has no effect:
    # such a queue never borrows (SCHEDULING.md section 2) and has nobody to lend to.
    entry.finish()
    return QueueSpec(name=name, team=team, quotas=quotas, cohort=cohort, weight=weight)


def _cohort(entry: Entry, flavors: set[str]) -> CohortSpec:
    name = entry.string("name")
    parent = entry.optional_string("parent")
    weight = entry.number("weight", minimum=0.0, strict=True, default=1.0)
    quotas: dict[str, QuotaSpec] = {}
    for flavor, value in entry.mapping("quotas", optional=True).items():
        if flavor not in flavors:
            raise entry.error(f"quotas.{flavor}", f"unknown flavor {flavor!r}")
        quotas[flavor] = _quota(entry, flavor, value, cohort=True)
    entry.finish()
    return CohortSpec(name=name, parent=parent, quotas=quotas, weight=weight)


def _cohort_parents(top: Entry, cohorts: Sequence[CohortSpec]) -> None:
    """Every parent is a declared cohort, and following parents never comes back."""
    parent = {c.name: c.parent for c in cohorts}
    for index, c in enumerate(cohorts):
        where = f"{top.source}: cohorts[{index}] ({c.name}): field 'parent'"
        if c.parent is not None and c.parent not in parent:
            raise ScenarioError(f"{where}: unknown cohort {c.parent!r} (declare it in cohorts)")
        seen = {c.name}
        up = c.parent
        while up is not None:
            if up in seen:
                raise ScenarioError(f"{where}: the parents form a cycle through {up!r}")
            seen.add(up)
            up = parent[up]


@dataclass(frozen=True, slots=True)
class _Refs:
    flavors: set[str]
    classes: set[str]
    queues: set[str]
    topology_levels: tuple[str, ...]


def _reference(entry: Entry, key: str, known: set[str], kind: str) -> str:
    value = entry.string(key)
    if value not in known:
        raise entry.error(key, f"unknown {kind} {value!r}; known: {', '.join(sorted(known))}")
    return value


def _job_flavors(entry: Entry, known: set[str]) -> tuple[str, ...]:
    has_one = "flavor" in entry.data
    has_list = "flavors" in entry.data
    if has_one == has_list:
        raise ScenarioError(
            f"{entry.where()}: give exactly one of 'flavor' or 'flavors' (ordered preference)"
        )
    if has_one:
        return (_reference(entry, "flavor", known, "flavor"),)
    listed = entry.items("flavors", allow_empty=False)
    for index, flavor in enumerate(listed):
        if not isinstance(flavor, str):
            raise entry.bad(f"flavors[{index}]", "a flavor name", flavor)
        if flavor not in known:
            raise entry.error(f"flavors[{index}]", f"unknown flavor {flavor!r}")
    if len(set(listed)) != len(listed):
        raise entry.error("flavors", f"lists a flavor twice: {listed!r}")
    return tuple(listed)


def _topology(entry: Entry, levels: tuple[str, ...]) -> TopologySpec | None:
    value = entry.mapping("topology", optional=True)
    if not value:
        return None
    if set(value) not in ({"required"}, {"preferred"}):
        raise entry.error(
            "topology", f"must be {{required: LEVEL}} or {{preferred: LEVEL}}, got {dict(value)!r}"
        )
    ((kind, level),) = value.items()
    if level not in levels:
        known = ", ".join(levels) if levels else "none declared in topology_levels"
        raise entry.error(f"topology.{kind}", f"unknown topology level {level!r}; known: {known}")
    return TopologySpec(level=level, required=kind == "required")


def _job(entry: Entry, refs: _Refs) -> JobSpec:
    name = entry.string("name")
    queue = _reference(entry, "queue", refs.queues, "queue")
    service_class = _reference(entry, "class", refs.classes, "service class")
    submit_at = entry.number("submit_at", minimum=0.0)
    workers = entry.required_integer("workers", minimum=1)
    gpus_per_worker = entry.required_integer("gpus_per_worker", minimum=1)
    flavors = _job_flavors(entry, refs.flavors)
    duration = entry.number("duration", minimum=0.0, strict=True, nullable=True)
    estimated = entry.number(
        "estimated_runtime", minimum=0.0, strict=True, optional=True, nullable=True
    )
    min_workers = entry.integer("min_workers", minimum=1, optional=True, nullable=True)
    if min_workers is not None and min_workers > workers:
        raise entry.error("min_workers", f"must be <= workers ({workers}), got {min_workers}")
    topology = _topology(entry, refs.topology_levels)
    checkpoint = entry.number(
        "checkpoint_interval", minimum=0.0, strict=True, optional=True, nullable=True
    )
    entry.finish()
    return JobSpec(
        name=name,
        queue=queue,
        service_class=service_class,
        submit_at=submit_at,
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        flavors=flavors,
        duration=duration,
        estimated_runtime=estimated,
        min_workers=min_workers,
        topology=topology,
        checkpoint_interval=checkpoint,
    )


def _event(entry: Entry, nodes: set[str], jobs: set[str]) -> EventSpec:
    at = entry.number("at", minimum=0.0)
    action = entry.string("action")
    if action in NODE_ACTIONS:
        if "node" not in entry.data:
            raise entry.error("node", f"is required for action {action!r}")
        target = _reference(entry, "node", nodes, "node")
        if "job" in entry.data:
            raise entry.error("job", f"not allowed with action {action!r} (it acts on a node)")
        entry.finish()
        return EventSpec(at=at, action=action, node=target)
    if action in JOB_ACTIONS:
        if "job" not in entry.data:
            raise entry.error("job", f"is required for action {action!r}")
        target = _reference(entry, "job", jobs, "job")
        if "node" in entry.data:
            raise entry.error("node", f"not allowed with action {action!r} (it acts on a job)")
        entry.finish()
        return EventSpec(at=at, action=action, job=target)
    allowed = ", ".join(NODE_ACTIONS + JOB_ACTIONS)
    raise entry.error("action", f"must be one of {allowed}, got {action!r}")
