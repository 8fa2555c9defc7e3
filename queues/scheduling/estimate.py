"""What would happen to a job submitted now (for the submit form).

``estimate(snapshot, job)`` runs one cycle on the snapshot with ``job`` added to the pending
jobs and reports the outcome for it: it would start, start by borrowing quota, start by
preempting other jobs (after their grace period), or wait (with the reason and, when known, an
estimated start). Nothing is decided for real: the snapshot is not changed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from queues.scheduling.cycle import run_cycle
from queues.scheduling.model import PendingJob, Snapshot
from queues.scheduling.policies import Policy

START, BORROW, PREEMPT, WAIT = "start", "borrow", "preempt", "wait"


@dataclass(frozen=True, slots=True)
class Estimate:
    outcome: str  # start | borrow | preempt | wait
    estimated_start: float | None  # now, after the victims' grace, or a backfill estimate
    message: str
    victims: tuple[str, ...] = ()
    reason: str = ""  # the PendingInfo reason code when it would wait


def estimate(snapshot: Snapshot, job: PendingJob, policy: Policy | str = "default") -> Estimate:
    """The outcome for ``job`` if it were submitted at ``snapshot.now``."""
    others = tuple(p for p in snapshot.pending if p.name != job.name)
    trial = replace(snapshot, pending=(*others, job))
    result = run_cycle(trial, policy)
    admit = next((a for a in result.admits if a.job == job.name), None)
    if admit is not None:
        victims = tuple(sorted(s.job for s in result.stops if s.by == job.name))
        victims += tuple(sorted(s.job for s in result.scales if s.by == job.name))
        where = f"{admit.workers} worker(s) of {admit.flavor} on cluster {admit.cluster}"
        if victims:
            return Estimate(
                PREEMPT,
                admit.start_at,
                f"Would start at t={admit.start_at:g} on {where}, after preempting "
                f"{', '.join(victims)}.",
                victims,
            )
        if admit.borrowing:
            return Estimate(
                BORROW,
                admit.start_at,
                f"Would start now on {where}, borrowing unused quota from its cohort "
                f"(it may be preempted when the lenders need their quota back).",
            )
        return Estimate(START, admit.start_at, f"Would start now on {where}.")
    info = result.pending.get(job.name)
    if info is None:
        return Estimate(WAIT, None, "Would wait.")
    return Estimate(WAIT, info.estimated_start, info.message, reason=info.reason)
