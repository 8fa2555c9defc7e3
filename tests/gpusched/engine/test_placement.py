"""Placement (SCHEDULING.md section 3): packing, MIG, topology, flavor fallback, clusters."""

from __future__ import annotations

from dataclasses import replace

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Cluster, Flavor, Node, Topology
from tests.gpusched.engine_builders import nodes, pending, queue, running, snapshot

MIG = "h100-1g.10gb"


def test_a_small_job_fills_a_partly_used_node_and_keeps_empty_nodes_free() -> None:
    busy = [running("old", "q", {"n1": 6}, gpus=6)]
    result = run_cycle(
        snapshot(nodes("n", 3, {"h100": 8}), [queue("q", 24)], busy, [pending("s", "q", gpus=2)])
    )
    assert result.admits[0].placement == {"n1": 2}


def test_a_gang_uses_as_few_nodes_as_possible() -> None:
    busy = [running("old", "q", {"n0": 4, "n1": 4}, gpus=4)]
    result = run_cycle(
        snapshot(
            nodes("n", 4, {"h100": 8}),
            [queue("q", 32)],
            busy,
            [pending("g", "q", gpus=4, workers=4)],
        )
    )
    placement = result.admits[0].placement
    assert len(placement) == 2 and sum(placement.values()) == 16
    assert set(placement) == {"n2", "n3"}


def test_a_mig_job_never_lands_on_a_whole_gpu_node() -> None:
    node_list = [Node("whole", {"h100": 8}), Node("sliced", {MIG: 7})]
    flavors = (Flavor("h100"), Flavor(MIG, "nvidia.com/mig-1g.10gb", 1 / 7))
    queues = [queue("q", {"h100": 8, MIG: 14})]
    jobs = [pending(f"m{i}", "q", flavors=(MIG,), submitted_at=i) for i in range(9)]
    result = run_cycle(snapshot(node_list, queues, (), jobs, flavors=flavors))
    assert len(result.admits) == 7
    assert all(a.placement == {"sliced": 1} and a.flavor == MIG for a in result.admits)
    assert result.pending["m7"].reason == "capacity"


def _racks() -> list[Node]:
    return [
        Node("r1-a", {"h100": 8}, {"rack": "r1"}),
        Node("r1-b", {"h100": 8}, {"rack": "r1"}),
        Node("r2-a", {"h100": 8}, {"rack": "r2"}),
        Node("r2-b", {"h100": 8}, {"rack": "r2"}),
    ]


def test_required_topology_keeps_the_gang_inside_one_rack() -> None:
    busy = [running("old", "q", {"r1-a": 2, "r2-b": 2}, gpus=2)]
    job = pending("g", "q", gpus=6, workers=2, topology=Topology("rack", True))
    result = run_cycle(snapshot(_racks(), [queue("q", 32)], busy, [job], topology_levels=("rack",)))
    placement = result.admits[0].placement
    assert set(placement) in ({"r1-a", "r1-b"}, {"r2-a", "r2-b"})


def test_required_topology_waits_rather_than_spread_over_racks() -> None:
    busy = [running("old", "q", {"r1-a": 8, "r2-a": 8}, gpus=8)]
    job = pending("g", "q", gpus=8, workers=2, topology=Topology("rack", True))
    result = run_cycle(snapshot(_racks(), [queue("q", 32)], busy, [job], topology_levels=("rack",)))
    assert not result.admits
    assert result.pending["g"].reason == "topology"
    assert "single rack" in result.pending["g"].message


def test_preferred_topology_spreads_when_no_single_rack_fits() -> None:
    busy = [running("old", "q", {"r1-a": 8, "r2-a": 8}, gpus=8)]
    job = pending("g", "q", gpus=8, workers=2, topology=Topology("rack", False))
    result = run_cycle(snapshot(_racks(), [queue("q", 32)], busy, [job], topology_levels=("rack",)))
    assert result.admits[0].placement == {"r1-b": 8, "r2-b": 8}


def test_preferred_topology_uses_one_rack_when_it_can() -> None:
    busy = [running("old", "q", {"r1-a": 4}, gpus=4)]
    job = pending("g", "q", gpus=4, workers=3, topology=Topology("rack", False))
    result = run_cycle(snapshot(_racks(), [queue("q", 32)], busy, [job], topology_levels=("rack",)))
    placement = result.admits[0].placement
    assert {n[:2] for n in placement} == {"r1"} or {n[:2] for n in placement} == {"r2"}


def test_the_first_acceptable_flavor_that_fits_wins() -> None:
    node_list = [Node("h", {"h100": 8}), Node("a", {"a100": 8})]
    flavors = (Flavor("h100"), Flavor("a100"))
    queues = [queue("q", {"h100": 8, "a100": 8})]
    busy = [running("old", "q", {"h": 8}, gpus=8)]
    jobs = [pending("j", "q", gpus=4, flavors=("h100", "a100"))]
    result = run_cycle(snapshot(node_list, queues, busy, jobs, flavors=flavors))
    assert (result.admits[0].flavor, result.admits[0].placement) == ("a100", {"a": 4})
    idle = run_cycle(snapshot(node_list, queues, (), jobs, flavors=flavors))
    assert idle.admits[0].flavor == "h100"


def test_among_clusters_the_tightest_fit_wins_then_price_then_name() -> None:
    flavors = (Flavor("h100", price_per_hour=4.0),)
    tight = Cluster("tight", (Node("t0", {"h100": 8}),))
    loose = Cluster("loose", (Node("l0", {"h100": 8}),))
    busy = [running("old", "q", {"t0": 4}, gpus=4, cluster="tight")]
    job = [pending("j", "q", gpus=4)]
    result = run_cycle(
        snapshot([], [queue("q", 32)], busy, job, flavors=flavors, clusters=[loose, tight])
    )
    assert result.admits[0].cluster == "tight"
    cheap = Cluster("cheap", (Node("c0", {"h100": 8}),), prices={"h100": 1.0})
    result = run_cycle(
        snapshot([], [queue("q", 32)], (), job, flavors=flavors, clusters=[loose, cheap])
    )
    assert result.admits[0].cluster == "cheap"
    result = run_cycle(
        snapshot(
            [],
            [queue("q", 32)],
            (),
            job,
            flavors=flavors,
            clusters=[Cluster("b", (Node("b0", {"h100": 8}),)), loose],
        )
    )
    assert result.admits[0].cluster == "b"


def test_an_elastic_job_starts_with_the_largest_size_that_fits() -> None:
    busy = [running("old", "q", {"n0": 5}, gpus=5)]
    job = pending("e", "q", gpus=1, workers=8, min_workers=2)
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), [queue("q", 16)], busy, [job]))
    assert result.admits[0].workers == 3


def test_a_gang_too_large_for_any_cluster_says_so() -> None:
    result = run_cycle(
        snapshot(
            nodes("n", 2, {"h100": 8}),
            [queue("q", 64)],
            (),
            [pending("huge", "q", gpus=8, workers=4)],
        )
    )
    info = result.pending["huge"]
    assert info.reason == "too-large"
    assert "more than any cluster has" in info.message


def test_a_job_waiting_for_gpus_is_told_how_many_are_free_and_where() -> None:
    busy = [
        running("a", "q", {"n0": 6}, gpus=6, cls="prod"),
        running("b", "q", {"n1": 5}, gpus=5, cls="prod"),
    ]
    jobs = [pending("w", "q", gpus=4, submitted_at=1)]
    result = run_cycle(snapshot(nodes("n", 2, {"h100": 8}), [queue("q", 32)], busy, jobs))
    info = result.pending["w"]
    assert (info.reason, info.free, info.largest_block, info.position) == ("capacity", 5, 3, 1)
    assert info.message.startswith("#1 in queue q. Waiting for GPUs: needs 4 h100; 5 are free")
    assert "at most 3 on one node" in info.message
    assert (
        "may be preempted"
        not in run_cycle(
            snapshot(nodes("n", 2, {"h100": 8}), [queue("q", 32)], busy, jobs), "greedy"
        )
        .pending["w"]
        .message
    )


def test_a_job_limited_to_one_cluster_goes_there_or_waits() -> None:
    """A job taken in from a workload applied to one cluster (docs/KUEUE.md) runs only there,
    even when another cluster fits better or has room while its own is full."""
    flavors = (Flavor("h100", price_per_hour=4.0),)
    cheap = Cluster("cheap", (Node("c0", {"h100": 8}),), prices={"h100": 1.0})
    mine = Cluster("mine", (Node("m0", {"h100": 8}),))
    job = replace(pending("j", "q", gpus=4), clusters=("mine",))
    result = run_cycle(
        snapshot([], [queue("q", 32)], (), [job], flavors=flavors, clusters=[cheap, mine])
    )
    assert (result.admits[0].cluster, result.admits[0].placement) == ("mine", {"m0": 4})

    full = [running("old", "q", {"m0": 8}, gpus=8, cluster="mine")]
    other = pending("k", "q", gpus=4, submitted_at=1.0)  # not limited: takes the free cluster
    result = run_cycle(
        snapshot([], [queue("q", 32)], full, [job, other], flavors=flavors, clusters=[cheap, mine])
    )
    assert [(a.job, a.cluster) for a in result.admits] == [("k", "cheap")]
    assert result.pending["j"].reason == "capacity"
