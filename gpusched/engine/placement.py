"""Gang placement (docs/SCHEDULING.md section 3): best-fit packing, topology, several clusters.

Nodes are numbered once per cycle (``Capacity.index``); free units are kept per flavor in a
``dict[node_index, units]`` so that a trial placement (with victims' GPUs added, or a
reservation's GPUs withheld) is just another mapping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

from gpusched.engine.domain_room import DomainKey, DomainRoom, Move
from gpusched.engine.model import Snapshot, Topology

Workers = dict[int, int]  # node index -> workers placed there
DomainGroups = dict[DomainKey, list[int]]  # a domain -> its node indexes


class Layout:
    """The static part of the capacity: node numbering, flavors per node, topology domains.

    It depends only on the clusters, flavors and topology levels of a snapshot, so an
    ``EngineState`` keeps it while they stay the same tuples (the simulator passes the same ones
    until a node changes).
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self.levels = snapshot.topology_levels
        self.names: list[str] = []
        self.cluster_of: list[str] = []
        self.capacity: list[Mapping[str, int]] = []
        self.index: dict[tuple[str, str], int] = {}
        self.failed: set[int] = set()
        self.draining: set[int] = set()
        # flavor -> cluster -> node indexes (usable nodes exposing the flavor, in name order)
        self.nodes: dict[str, dict[str, list[int]]] = {}
        self.base_free: dict[str, dict[int, int]] = {}
        self.total: dict[str, dict[str, int]] = {}  # flavor -> cluster -> capacity
        self.domain: dict[str, list[tuple[str, ...] | None]] = {lv: [] for lv in self.levels}
        self.price: dict[tuple[str, str], float] = {}
        # (flavor, cluster, level, required) -> topology domain -> its node indexes, filled as
        # placements ask (see ``domain_groups``)
        self.groups: dict[tuple[str, str, str, bool], dict[DomainKey, list[int]]] = {}
        flavor_price = {f.name: f.price_per_hour for f in snapshot.flavors}
        for cluster in sorted(snapshot.clusters, key=lambda c: c.name):
            for node in sorted(cluster.nodes, key=lambda n: n.name):
                i = len(self.names)
                self.names.append(node.name)
                self.cluster_of.append(cluster.name)
                self.capacity.append(node.capacity)
                self.index[(cluster.name, node.name)] = i
                values: list[str] = []
                for lv in self.levels:
                    value = node.labels.get(lv)
                    if value is None or (values and values[-1] == ""):
                        values.append("")
                        self.domain[lv].append(None)
                    else:
                        values.append(value)
                        self.domain[lv].append(tuple(values))
                if node.failed:
                    self.failed.add(i)
                elif node.draining:
                    self.draining.add(i)
                if node.failed or node.draining or not node.schedulable:
                    continue
                for f, units in node.capacity.items():
                    if units <= 0:
                        continue
                    self.nodes.setdefault(f, {}).setdefault(cluster.name, []).append(i)
                    self.base_free.setdefault(f, {})[i] = units
                    per = self.total.setdefault(f, {})
                    per[cluster.name] = per.get(cluster.name, 0) + units
            for f in {f for n in cluster.nodes for f in n.capacity}:
                price = cluster.prices.get(f, flavor_price.get(f))
                self.price[(cluster.name, f)] = price if price is not None else 0.0


class Capacity:
    """Free units per flavor and node for one cycle, over a shared ``Layout``."""

    def __init__(self, layout: Layout, free: Mapping[str, Mapping[int, int]] | None = None):
        self.levels = layout.levels
        self.names = layout.names
        self.cluster_of = layout.cluster_of
        self.capacity = layout.capacity
        self.index = layout.index
        self.failed = layout.failed
        self.draining = layout.draining
        self.nodes = layout.nodes
        self.total = layout.total
        self.domain = layout.domain
        self.price = layout.price
        self.groups = layout.groups
        base = layout.base_free if free is None else free
        self.free: dict[str, dict[int, int]] = {f: dict(v) for f, v in base.items()}

        # flavor -> cluster -> free units -> nodes: finds the best single node without a scan
        self._buckets: dict[str, dict[str, dict[int, set[int]]]] = {}
        # the same nodes as heaps of (0: partly used / 1: empty, node index), so the best of a
        # bucket is its top; entries of nodes that left the bucket are dropped when they surface
        self._heaps: dict[str, dict[str, dict[int, list[tuple[int, int]]]]] = {}
        # flavor -> (cluster, level, required, g) -> the topology domains' sums (domain_room.py),
        # brought up to date from the flavor's log of moves when read
        self._rooms: dict[str, dict[tuple[str, str, bool, int], DomainRoom]] = {}
        self._moves: dict[str, list[Move]] = {}

    def free_of(self, flavor: str) -> dict[int, int]:
        return self.free.setdefault(flavor, {})

    def by_name(self, units: Mapping[int, int]) -> dict[str, int]:
        """Units per node index as units per node name, in node order (for the decisions)."""
        names = self.names
        return {names[node]: n for node, n in sorted(units.items())}

    def _move(self, flavor: str, i: int, before: int, after: int) -> None:
        moves = self._moves.get(flavor)
        if moves is not None:
            moves.append((i, before, after))
        per = self._buckets.get(flavor)
        if per is None:
            return
        cluster = self.cluster_of[i]
        buckets = per.get(cluster)
        if buckets is None:
            return
        old = buckets.get(before)
        if old is not None:
            old.discard(i)
        members = buckets.get(after)
        if members is None:
            members = buckets[after] = set()
        if i not in members:
            members.add(i)
            heaps = self._heaps[flavor][cluster]
            heap = heaps.get(after)
            if heap is None:
                heap = heaps[after] = []
            heappush(heap, (0 if after < self.capacity[i].get(flavor, 0) else 1, i))

    def take(self, flavor: str, units: Mapping[int, int]) -> None:
        free = self.free_of(flavor)
        for i, u in units.items():
            if i in free:
                free[i] -= u
                self._move(flavor, i, free[i] + u, free[i])

    def give(self, flavor: str, units: Mapping[int, int]) -> None:
        free = self.free_of(flavor)
        for i, u in units.items():
            if i in free:
                free[i] += u
                self._move(flavor, i, free[i] - u, free[i])

    def invalidate(self, flavor: str) -> None:
        """Call after changing ``free_of(flavor)`` other than through take/give."""
        self._buckets.pop(flavor, None)
        self._heaps.pop(flavor, None)
        self._rooms.pop(flavor, None)
        self._moves.pop(flavor, None)

    def domain_room(
        self, flavor: str, cluster: str, topology: Topology, g: int, groups: DomainGroups
    ) -> DomainRoom:
        """The live free map's sums per domain of ``groups`` (``domain_groups``: the cluster's
        domains of ``topology``) for workers of ``g`` units."""
        moves = self._moves.setdefault(flavor, [])
        rooms = self._rooms.setdefault(flavor, {})
        key = (cluster, topology.level, topology.required, g)
        room = rooms.get(key)
        if room is None:
            room = DomainRoom(groups, self.free_of(flavor), self.capacity, flavor, g, len(moves))
            rooms[key] = room
        elif room.synced < len(moves):
            room.catch_up(moves)
        return room

    def _index(
        self, flavor: str, cluster: str
    ) -> tuple[dict[int, set[int]], dict[int, list[tuple[int, int]]]]:
        """The cluster's nodes of ``flavor`` by free units: as sets, and as heaps."""
        per = self._buckets.setdefault(flavor, {})
        buckets = per.get(cluster)
        if buckets is None:
            buckets = {}
            free = self.free_of(flavor)
            capacity = self.capacity
            entries: dict[int, list[tuple[int, int]]] = {}
            for i in self.nodes.get(flavor, {}).get(cluster, ()):
                value = free.get(i, 0)
                buckets.setdefault(value, set()).add(i)
                partly = 0 if value < capacity[i].get(flavor, 0) else 1
                entries.setdefault(value, []).append((partly, i))
            for heap in entries.values():
                heap.sort()  # a sorted list is a heap
            per[cluster] = buckets
            self._heaps.setdefault(flavor, {})[cluster] = entries
        return buckets, self._heaps[flavor][cluster]

    def best_single_node(
        self, flavor: str, cluster: str, need: int, spare: Mapping[int, int] | None = None
    ) -> int | None:
        """The node best fit for ``need`` units: least free that suffices, partly used first,
        then the lowest index. ``spare``: nodes with at most that many units free (a
        reservation's, ``capped``), whatever the free map says."""
        buckets, heaps = self._index(flavor, cluster)
        best: tuple[int, int, int] | None = None  # (free, empty, node)
        for value in sorted(v for v, nodes in buckets.items() if v >= need and nodes):
            members = buckets[value]
            heap = heaps[value]
            while heap[0][1] not in members:  # left this bucket since it was pushed
                heappop(heap)
            if not spare or heap[0][1] not in spare:
                best = (value, *heap[0])
                break
            # its best node is capped: the best of the others (capped nodes come below)
            others = [e for e in heap if e[1] in members and e[1] not in spare]
            if others:
                best = (value, *min(others))
                break
        if spare:
            free = self.free_of(flavor)
            for i, most in spare.items():
                now = free.get(i)
                if now is None or i not in buckets.get(now, ()):
                    continue  # not a node of this cluster and flavor
                value = max(0, min(now, most))
                if value >= need:
                    key = (value, 0 if value < self.capacity[i].get(flavor, 0) else 1, i)
                    if best is None or key < best:
                        best = key
        return best[2] if best is not None else None

    def _in_order(
        self, flavor: str, cluster: str, values: Sequence[int]
    ) -> Iterator[tuple[int, int]]:
        """The nodes with these free units, as (0: partly used / 1: empty, node index), in
        that order: a walk down their heaps, smallest first, skipping entries that left."""
        buckets, heaps = self._index(flavor, cluster)
        todo: list[tuple[tuple[int, int], int, int]] = []  # (entry, value, position)
        for value in values:
            heap = heaps.get(value)
            if heap:
                todo.append((heap[0], value, 0))
        heapify(todo)
        seen: set[int] = set()
        while todo:
            entry, value, at = heappop(todo)
            heap = heaps[value]
            for child in (2 * at + 1, 2 * at + 2):
                if child < len(heap):
                    heappush(todo, (heap[child], value, child))
            node = entry[1]
            if node in buckets[value] and node not in seen:
                seen.add(node)
                yield entry

    def pack(self, flavor: str, cluster: str, want: int, least: int, g: int) -> Workers | None:
        """What ``_pack`` places (best fit) on the live free map, read from the index: the
        nodes with most slots taken whole (partly used first, then the lowest index) while the
        rest is more than a node's slots, then the rest on the best single node left."""
        buckets = self._index(flavor, cluster)[0]
        levels: dict[int, list[int]] = {}  # slots per node -> the free units giving them
        total = 0
        for value, members in buckets.items():
            if value >= g and members:
                slots = value // g
                levels.setdefault(slots, []).append(value)
                total += slots * len(members)
        if total < least:
            return None
        remaining = min(want, total)
        out: Workers = {}
        for slots in sorted(levels, reverse=True):
            if slots >= remaining:
                break
            for _empty, node in self._in_order(flavor, cluster, levels[slots]):
                if slots >= remaining:
                    break  # this node and the next ones can hold the rest
                out[node] = slots
                remaining -= slots
            else:
                continue  # every node of this many slots taken whole
            break
        need = remaining * g
        for value in sorted(v for v, nodes in buckets.items() if v >= need and nodes):
            for _empty, node in self._in_order(flavor, cluster, (value,)):
                if node not in out:
                    out[node] = remaining
                    return out
        raise AssertionError("the slots counted hold the rest")

    def candidates(self, flavor: str, cluster: str, units: int) -> list[int]:
        """The cluster's nodes of ``flavor`` with at least ``units`` free, in no order."""
        buckets = self._index(flavor, cluster)[0]
        return [i for value, nodes in buckets.items() if value >= units for i in nodes]

    def largest_block(self, flavor: str) -> int:
        free = self.free.get(flavor)
        return max(free.values(), default=0) if free else 0

    def free_total(self, flavor: str) -> int:
        free = self.free.get(flavor)
        return sum(free.values()) if free else 0


@dataclass(frozen=True, slots=True)
class Placement:
    cluster: str
    workers: Workers  # node index -> workers
    leftover: int  # free units left on the nodes used (fragmentation)

    @property
    def count(self) -> int:
        return sum(self.workers.values())


def _pack(
    nodes: Sequence[int],
    want: int,
    least: int,
    g: int,
    free: Mapping[int, int],
    capacity: Sequence[Mapping[str, int]],
    flavor: str,
    first_fit: bool,
) -> Workers | None:
    """Place between ``least`` and ``want`` workers of ``g`` units on ``nodes``, best fit."""
    # (-slots, partly used (0) / empty (1), node index, free): sorted as they are, with no key
    slots: list[tuple[int, int, int, int]] = []
    total = 0
    for i in nodes:
        f = free.get(i, 0)
        if f >= g:
            s = f // g
            slots.append((-s, 1 if f >= capacity[i].get(flavor, 0) else 0, i, f))
            total += s
    if total < least:
        return None
    remaining = min(want, total)
    out: Workers = {}
    if first_fit:
        for neg, _e, i, _f in slots:
            take = min(-neg, remaining)
            out[i] = take
            remaining -= take
            if remaining == 0:
                break
        return out
    slots.sort()  # most slots first, then partly used, then node index (indexes are unique)
    pos = 0
    while remaining > 0:
        if -slots[pos][0] >= remaining:
            # best fit: among the nodes that can take the rest, the one left fullest
            best = None
            for neg, empty, i, f in slots[pos:]:
                if -neg < remaining:
                    break
                key = (f - remaining * g, empty, i)
                if best is None or key < best:
                    best = key
            assert best is not None
            out[best[2]] = remaining
            return out
        neg, _e, i, _f = slots[pos]
        out[i] = -neg
        remaining += neg
        pos += 1
    return out


def _leftover(
    workers: Workers, g: int, free: Mapping[int, int], spare: Mapping[int, int] | None
) -> int:
    if spare:
        free = capped(free, spare, list(workers))
    return sum(free.get(i, 0) - w * g for i, w in workers.items())


def domain_groups(
    cap: Capacity, cluster: str, flavor: str, topology: Topology
) -> dict[DomainKey, list[int]]:
    """The cluster's usable nodes of ``flavor`` by domain of ``topology.level`` (a node without
    the label is a domain of its own, or left out when the topology is required). Static: the
    layout keeps it."""
    key = (flavor, cluster, topology.level, topology.required)
    groups = cap.groups.get(key)
    if groups is not None:
        return groups
    domain_of = cap.domain[topology.level]
    groups = {}
    for i in cap.nodes.get(flavor, {}).get(cluster, ()):
        d = domain_of[i]
        if d is None:
            if topology.required:
                continue
            groups[("", i)] = [i]
        else:
            groups.setdefault(d, []).append(i)
    cap.groups[key] = groups
    return groups


def capped(
    free: Mapping[int, int], spare: Mapping[int, int], nodes: Sequence[int] | None = None
) -> dict[int, int]:
    """``free`` with the nodes of ``spare`` capped at its units (a reservation's spare: what a
    job still running at its start may take there); only ``nodes``' when given."""
    view = dict(free) if nodes is None else {i: free.get(i, 0) for i in nodes}
    for i, most in spare.items():
        if i in view:
            view[i] = max(0, min(view[i], most))
    return view


def place_in_cluster(
    cap: Capacity,
    cluster: str,
    flavor: str,
    want: int,
    least: int,
    g: int,
    topology: Topology | None,
    free: Mapping[int, int],
    first_fit: bool = False,
    spare: Mapping[int, int] | None = None,
) -> Workers | None:
    """Between ``least`` and ``want`` workers of ``g`` units in ``cluster`` (docs/SCHEDULING.md
    section 3); ``spare``: nodes with at most that many units free (see ``capped``)."""
    nodes = cap.nodes.get(flavor, {}).get(cluster)
    if not nodes:
        return None
    if topology is None and not first_fit and free is cap.free.get(flavor):
        # on the live free map, the kept index finds the nodes that can take a worker
        if want == least:  # one node that holds the whole gang, if any
            single = cap.best_single_node(flavor, cluster, want * g, spare)
            if single is not None:
                return {single: want}
            if want == 1:
                return None
        if not spare:
            return cap.pack(flavor, cluster, want, least, g)
        nodes = cap.candidates(flavor, cluster, g)  # the packing leaves out the others
        return _pack(nodes, want, least, g, capped(free, spare, nodes), cap.capacity, flavor, False)
    if spare:
        free = capped(free, spare)
    if topology is None or topology.level not in cap.domain:
        return _pack(nodes, want, least, g, free, cap.capacity, flavor, first_fit)
    groups = domain_groups(cap, cluster, flavor, topology)
    # one domain: the largest size that fits anywhere, then the tightest domain
    sized: list[tuple[int, int, int, DomainKey]] = []
    if free is cap.free.get(flavor):  # the live free map: its domains' kept sums
        room = cap.domain_room(flavor, cluster, topology, g, groups)
        slots = room.slots  # every domain, those without room at 0 (read, never changed)
        for key, s in slots.items():
            if s >= least and s:
                sized.append((s, room.free[key], 0 if room.partly[key] else 1, key))
    else:
        slots = {key: sum(free.get(i, 0) // g for i in members) for key, members in groups.items()}
        for key, s in slots.items():
            if s >= least:
                members = groups[key]
                used_domain = any(free.get(i, 0) < cap.capacity[i].get(flavor, 0) for i in members)
                sized.append(
                    (s, sum(free.get(i, 0) for i in members), 0 if used_domain else 1, key)
                )
    if sized:
        size = min(want, max(t[0] for t in sized))
        best: tuple[int, int, str] | None = None
        best_key = None
        for s, f, empty, key in sized:
            if s >= size:
                k = (f - size * g, empty, repr(key))
                if best is None or k < best:
                    best, best_key = k, key
        if best_key is not None and (size == want or topology.required):
            return _pack(groups[best_key], size, size, g, free, cap.capacity, flavor, first_fit)
    if topology.required:
        return None
    # preferred: as few domains as possible, fullest first (then in the domains' order)
    total = sum(slots.values())
    if total < least:
        return None
    position = {key: n for n, key in enumerate(groups)}
    remaining = min(want, total)
    out: Workers = {}
    for key in sorted(slots, key=lambda k: (-slots[k], position[k])):
        s = slots[key]
        if s == 0:
            continue
        take = min(s, remaining)
        part = _pack(groups[key], take, take, g, free, cap.capacity, flavor, first_fit)
        if part:
            out.update(part)
            remaining -= take
        if remaining == 0:
            break
    return out


def place(
    cap: Capacity,
    flavor: str,
    want: int,
    least: int,
    g: int,
    topology: Topology | None,
    free: Mapping[int, int] | None = None,
    first_fit: bool = False,
    clusters: Sequence[str] | None = None,
    spare: Mapping[int, int] | None = None,
) -> Placement | None:
    """Best placement over all clusters: most workers, least fragmentation, price, name.
    ``spare``: nodes with at most that many units free (see ``capped``)."""
    free_map = cap.free_of(flavor) if free is None else free
    if spare and (free_map is not cap.free.get(flavor) or topology is not None or first_fit):
        free_map, spare = capped(free_map, spare), None  # read whole: capped once
    best: Placement | None = None
    best_key: tuple[int, int, float, str] | None = None
    for cluster in clusters if clusters is not None else sorted(cap.nodes.get(flavor, {})):
        workers = place_in_cluster(
            cap, cluster, flavor, want, least, g, topology, free_map, first_fit, spare
        )
        if not workers:
            continue
        count = sum(workers.values())
        left = _leftover(workers, g, free_map, spare)
        key = (-count, left, cap.price.get((cluster, flavor), 0.0), cluster)
        if best_key is None or key < best_key:
            best_key = key
            best = Placement(cluster, workers, left)
        if first_fit:
            break
    return best
