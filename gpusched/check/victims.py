"""The preemption rules checked for every job stopped or shrunk for a preemptor (rules 1-5).

A victim's class must be preemptible and past its ``min_runtime`` (and, for a fair-share or
priority stop, past its ``preemption_protection``) since its last start, and a fair-share or
priority victim stopped fewer than ``STOP_BOUND`` times before and not cheaper to wait for (its
estimated end, times the preemptor's GPUs, no sooner than the work the stop throws away); a
preemptor may stop only strictly lower-priority jobs of its own queue (``priority``) or, from
another queue of the cohort, jobs of borrowing queues (``reclaim``, ``fair-share`` with rule
3's share tests in ``share.py``; in a cohort tree each cohort between the victim's queue and
the two queues' common cohort must borrow too); and the preemptor must start once the victims'
grace period has passed, plus one cycle (its promise), unless it is excused
(``Replay.started_in_time``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpusched.check.jobs import EPS, fmt
from gpusched.check.share import fair_share_problem
from gpusched.sim.scenario import JobSpec

if TYPE_CHECKING:
    from gpusched.check.replay import Alloc, Replay

# rule 1: stopped and requeued this often, a job is stopped again by no fair-share or priority
# stop, and held to its queue's nominal (no stop at all) when that nominal could hold it
STOP_BOUND = 3


def check_victim(
    replay: Replay, t: float, job: JobSpec, alloc: Alloc, event: Mapping[str, Any], reason: str,
    what: str,
) -> None:  # fmt: skip
    """Rules 1-5 for a job stopped or shrunk (rule 6) for a preemptor."""
    service_class = replay.class_of(job, (alloc.flavor,))
    if not service_class.preemptible:
        replay.fail(t, what, f"class {service_class.name} is not preemptible ({reason})")
    ran = t - alloc.started
    if ran < service_class.min_runtime - EPS:
        replay.fail(
            t, what, f"preempted ({reason}) after {fmt(ran)} s, inside its class "
            f"min_runtime of {fmt(service_class.min_runtime)} s"
        )  # fmt: skip
    protection = service_class.preemption_protection
    if reason in ("fair-share", "priority") and ran < protection - EPS:
        replay.fail(
            t, what, f"preempted ({reason}) after {fmt(ran)} s, inside its class "
            f"preemption_protection of {fmt(protection)} s (only a reclaim may stop it then)"
        )  # fmt: skip
    stops = replay.history[job.name].requeues
    if reason in ("fair-share", "priority") and stops >= STOP_BOUND:
        replay.fail(
            t, what, f"preempted ({reason}) after {stops} earlier stops; from {STOP_BOUND} on "
            "only a reclaim may stop it"
        )  # fmt: skip
    check_preemptor(replay, t, job, event, reason, what)
    by = replay.jobs.get(str(event.get("by")))
    if reason in ("fair-share", "priority") and by is not None:
        waited = cheaper_to_wait(replay, t, job, alloc, by, reason)
        if waited is not None:
            replay.fail(t, what, waited)
    if reason == "fair-share" and by is not None:
        placement = event.get("placement")
        kept = sum(placement.values()) if isinstance(placement, Mapping) else 0
        removed = sum(alloc.placement.values()) - kept
        replay.release_due(t)
        problem = fair_share_problem(replay, t, job, alloc.flavor, removed, by)
        if problem is not None:
            replay.fail(t, what, problem)
    promise(replay, t, job, event, what)


def cheaper_to_wait(
    replay: Replay, t: float, job: JobSpec, alloc: Alloc, by: JobSpec, reason: str
) -> str | None:
    """Rule 1: a fair-share or priority stop of a job whose estimated end (its
    ``estimated_runtime`` from its last start, else its class ``max_runtime``) is nearer, times
    the preemptor's GPUs (its least workers), than the work the stop throws away (the time since
    its last checkpoint times its GPUs): the preemptor had to wait for it. None when allowed."""
    runtime = job.estimated_runtime
    if runtime is None:
        runtime = replay.classes[job.service_class].max_runtime
    if runtime is None:
        return None
    left = alloc.started + runtime - t
    if left <= EPS:
        return None  # at or past its estimated end: the estimate was wrong
    ran = t - alloc.started
    since = ran % job.checkpoint_interval if job.checkpoint_interval else ran
    units = sum(alloc.placement.values())  # GPUs per node
    need = (by.min_workers or by.workers) * by.gpus_per_worker
    if left * need + EPS >= since * units:
        return None
    return (
        f"preempted ({reason}) {fmt(left)} s before its estimated end, which "
        f"{by.name} ({need} GPUs) could have waited for: {fmt(left * need)} GPU-s against the "
        f"{fmt(since * units)} GPU-s the stop throws away"
    )


def check_preemptor(
    replay: Replay, t: float, victim: JobSpec, event: Mapping[str, Any], reason: str, what: str
) -> None:
    by_name = event.get("by")
    by = replay.jobs.get(by_name) if isinstance(by_name, str) else None
    if by is None:
        replay.fail(t, what, f"reason {reason} needs 'by', the preemptor, got {event.get('by')!r}")
        return
    by_priority = replay.classes[by.service_class].priority
    victim_priority = replay.classes[victim.service_class].priority
    if by.queue == victim.queue and by_priority <= victim_priority:
        replay.fail(
            t, what, f"{by.name} (priority {by_priority}) may not stop a job of its own "
            f"queue with priority {victim_priority}"
        )  # fmt: skip
    if reason == "priority" and by.queue != victim.queue:
        replay.fail(t, what, f"priority preemption across queues (by {by.name} of {by.queue})")
    if reason in ("reclaim", "fair-share"):
        at, _, their_node = replay.tree.meeting(by.queue, victim.queue)
        if by.queue == victim.queue or at is None:
            replay.fail(
                t, what, f"{reason} needs a preemptor from another queue of the victim's "
                f"cohort; {by.name} is in {by.queue}"
            )  # fmt: skip
        elif not borrowing(replay, victim.queue):
            replay.fail(t, what, f"{reason} of queue {victim.queue}, which is not borrowing")
        else:
            lender = cohort_not_borrowing(replay, victim, their_node)
            if lender is not None:
                replay.fail(
                    t, what, f"{reason} across cohorts for {by.name}, but cohort {lender} "
                    f"(between {victim.queue} and its common cohort with {by.queue}) is not "
                    "borrowing"
                )  # fmt: skip


def cohort_not_borrowing(replay: Replay, victim: JobSpec, top: str) -> str | None:
    """The first cohort from the victim's queue up to ``top`` that does not borrow in the
    victim's flavors, counting every admit still to come at this instant and the waiting
    preemptors (the reading most favourable to the engine); None when all borrow."""
    if top == victim.queue:
        return None
    usage: dict[tuple[str, str], int] = defaultdict(int, replay.queue_used)
    for key, units in replay.coming.items():
        usage[key] += max(0, units)
    for name, w in replay.conservation.waiting.items():
        if w.flavor is not None:
            usage[replay.jobs[name].queue, w.flavor] += sum(w.placement.values())
    for cohort in replay.tree.path(victim.queue):
        if not any(replay.tree.level(cohort, f, usage).borrowing for f in victim.flavors):
            return cohort
        if cohort == top:
            break
    return None


def borrowing(replay: Replay, queue: str) -> bool:
    """Whether ``queue`` is above nominal now, counting the admits still to come at this
    instant (the engine may have decided them before the preemption it lists first) and
    its preemptors waiting for their victims' grace period (they count from admission)."""
    spec = replay.queues[queue]
    waiting: dict[str, int] = defaultdict(int)
    for name, w in replay.conservation.waiting.items():
        if replay.jobs[name].queue == queue and w.flavor is not None:
            waiting[w.flavor] += sum(w.placement.values())
    flavors = {f for name, f in (*replay.queue_used, *replay.coming) if name == queue}
    return any(
        replay.queue_usage(queue, f) + replay.coming.get((queue, f), 0) + waiting.get(f, 0)
        > (q.nominal if (q := spec.quotas.get(f)) else 0)
        for f in flavors | set(waiting)
    )


def promise(replay: Replay, t: float, victim: JobSpec, event: Mapping[str, Any], what: str) -> None:
    """Remember that ``by`` must start once the victims' grace period has passed."""
    by = event.get("by")
    if not isinstance(by, str) or by not in replay.jobs:
        return
    deadline = t + replay.grace(victim) + replay.scenario.cycle_interval
    if by in replay.promises and replay.promises[by][0] == t:
        deadline = max(deadline, replay.promises[by][1])
        what = replay.promises[by][2]
    elif by in replay.promises:
        check_promise(replay, by)
    replay.promises[by] = (t, deadline, what)


def check_promises(replay: Replay) -> None:
    for by in sorted(replay.promises):
        check_promise(replay, by)
    replay.promises.clear()


def check_promise(replay: Replay, by: str) -> None:
    """Rule 5: nothing is stopped for a preemptor that then does not start."""
    t, deadline, what = replay.promises.pop(by)
    if not replay.started_in_time(by, t, deadline, replay.last_t):
        replay.fail(
            t, what, f"its preemptor {by} did not start by t={fmt(deadline)} "
            "(the victims' grace period plus one cycle)"
        )  # fmt: skip
