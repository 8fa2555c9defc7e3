"""What each topology domain has room for on a cycle's live free map (``DomainRoom``).

A topology placement (placement.py, ``place_in_cluster``) weighs every domain of a cluster: the
workers of ``g`` units it has room for, its free units, whether any of its nodes is partly used.
Read from the nodes, that is a walk over every node with room, at every such placement (a
tenth of a 50,000-pending cycle on 5,000 nodes, for a few hundred gangs). ``Capacity`` keeps one
``DomainRoom`` per (flavor, cluster, level, required, g) asked about, for the cycle: its sums are
brought up to date from the free map's changes (``Capacity``'s log of take and give) when it is
next read, and it is dropped with the flavor's other indexes when the free map is changed
another way (``Capacity.invalidate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Move = tuple[int, int, int]  # node index, free units before, after
DomainKey = tuple[str, ...] | tuple[str, int]  # a domain's label values, or ("", node index)


class DomainRoom:
    """Per topology domain of one cluster, flavor and worker size ``g``: the workers it has room
    for (``slots``), its free units (``free``) and how many of its nodes are partly used
    (``partly``), as the node-by-node sums give them."""

    __slots__ = ("_capacity", "_domain_of", "_g", "free", "partly", "slots", "synced")

    def __init__(
        self,
        groups: Mapping[DomainKey, Sequence[int]],
        free: Mapping[int, int],
        capacity: Sequence[Mapping[str, int]],
        flavor: str,
        g: int,
        synced: int,
    ) -> None:
        self._g = g
        self._domain_of: dict[int, DomainKey] = {}
        self._capacity: dict[int, int] = {}
        self.slots: dict[DomainKey, int] = {}
        self.free: dict[DomainKey, int] = {}
        self.partly: dict[DomainKey, int] = {}
        for key, members in groups.items():
            slots = units = partly = 0
            for i in members:
                f = free.get(i, 0)
                most = capacity[i].get(flavor, 0)
                self._domain_of[i] = key
                self._capacity[i] = most
                slots += f // g
                units += f
                partly += f < most
            self.slots[key] = slots
            self.free[key] = units
            self.partly[key] = partly
        self.synced = synced  # how many of the log's moves the sums include

    def catch_up(self, moves: list[Move]) -> None:
        """Add the moves logged since the last read (other clusters' nodes are skipped)."""
        domain_of = self._domain_of
        g = self._g
        for i, before, after in moves[self.synced :]:
            key = domain_of.get(i)
            if key is None:
                continue
            most = self._capacity[i]
            self.slots[key] += after // g - before // g
            self.free[key] += after - before
            self.partly[key] += (after < most) - (before < most)
        self.synced = len(moves)
