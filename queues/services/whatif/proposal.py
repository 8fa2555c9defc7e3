"""What an admin proposes: queue and cohort quotas to set and nodes to add or remove, and the
world it makes.

``Proposal`` is the validated request (queues/api/whatif_serializers.py validates the body, the
one path both the REST API and the quota editor's page go through); ``apply`` turns the world
the live cycle sees (``demo.replay.World``, from ``world_of(build_snapshot(now).snapshot)``)
into the proposed one. Nothing here touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from demo.replay import World
from gpusched.sim.scenario import ClusterSpec, CohortSpec, NodeSpec, QueueSpec, QuotaSpec

HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class QuotaChange:
    queue: str  # the engine's queue name, "<team>/<queue>"
    flavor: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class CohortQuotaChange:
    """A cohort's own quota in one flavor (docs/SCHEDULING.md section 2a)."""

    cohort: str  # the cohort's name
    flavor: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class NodeChange:
    cluster: str  # the cluster's name
    flavor: str
    add: int  # negative: remove that many nodes with this flavor


@dataclass(frozen=True)
class Proposal:
    days: int = 14
    quotas: tuple[QuotaChange, ...] = ()
    nodes: tuple[NodeChange, ...] = ()
    cohort_quotas: tuple[CohortQuotaChange, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "quotas": [vars(q) for q in self.quotas],
            "nodes": [vars(n) for n in self.nodes],
            "cohort_quotas": [vars(c) for c in self.cohort_quotas],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proposal:
        return cls(
            days=int(data["days"]),
            quotas=tuple(QuotaChange(**q) for q in data.get("quotas", ())),
            nodes=tuple(NodeChange(**n) for n in data.get("nodes", ())),
            cohort_quotas=tuple(CohortQuotaChange(**c) for c in data.get("cohort_quotas", ())),
        )


class ProposalError(ValueError):
    """A node change the cluster cannot take (more nodes removed than it has)."""


def apply(world: World, proposal: Proposal) -> World:
    """The world with the proposal's quotas (queues' and cohorts') set and nodes added or
    removed."""
    queues = tuple(_with_quotas(q, proposal.quotas) for q in world.queues)
    cohorts = tuple(_with_cohort_quotas(c, proposal.cohort_quotas) for c in world.cohorts)
    clusters = world.clusters
    for change in proposal.nodes:
        clusters = tuple(
            _resized(c, change, _template(world.clusters, change)) if c.name == change.cluster
            else c
            for c in clusters
        )  # fmt: skip
    kept = {n.name for c in clusters for n in c.nodes}
    unavailable = tuple((node, what) for node, what in world.unavailable if node in kept)
    return replace(
        world, queues=queues, cohorts=cohorts, clusters=clusters, unavailable=unavailable
    )


def _with_quotas(queue: QueueSpec, changes: tuple[QuotaChange, ...]) -> QueueSpec:
    mine = [c for c in changes if c.queue == queue.name]
    if not mine:
        return queue
    quotas = dict(queue.quotas)
    for c in mine:
        quotas[c.flavor] = QuotaSpec(c.nominal, c.borrowing_limit, c.lending_limit)
    return replace(queue, quotas=quotas)


def _with_cohort_quotas(cohort: CohortSpec, changes: tuple[CohortQuotaChange, ...]) -> CohortSpec:
    mine = [c for c in changes if c.cohort == cohort.name]
    if not mine:
        return cohort
    quotas = dict(cohort.quotas)
    for c in mine:
        quotas[c.flavor] = QuotaSpec(c.nominal, c.borrowing_limit, c.lending_limit)
    return replace(cohort, quotas=quotas)


def _template(clusters: tuple[ClusterSpec, ...], change: NodeChange) -> NodeSpec | None:
    """The node a new one copies: the first of the cluster with this flavor, else of any."""
    ordered = sorted(clusters, key=lambda c: c.name != change.cluster)
    for cluster in ordered:
        for node in cluster.nodes:
            if node.gpus.get(change.flavor, 0) > 0:
                return node
    return None


def _resized(cluster: ClusterSpec, change: NodeChange, template: NodeSpec | None) -> ClusterSpec:
    nodes = list(cluster.nodes)
    if change.add >= 0:
        if change.add and template is None:
            raise ProposalError(f"no node anywhere has flavor {change.flavor} to copy")
        taken = {n.name for n in nodes}
        for i in range(change.add):
            assert template is not None
            name = _free_name(f"{template.name}-what-if", i, taken)
            taken.add(name)
            labels = dict(template.labels)
            if HOSTNAME in labels:
                labels[HOSTNAME] = name
            nodes.append(NodeSpec(name, dict(template.gpus), labels))
        return replace(cluster, nodes=tuple(nodes))
    having = [n for n in nodes if n.gpus.get(change.flavor, 0) > 0]
    if len(having) < -change.add:
        raise ProposalError(
            f"cluster {cluster.name} has {len(having)} nodes with {change.flavor}, "
            f"fewer than the {-change.add} to remove"
        )
    gone = {n.name for n in having[len(having) + change.add :]}  # the last ones by order
    return replace(cluster, nodes=tuple(n for n in nodes if n.name not in gone))


def _free_name(base: str, i: int, taken: set[str]) -> str:
    n = i + 1
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"
