"""The placement's kept indexes (``placement.Capacity``'s buckets and heaps, the layout's
topology domains) answer exactly what a scan of the free map answers, after any changes, also
with a reservation's nodes capped at their spare units."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.engine.model import Cluster, Flavor, Node, Snapshot, Topology
from gpusched.engine.placement import (
    Capacity,
    Layout,
    capped,
    domain_groups,
    place,
    place_in_cluster,
)

FLAVOR = "h100"


def _snapshot(sizes: list[int], racks: list[str]) -> Snapshot:
    nodes = tuple(
        Node(f"n{i:02d}", {FLAVOR: size}, {"rack": rack} if rack else {})
        for i, (size, rack) in enumerate(zip(sizes, racks, strict=True))
    )
    return Snapshot(
        now=0.0,
        flavors=(Flavor(FLAVOR),),
        clusters=(Cluster("c", nodes),),
        service_classes=(),
        queues=(),
        admitted=(),
        pending=(),
        topology_levels=("rack",),
    )


def _scanned_best(cap: Capacity, need: int) -> int | None:
    """The rule by a scan: least free that suffices, partly used first, lowest index."""
    free = cap.free_of(FLAVOR)
    fits = [i for i in cap.nodes[FLAVOR]["c"] if free.get(i, 0) >= need]
    if not fits:
        return None
    return min(
        fits,
        key=lambda i: (free[i], 0 if free[i] < cap.capacity[i][FLAVOR] else 1, i),
    )


worlds = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n),
        st.lists(st.sampled_from(["", "r1", "r2", "r3"]), min_size=n, max_size=n),
        st.lists(
            st.tuples(
                st.booleans(),  # take (True) or give back (False)
                st.integers(min_value=0, max_value=n - 1),
                st.integers(min_value=1, max_value=8),
                st.integers(min_value=1, max_value=9),  # the next single-node ask
            ),
            max_size=40,
        ),
    )
)


@settings(max_examples=150, deadline=None)
@given(worlds)
def test_the_best_single_node_is_the_one_a_scan_finds_after_any_takes_and_gives(
    world: tuple[list[int], list[str], list[tuple[bool, int, int, int]]],
) -> None:
    sizes, racks, changes = world
    cap = Capacity(Layout(_snapshot(sizes, racks)))
    assert cap.best_single_node(FLAVOR, "c", 1) == _scanned_best(cap, 1)
    for take, node, units, need in changes:
        free = cap.free_of(FLAVOR)
        if take:
            cap.take(FLAVOR, {node: min(units, free[node])})
        else:
            cap.give(FLAVOR, {node: min(units, sizes[node] - free[node])})
        assert cap.best_single_node(FLAVOR, "c", need) == _scanned_best(cap, need)


@settings(max_examples=100, deadline=None)
@given(worlds, st.booleans(), st.integers(min_value=1, max_value=6))
def test_a_topology_placement_on_a_kept_layout_is_the_one_a_fresh_layout_gives(
    world: tuple[list[int], list[str], list[tuple[bool, int, int, int]]],
    required: bool,
    workers: int,
) -> None:
    sizes, racks, changes = world
    snapshot = _snapshot(sizes, racks)
    kept = Layout(snapshot)
    for step, (take, node, units, _need) in enumerate(changes):
        if not take:
            continue
        topology = Topology("rack", required != (step % 2 == 1))  # both kinds on one layout
        cap = Capacity(kept)
        cap.take(FLAVOR, {node: min(units, cap.free_of(FLAVOR)[node])})
        fresh = Capacity(Layout(snapshot), cap.free)
        ours = place_in_cluster(cap, "c", FLAVOR, workers, 1, 1, topology, cap.free_of(FLAVOR))
        theirs = place_in_cluster(
            fresh, "c", FLAVOR, workers, 1, 1, topology, fresh.free_of(FLAVOR)
        )
        assert ours == theirs


@settings(max_examples=150, deadline=None)
@given(
    worlds,
    st.dictionaries(st.integers(0, 11), st.integers(0, 8), max_size=4),  # a reservation's spare
    st.integers(min_value=1, max_value=8),  # gpus per worker
    st.integers(min_value=1, max_value=6),  # least workers
    st.integers(min_value=0, max_value=3),  # elastic: more workers wanted
    st.sampled_from([None, Topology("rack", True), Topology("rack", False)]),
)
def test_a_gang_placed_on_the_kept_index_is_the_one_a_scan_of_a_copy_places(
    world: tuple[list[int], list[str], list[tuple[bool, int, int, int]]],
    spare: dict[int, int],
    g: int,
    least: int,
    more: int,
    topology: Topology | None,
) -> None:
    """Packing on the live free map reads the index (the best single node, the nodes and
    topology domains with room for a worker), with the reserved nodes capped there; on a copy
    it scans every node."""
    sizes, racks, changes = world
    cap = Capacity(Layout(_snapshot(sizes, racks)))
    spare = {node: units for node, units in spare.items() if node < len(sizes)}
    for take, node, units, _need in [*changes, (True, 0, 0, 0)]:
        free = cap.free_of(FLAVOR)
        if take:
            cap.take(FLAVOR, {node: min(units, free[node])})
        else:
            cap.give(FLAVOR, {node: min(units, sizes[node] - free[node])})
        for reserved in (spare, None):
            copy = capped(cap.free_of(FLAVOR), reserved or {})
            ours = place(cap, FLAVOR, least + more, least, g, topology, spare=reserved)
            assert ours == place(cap, FLAVOR, least + more, least, g, topology, copy)


@settings(max_examples=150, deadline=None)
@given(
    worlds,
    st.sampled_from([Topology("rack", True), Topology("rack", False)]),
    st.integers(min_value=1, max_value=8),  # gpus per worker
    st.lists(st.booleans(), min_size=41, max_size=41),  # read the sums after this change?
)
def test_the_kept_domain_sums_are_the_ones_a_scan_of_the_domains_gives(
    world: tuple[list[int], list[str], list[tuple[bool, int, int, int]]],
    topology: Topology,
    g: int,
    reads: list[bool],
) -> None:
    """A topology placement weighs each domain by what the kept sums say (workers of ``g``
    units it has room for, free units, partly used nodes): after any takes and gives, read
    at once or several changes later, and after the free map was rewritten whole (a
    preemption's), they are what its nodes add up to."""
    sizes, racks, changes = world
    cap = Capacity(Layout(_snapshot(sizes, racks)))
    groups = domain_groups(cap, "c", FLAVOR, topology)

    def scanned() -> tuple[dict[object, int], dict[object, int], dict[object, int]]:
        free = cap.free_of(FLAVOR)
        slots = {key: sum(free[i] // g for i in nodes) for key, nodes in groups.items()}
        units = {key: sum(free[i] for i in nodes) for key, nodes in groups.items()}
        partly = {key: sum(free[i] < sizes[i] for i in nodes) for key, nodes in groups.items()}
        return slots, units, partly

    def kept() -> tuple[dict[object, int], dict[object, int], dict[object, int]]:
        room = cap.domain_room(FLAVOR, "c", topology, g, groups)
        return dict(room.slots), dict(room.free), dict(room.partly)

    assert kept() == scanned()
    for step, ((take, node, units, _need), read) in enumerate(zip(changes, reads, strict=False)):
        free = cap.free_of(FLAVOR)
        if step == 20:  # rewritten whole, then the indexes dropped
            free[node] = max(0, free[node] - units)
            cap.invalidate(FLAVOR)
        elif take:
            cap.take(FLAVOR, {node: min(units, free[node])})
        else:
            cap.give(FLAVOR, {node: min(units, sizes[node] - free[node])})
        if read:
            assert kept() == scanned()
    assert kept() == scanned()
