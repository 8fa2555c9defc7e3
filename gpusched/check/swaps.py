"""Rule 8 of docs/SCHEDULING.md section 4: no same-cycle swap.

A cycle that has admitted a job X of queue Q (a plain admission: X stops nothing) must not then
stop a running job of Q for a preemptor P of another queue, by reclaim or fair share, when X's
GPUs would have served P: taking X back loses no work, stopping a running job does. The report
lists an instant's admissions in the order the cycle walked them, so "then" is "X's ``admit``
comes before P's". X's GPUs serve P when, all of them together:

- X is in P's flavor, its class is preemptible, it holds at least as many GPUs as all the jobs
  stopped for P (every one of them in Q), and Q stays at or above its nominal without X;
- P, which needs no topology, fits (``min_workers``, else ``workers``, each on one node) in X's
  cluster on the GPUs free before P's admission, plus X's, counting every job stopped at this
  instant as still holding its GPUs.

The check is made only where the report says enough, read in the engine's favour: P starts at
the instant of its stops (the victims have no grace period), no job is shrunk at that instant,
no preemptor of an earlier cycle is still waiting for its victims, and a reservation holds its
nodes against a P that would still run at its start (and leaves P of the reserved job's queue
unchecked): the one in force, and any the same instant's cycle made (the report lists those
after its admissions, though the walk may have made them before P's turn).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusched.check.conservation import Reserved, reserved_by
from gpusched.sim.scenario import JobSpec

if TYPE_CHECKING:
    from gpusched.check.replay import Alloc, Replay

SWAP_REASONS = ("reclaim", "fair-share")


@dataclass
class _Stop:
    victim: Alloc
    reason: str
    by: str | None
    at_once: bool  # no grace period: its GPUs came free at this instant


class Swaps:
    """What one instant has decided so far, for rule 8."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.stops: list[_Stop] = []
        self.shrunk = False
        self.plain: list[tuple[JobSpec, Alloc]] = []
        self.reserved_now: list[Reserved] = []

    def new_instant(self, events: list[Mapping[str, Any]]) -> None:
        self.stops = []
        self.shrunk = False
        self.plain = []
        # reservations this instant's cycle made: the report lists them after its admissions,
        # but the walk may have made one before a preemptor it then held nodes against
        self.reserved_now = [
            reserved
            for event in events
            if event.get("type") == "reserve" and (reserved := reserved_by(event)) is not None
        ]

    def stopped(self, job: JobSpec, alloc: Alloc, reason: str, by: str | None) -> None:
        self.stops.append(_Stop(alloc, reason, by, self.replay.grace(job) <= 0))

    def scaled(self, by: str | None) -> None:
        if by is not None:
            self.shrunk = True

    def admitted(self, t: float, job: JobSpec, alloc: Alloc, starting: bool) -> None:
        """Call on ``job``'s admission, before its GPUs are taken."""
        mine = [stop for stop in self.stops if stop.by == job.name]
        if mine:
            self._check(t, job, alloc, mine)
        elif not starting and all(stop.by != job.name for stop in self.stops):
            self.plain.append((job, alloc))

    def _check(self, t: float, job: JobSpec, alloc: Alloc, mine: list[_Stop]) -> None:
        replay = self.replay
        queues = {stop.victim.queue for stop in mine}
        if (
            self.shrunk
            or job.topology is not None
            or replay.conservation.waiting
            or len(queues) != 1
            or job.queue in queues
            or any(stop.reason not in SWAP_REASONS or not stop.at_once for stop in mine)
        ):
            return
        queue = queues.pop()
        flavor = alloc.flavor
        skip: frozenset[str] = frozenset()
        conservation = replay.conservation
        reservations = self.reserved_now + conservation.reserved_for(t)
        for res in reservations:
            if res.flavor in (flavor, None) and conservation.long(job, t, res):
                if replay.jobs[res.job].queue == job.queue:
                    return  # the reservation's quota share is not in the report
                skip |= res.nodes
        stopped = sum(sum(stop.victim.placement.values()) for stop in mine)
        used: dict[tuple[str, str], int] = defaultdict(int, replay.node_used)
        queue_used = replay.queue_usage(queue, flavor)
        for stop in self.stops:
            if stop.at_once:
                for node, gpus in stop.victim.placement.items():
                    used[node, stop.victim.flavor] += gpus
                if stop.victim.queue == queue and stop.victim.flavor == flavor:
                    queue_used += sum(stop.victim.placement.values())
        quota = replay.queues[queue].quotas.get(flavor)
        nominal = quota.nominal if quota is not None else 0
        for taken_job, taken in self.plain:
            held = sum(taken.placement.values())
            if (
                taken.queue != queue
                or taken.flavor != flavor
                or held < stopped
                or queue_used - held < nominal
                or not replay.class_of(taken_job, (flavor,)).preemptible
            ):
                continue
            if conservation.capacity_fits(
                job, flavor, used, skip, cluster=taken.cluster, given=taken.placement
            ):
                replay.fail(
                    t, f"preempt for {job.name}", f"same-cycle swap: stopped {stopped} GPU(s) "
                    f"of queue {queue} although this cycle had just admitted {taken_job.name} "
                    f"of {queue} on {held} GPU(s) of {flavor} that would have held {job.name} "
                    "(rule 8: take that admission back instead)"
                )  # fmt: skip
                return
