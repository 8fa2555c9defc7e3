"""What one cycle's walk learns about job shapes, and when it forgets it (``WalkMemo``).

A deep backlog holds many jobs of the same shape. Once one of them failed on the cycle's current
state, the next one fails the same way, so the walk keeps such answers, keyed by what decides
them, and asks once per shape. Each memo is a dict: look up with ``key in memo`` and
``memo[key]`` or ``memo.get(key)``, record with ``memo[key] = value``; only ``WalkMemo`` forgets
(``state_changed``, ``capacity_freed``). They are plain dicts rather than objects with
look-up and record methods because the walk reads and writes them for nearly every job, where a
method call costs measurably. The cycle keeps no other memo.

Valid until the cycle's state next changes (a preemption or a reservation made or given up:
the cycle calls ``state_changed`` or ``reservations_changed``, which forget them all; an
admission: ``quota_taken``, below), and kept only
while reuse is on (``EngineState(memoize=False)`` makes them record nothing, so every look-up
misses, to test that they change no decision). Read them as dicts; record ``admission``
through ``admission_failed``, which notes the flavors of each key; ``quota_reason`` holds a dict
per flavor:

- ``admission``: admission key (``JobFacts.walk_key | level``: the job's walk shape, and how
  many reservations it would still run at the start of) -> why such a job was not
  admitted: ``(reason, flavor)`` of its first flavor, or None for a job with no flavor to try.
- ``quota_reason``: flavor -> ``(queue, flavor, units, priority of a class that may not
  borrow, else None)`` -> why the queue's quota cannot take that many more units of the flavor
  (an ``explain`` reason), or None when it can.
- ``quota_blocked``: rank shape (``JobFacts.rank_shape``) -> whether the quota blocks its jobs in
  every flavor (once only admissions are left, the walk passes over such shapes whole).
- ``no_candidates``: ``(queue, class, flavor, units)`` -> True: no running job is a preemption
  candidate for such a job.

An admission takes GPUs of one flavor and quota of that flavor only (its queue's and its
cohorts' usage, and the spare and quota room of the reservations of that flavor): a job that
does not list the flavor asks nothing that changed (its quota reasons, headroom and room above
nominal are per flavor; an admission changes none of the running jobs its class could
re-account). So ``quota_taken(flavor)`` forgets only the admission answers of
shapes listing the flavor and the quota reasons about it, and the last two memos whole.

Valid for the whole cycle, and kept with reuse off too:

- ``placement_failed``: ``(flavor, gpus per worker, topology, level, clusters)`` -> the
  smallest gang that found no placement (a larger one finds none either). Admissions only take
  GPUs, so a failure stays one; a preemption frees GPUs of its flavor, and
  ``capacity_freed(flavor)`` forgets that flavor's entries; a reservation made or given up
  changes what each level is bound by, and ``reservations_changed`` forgets the entries of
  levels above 0.
- ``preemption_failed``: ``(queue, priority, flavor, gpus per worker, topology, clusters)`` ->
  the smallest gang whose search found no victim set; never forgotten within the cycle. It is
  part of the search limits (docs/SCHEDULING.md section 4), not only a saving: a search it
  spares is not counted among the cycle's ``MAX_FAILED_PREEMPTIONS`` fruitless ones.
"""

from __future__ import annotations

from typing import TypeVar

from gpusched.engine.model import Topology

K = TypeVar("K")
V = TypeVar("V")

Blocked = tuple[str, str]  # (explain reason, flavor)
QuotaAsk = tuple[str, str, int, int | None]  # (queue, flavor, units, priority if it may not borrow)
CandidateAsk = tuple[str, str, str, int]  # (queue, service class, flavor, units)
# flavor, gpus, topology, level, the clusters it is limited to (none: every cluster)
PlacementShape = tuple[str, int, Topology | None, int, tuple[str, ...]]
# queue, priority, flavor, gpus, topology, the clusters it is limited to
PreemptionShape = tuple[str, int, str, int, Topology | None, tuple[str, ...]]


class _Unrecorded(dict[K, V]):
    """A memo that records nothing (reuse off): every look-up misses."""

    __slots__ = ()

    def __setitem__(self, key: K, value: V) -> None:
        pass


class WalkMemo:
    """The memos of one cycle's walk (see the module doc)."""

    __slots__ = (
        "_admission_keys",
        "admission",
        "no_candidates",
        "placement_failed",
        "preemption_failed",
        "quota_blocked",
        "quota_reason",
    )

    def __init__(self, reuse: bool) -> None:
        memo = dict if reuse else _Unrecorded
        # until the state changes
        self.admission: dict[int, Blocked | None] = memo()
        self.quota_reason: dict[str, dict[QuotaAsk, str | None]] = memo()  # by flavor
        self.quota_blocked: dict[int, bool] = memo()
        self.no_candidates: dict[CandidateAsk, bool] = memo()
        # flavor -> the admission keys recorded about it (some may be gone: forgotten by another)
        self._admission_keys: dict[str, list[int]] = {}
        # for the whole cycle
        self.placement_failed: dict[PlacementShape, int] = {}
        self.preemption_failed: dict[PreemptionShape, int] = {}

    def state_changed(self) -> None:
        """An admission, preemption or reservation is about to change what later jobs see."""
        self.admission.clear()
        self.quota_reason.clear()
        self.quota_blocked.clear()
        self.no_candidates.clear()
        self._admission_keys.clear()

    def reservations_changed(self) -> None:
        """A reservation is about to be made or given up: what binds each level changes."""
        self.state_changed()
        failed = self.placement_failed
        for shape in [shape for shape in failed if shape[3]]:
            del failed[shape]

    def admission_failed(self, key: int, why: Blocked | None, flavors: tuple[str, ...]) -> None:
        """Record ``admission[key]`` for a shape of these flavors."""
        admission = self.admission
        admission[key] = why
        if key in admission:  # recorded: reuse is on
            keys = self._admission_keys
            for flavor in flavors:
                keys.setdefault(flavor, []).append(key)

    def quota_taken(self, flavor: str) -> None:
        """An admission is about to take GPUs and quota of ``flavor``: forget what depends on
        that flavor, and the shape and candidate answers (see the module doc)."""
        admission = self.admission
        for key in self._admission_keys.pop(flavor, ()):
            admission.pop(key, None)
        self.quota_reason.pop(flavor, None)
        self.quota_blocked.clear()
        self.no_candidates.clear()

    def capacity_freed(self, flavor: str) -> None:
        """A preemption freed GPUs of ``flavor``: gangs that found no placement there may now."""
        failed = self.placement_failed
        for shape in [shape for shape in failed if shape[0] == flavor]:
            del failed[shape]
