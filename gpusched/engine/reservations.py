"""The cycle's backfill reservations (docs/SCHEDULING.md section 4, Backfill): which jobs hold
one, and what they leave a job that would still run when they start.

A policy reserves for up to ``Policy.reservations`` blocked jobs per cycle, as Slurm's backfill
plans the jobs after the first (``bf_max_job_test``): each is planned around those made before
it (backfill.py). A job is bound by every reservation whose start it would outlive: on the
reserved nodes it may take only what each of them leaves spare, and in the reserved job's queue
only the quota each leaves. Its ``level`` is how many reservations it outlives: the reservations
sorted by start, a job outlives the first ``level`` of them, so the level (with the job's shape)
is what the walk's memos key its answers by.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gpusched.engine.model import PendingJob
from gpusched.engine.placement import Capacity, place


@dataclass(slots=True)
class Reservation:
    job: str
    start: float
    cluster: str
    flavor: str
    units: dict[int, int]  # node index -> units reserved at start
    spare: dict[int, int]  # node index -> units a long job may still take there
    queue: str = ""
    quota_room: int = 0  # units of the flavor a long job of the same queue may still take
    end: float = 0.0  # when the reserved job is expected to end, started at ``start``


class Reservations:
    """The reservations in force, sorted by start (then job)."""

    __slots__ = ("_list", "_starts")

    def __init__(self) -> None:
        self._list: list[Reservation] = []
        self._starts: list[float] = []

    def __len__(self) -> int:
        return len(self._list)

    def __iter__(self) -> Iterator[Reservation]:
        return iter(self._list)

    def add(self, reservation: Reservation) -> None:
        at = bisect.bisect_right(
            [(r.start, r.job) for r in self._list], (reservation.start, reservation.job)
        )
        self._list.insert(at, reservation)
        self._starts.insert(at, reservation.start)

    def remove(self, job: str) -> Reservation | None:
        """Take ``job``'s reservation out (returned), if it holds one."""
        for k, r in enumerate(self._list):
            if r.job == job:
                del self._list[k]
                del self._starts[k]
                return r
        return None

    def of(self, job: str) -> Reservation | None:
        return next((r for r in self._list if r.job == job), None)

    def level(self, end: float) -> int:
        """How many reservations a job ending at ``end`` would still run at the start of."""
        return bisect.bisect_left(self._starts, end)

    def binding(self, flavor: str, level: int) -> list[Reservation]:
        """The reservations of ``flavor`` a job of ``level`` outlives."""
        return [r for r in self._list[:level] if r.flavor == flavor]

    def of_flavor(self, flavor: str) -> list[Reservation]:
        return [r for r in self._list if r.flavor == flavor]


def spare_of(spares: list[dict[int, int]]) -> dict[int, int] | None:
    """What reservations leaving these ``spares`` leave a long job on their nodes together:
    the least per node (None: no reservation, no limit)."""
    if not spares:
        return None
    if len(spares) == 1:
        return spares[0]
    merged: dict[int, int] = {}
    for spare in spares:
        for i, s in spare.items():
            known = merged.get(i)
            merged[i] = s if known is None or s < known else known
    return merged


def quota_room_of(binding: list[Reservation], queue: str) -> int | None:
    """The quota the ``binding`` reservations of ``queue`` leave a long job of that queue."""
    rooms = [r.quota_room for r in binding if r.queue == queue]
    return min(rooms) if rooms else None


def take(binding: list[Reservation], units: Mapping[int, int], queue: str) -> None:
    """A long job of ``queue`` took ``units``: the ``binding`` reservations leave less."""
    total = sum(units.values())
    for r in binding:
        spare = r.spare
        for node, taken in units.items():
            if node in spare:
                spare[node] -= taken
        if r.queue == queue:
            r.quota_room -= total


def delayed_by(
    cap: Capacity, job: PendingJob, flavor: str, want: int, least: int, binding: list[Reservation]
) -> str:
    """The reserved job whose GPUs ``job`` would take: the first ``binding`` reservation, by
    start, that alone leaves it no placement (the first when only several together do)."""
    only = job.clusters or None
    g = job.gpus_per_worker
    for r in binding:
        if place(cap, flavor, want, least, g, job.topology, None, True, only, r.spare) is None:
            return r.job
    return binding[0].job
