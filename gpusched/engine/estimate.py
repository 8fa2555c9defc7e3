"""What would happen to a job submitted now (the submit form, the REST API's estimate).

``estimate(snapshot, job)`` runs one cycle on the snapshot with ``job`` added to the pending
jobs and reports the outcome for it: it would start, start by borrowing quota, start by
preempting other jobs (after their grace period), or wait (with the reason and, when known, an
estimated start). Nothing is decided for real: the snapshot is not changed.

The ``Estimate`` keeps the engine's own decisions about the job, so a caller needs no second
cycle: the ``Admit`` (cluster, flavor, workers, start, borrowing), the ``Stop`` and ``Scale``
decisions of the running jobs it preempts (reason, shrink size, release time), and, when it
waits, its ``PendingInfo`` (reason, position, numbers, blocker, estimated start).

Explaining every pending job costs (a few thousand live ones): the trial cycle runs without
explanations, and only when the job waits does a second, identical cycle explain the pending
jobs, for the job's ``PendingInfo``. Both cycles share one ``EngineState`` (the caller's, or a
fresh one), so the second reuses the first's layout, bookkeeping and ranking.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusched.engine.cycle import run_cycle
from gpusched.engine.explain import PendingInfo
from gpusched.engine.model import Admit, PendingJob, Scale, Snapshot, Stop
from gpusched.engine.policies import Policy
from gpusched.engine.state import EngineState

START, BORROW, PREEMPT, WAIT = "start", "borrow", "preempt", "wait"


@dataclass(frozen=True, slots=True)
class Estimate:
    """The trial cycle's decisions about one job, and a sentence with engine times (t=...)."""

    outcome: str  # start | borrow | preempt | wait
    # now, after the victims' grace, or a backfill estimate; None when none can be told or it
    # is overdue (start_estimates.py)
    estimated_start: float | None
    message: str
    admit: Admit | None = None  # start, borrow, preempt: where, how many workers, when
    stops: tuple[Stop, ...] = ()  # preempt: running jobs stopped for it (``by`` names it)
    scales: tuple[Scale, ...] = ()  # preempt: elastic jobs shrunk for it (``workers``: new size)
    pending: PendingInfo | None = None  # wait: why, with its position and numbers

    @property
    def victims(self) -> tuple[str, ...]:
        """The jobs it would preempt: the stopped ones, then the shrunk ones."""
        return tuple(s.job for s in self.stops) + tuple(s.job for s in self.scales)

    @property
    def reason(self) -> str:
        """The reason code when it would wait (``explain``'s constants), else empty."""
        return self.pending.reason if self.pending is not None else ""


def estimate(
    snapshot: Snapshot,
    job: PendingJob,
    policy: Policy | str = "default",
    *,
    state: EngineState | None = None,
) -> Estimate:
    """The outcome for ``job`` if it were submitted at ``snapshot.now``. ``state``: as for
    ``run_cycle``; without one, the trial cycles share a fresh state of their own."""
    if state is None:
        state = EngineState()
    others = tuple(p for p in snapshot.pending if p.name != job.name)
    trial = replace(snapshot, pending=(*others, job))
    result = run_cycle(trial, policy, explain_pending=False, state=state)
    admit = next((a for a in result.admits if a.job == job.name), None)
    if admit is None:
        # it waits: now ask why
        info = run_cycle(trial, policy, state=state).pending.get(job.name)
        if info is None:
            return Estimate(WAIT, None, "Would wait.")
        return Estimate(WAIT, info.estimated_start, info.message, pending=info)
    stops = tuple(s for s in result.stops if s.by == job.name)
    scales = tuple(s for s in result.scales if s.by == job.name)
    where = f"{admit.workers} worker(s) of {admit.flavor} on cluster {admit.cluster}"
    if stops or scales:
        victims = ", ".join([*(s.job for s in stops), *(s.job for s in scales)])
        message = f"Would start at t={admit.start_at:g} on {where}, after preempting {victims}."
        return Estimate(PREEMPT, admit.start_at, message, admit, stops, scales)
    if admit.borrowing:
        message = (
            f"Would start now on {where}, borrowing unused quota from its cohort "
            f"(it may be preempted when the lenders need their quota back)."
        )
        return Estimate(BORROW, admit.start_at, message, admit)
    return Estimate(START, admit.start_at, f"Would start now on {where}.", admit)
