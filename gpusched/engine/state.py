"""What the engine keeps from one cycle to the next: an ``EngineState``, held by its caller.

``run_cycle(snapshot, policy, state=...)`` and ``estimate(...)`` decide from the snapshot alone;
the state only saves work when the next snapshot shares objects with the last one (the
simulator's do, cycle after cycle), and changes no decision. Each caller holds its own: the
simulator one per run, a test its own, the live estimate a fresh one per call; the live cycle,
which reads every snapshot object anew from the database, keeps one per worker process through a
``SnapshotKeep`` (snapshot_keep.py), which hands it the last cycle's objects where they are equal.
No engine module keeps state of its own. A state serves one caller at a time: it has no lock,
and two threads must not share one.

It holds, each kept while the snapshot's objects it was built from stay the same:

- the node layout (``placement.Layout``: node numbering, flavors per node, topology domains),
  while the snapshot's clusters and flavors are the same tuple objects and its topology levels
  are equal;
- the static part of the quotas (``quota.QuotaStatics``, with its ``never_fits`` answers), while
  every queue keeps its quota objects (the state keeps the queues, so their ids are not reused
  meanwhile);
- the bookkeeping of the admitted jobs (``bookkeeping.Bookkeeping``): free capacity, quota usage,
  running jobs, victim pools and estimated ends, brought up to date by the jobs that came and
  went since the last snapshot, while the layout, service classes and default runtime stay;
- the ranker (``ranking.Ranker``): each pending job's facts, the waiting jobs per rank shape and
  their merges, and, while the quotas stay the same, what the walk read of the quotas by usage
  (each rank shape's share, each queue's ``blocks_all`` answer).

``memoize=False`` turns off the walk's reuse of what it learned about job shapes on the
cycle's current state (``memo.WalkMemo``), to test that the reuse changes no decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpusched.engine.model import Cluster, Cohort, Flavor, Queue, Snapshot
from gpusched.engine.placement import Layout
from gpusched.engine.quota import QuotaStatics
from gpusched.engine.ranking import Ranker

if TYPE_CHECKING:
    from gpusched.engine.bookkeeping import Bookkeeping


class EngineState:
    """The caches one caller keeps between cycles (see the module doc)."""

    __slots__ = (
        "_layout",
        "_layout_key",
        "_quota_key",
        "_quota_queues",
        "_quota_statics",
        "bookkeeping",
        "memoize",
        "ranker",
    )

    def __init__(self, *, memoize: bool = True) -> None:
        self.memoize = memoize
        self._layout: Layout | None = None
        self._layout_key: tuple[tuple[Cluster, ...], tuple[Flavor, ...], tuple[str, ...]] | None
        self._layout_key = None
        self._quota_statics: QuotaStatics | None = None
        self._quota_key: tuple[object, ...] | None = None
        self._quota_queues: list[Queue] = []  # keeps the quotas alive: their ids stay unique
        self.bookkeeping: Bookkeeping | None = None
        self.ranker = Ranker()

    def layout_of(self, snapshot: Snapshot) -> Layout:
        """The snapshot's node layout, rebuilt only when its clusters, flavors or levels change."""
        key = self._layout_key
        if (
            self._layout is not None
            and key is not None
            and key[0] is snapshot.clusters
            and key[1] is snapshot.flavors
            and key[2] == snapshot.topology_levels
        ):
            return self._layout
        layout = Layout(snapshot)
        self._layout = layout
        self._layout_key = (snapshot.clusters, snapshot.flavors, snapshot.topology_levels)
        return layout

    def quota_statics(
        self, queues: Sequence[Queue], cohorts: tuple[Cohort, ...] = ()
    ) -> QuotaStatics:
        """The static part of these queues' quotas, reused while every queue keeps its quota
        objects and the cohort tree stays equal."""
        key = (*((q.name, id(q.quotas), q.cohort, q.weight) for q in queues), cohorts)
        if self._quota_statics is not None and self._quota_key == key:
            return self._quota_statics
        statics = QuotaStatics(queues, cohorts)
        self._quota_statics = statics
        self._quota_key = key
        self._quota_queues = list(queues)
        return statics
