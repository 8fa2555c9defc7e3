"""One scheduling cycle: snapshot in, decisions out (docs/SCHEDULING.md section 4).

``run_cycle`` ranks the pending jobs, admits what fits quota and placement, preempts under rules
1-7, reserves for the best-ranked blocked jobs (backfill) and an aged borrowing job (aging.py),
grows elastic jobs into idle capacity and explains every job left pending. Deterministic.

What the walk learns about job shapes on the cycle's current state lives in its ``WalkMemo``
(``memo.py``, which says what each memo holds and when it is forgotten); what is kept from one
cycle to the next lives in the caller's ``EngineState`` (``state.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import Literal

from gpusched.engine import explain, reaccount, takeback
from gpusched.engine.aging import BLOCKED, PREEMPTED, AgedReservation
from gpusched.engine.backfill import find_reservation
from gpusched.engine.context import build_context
from gpusched.engine.explain import PendingInfo
from gpusched.engine.explain_pass import explain_pending
from gpusched.engine.fair_order import FairOrder
from gpusched.engine.gcpause import cyclic_gc_paused
from gpusched.engine.growth import grow
from gpusched.engine.memo import Blocked, WalkMemo
from gpusched.engine.model import (
    Admit,
    CycleResult,
    PendingJob,
    Reserve,
    Scale,
    ServiceClass,
    Snapshot,
    Stop,
)
from gpusched.engine.placement import Placement, place
from gpusched.engine.policies import Policy, get_policy
from gpusched.engine.preemption import PreemptionPlan, candidates, plan_preemption
from gpusched.engine.ranking import JobFacts
from gpusched.engine.reasons import capacity_reason, first_reason
from gpusched.engine.reservations import delayed_by, quota_room_of, spare_of, take
from gpusched.engine.running import DEFAULT_CLASS, RunningJob
from gpusched.engine.state import EngineState

MAX_FAILED_PREEMPTIONS = 8  # bound on fruitless preemption searches per cycle


class _Cycle:
    def __init__(
        self, snapshot: Snapshot, policy: Policy, explain_pending: bool, state: EngineState
    ) -> None:
        self.ctx = build_context(snapshot, policy, state)
        self.policy = policy
        self.explain = explain_pending
        self.ranker = state.ranker
        self.reuse = state.memoize  # the walk may skip jobs whose shape the memo knows
        self.memo = WalkMemo(reuse=state.memoize)
        # the decisions
        self.admits: list[Admit] = []
        self.scales: list[Scale] = []
        self.infos: dict[str, PendingInfo] = {}
        # what the walk found out
        self.blocked_reason: dict[str, Blocked] = {}  # job -> why it was not admitted
        # behind-reservation, when explaining: the reserved job a job would delay, by
        # (admission key, flavor) as the walk finds it, and by job
        self.behind: dict[tuple[int, str], str] = {}
        self.delays: dict[str, str] = {}
        self.failed_preemptions = 0  # searches that found no victim set (the search bound)
        # reservations the walk may still make (policy.reservations; aging.py gives one back
        # when its aged job starts)
        self.reserves_left = policy.reservations if policy.backfill else 0
        self.freed_at_once = False  # the last preemption freed GPUs nobody holds, at once
        self.head_blocker: str | None = None
        # what the jobs left pending wait for, which growth must leave to them
        self.flavors_waited_for: set[str] = set()  # GPUs of these flavors
        self.pools_waited_for: set[tuple[str, str]] = set()  # quota of these (cohort, flavor)

    # -- admission ---------------------------------------------------------------------------
    def try_admit(self, facts: JobFacts, level: int) -> bool:
        """Admit the job if it fits; ``level``: how many reservations it would still run at
        the start of (reservations.py)."""
        job = facts.job
        key = facts.walk_key | level
        failed = self.memo.admission
        if key in failed:  # a job of its shape already failed on this very state: so does it
            known = failed[key]
        else:
            cls = self.ctx.cls_of(job)
            least = job.min_workers or job.workers
            outcome = self._try_admit(job, cls, job.gpus_per_worker, least, level, key)
            if outcome is True:
                return True
            self.memo.admission_failed(key, outcome, job.flavors)
            known = outcome
        if known is not None:
            self.blocked_reason[job.name] = known
            if known[0] == explain.BEHIND_RESERVATION and self.explain:
                self.delays[job.name] = self.behind.get((key, known[1]), "")
        return False

    def _try_admit(
        self, job: PendingJob, cls: ServiceClass, gpus: int, least: int, level: int, key: int
    ) -> Blocked | Literal[True] | None:
        """Admit ``job`` if it fits (True); otherwise the first flavor's blocking reason."""
        ctx = self.ctx
        quota = ctx.quota
        queue = job.queue
        reservations = ctx.reservations
        placement_failed = self.memo.placement_failed
        first: Blocked | None = None
        for flavor in job.flavors:
            reason = self._quota_reason(queue, flavor, least * gpus, cls)
            if reason is not None:
                first = first_reason(first, reason, flavor)
                continue
            room = quota.headroom(queue, flavor)
            if queue in ctx.nominal_only:
                left = quota.nominal(queue, flavor) - quota.used(queue, flavor)
                if least * gpus > left:
                    first = first_reason(first, explain.QUOTA_HELD, flavor)
                    continue
                room = min(room, left)
            if not cls.can_borrow:
                room = min(room, reaccount.room_above_nominal(ctx, queue, flavor, cls))
            binding = reservations.binding(flavor, level) if level else None
            if binding:
                # a long job of a reserved job's queue must leave it its quota at its start
                quota_room = quota_room_of(binding, queue)
                if quota_room is not None:
                    if least * gpus > quota_room:
                        if self.explain:
                            mine = [r for r in binding if r.queue == queue]
                            delayed = min(mine, key=lambda r: r.quota_room).job
                            self.behind[(key, flavor)] = delayed
                        first = first_reason(first, explain.BEHIND_RESERVATION, flavor)
                        continue
                    room = min(room, quota_room)
            want = max(least, min(job.workers, room // gpus))
            shape = (flavor, gpus, job.topology, level, job.clusters)
            failed_at = placement_failed.get(shape)
            if failed_at is not None and least >= failed_at:
                first = first_reason(first, capacity_reason(ctx.cap, job, flavor), flavor)
                continue
            # a long job may take only the reservations' spare GPUs on the reserved nodes
            spare = spare_of([r.spare for r in binding]) if binding else None
            first_fit = self.policy.first_fit
            only = job.clusters or None
            placement = place(
                ctx.cap, flavor, want, least, gpus, job.topology, None, first_fit, only, spare
            )
            if placement is None:
                placement_failed[shape] = least
                if binding:
                    anywhere = place(
                        ctx.cap, flavor, want, least, gpus, job.topology, None, True, only
                    )
                    if anywhere is not None:
                        if self.explain:
                            delayed = delayed_by(ctx.cap, job, flavor, want, least, binding)
                            self.behind[(key, flavor)] = delayed
                        first = first_reason(first, explain.BEHIND_RESERVATION, flavor)
                        continue
                first = first_reason(first, capacity_reason(ctx.cap, job, flavor), flavor)
                continue
            self.commit_admit(job, flavor, placement, ctx.now, level)
            return True
        return first

    def _quota_reason(self, queue: str, flavor: str, units: int, cls: ServiceClass) -> str | None:
        """Why the queue's quota cannot take ``units`` more of ``flavor`` now; None if it can."""
        can_borrow = cls.can_borrow
        ask = (queue, flavor, units, None if can_borrow else cls.priority)
        by_flavor = self.memo.quota_reason
        known = by_flavor.get(flavor)
        if known is None:
            known = by_flavor[flavor] = {}  # with reuse off, for this call only
        elif ask in known:
            return known[ask]
        quota = self.ctx.quota
        reason = reaccount.quota_reason(self.ctx, queue, flavor, units, cls)
        if reason is not None and quota.never_fits(queue, flavor, units, can_borrow):
            reason = explain.QUOTA_EXCEEDED
        known[ask] = reason
        return reason

    def quota_blocks_shape(self, facts: JobFacts) -> bool:
        """Whether the quota blocks the job in every flavor; the same for every job of its rank
        shape until the state next changes, so the memo keeps it (the walk looks there first).
        Records what the walk records for such a job."""
        blocked, first = self._quota_block(facts)
        self.memo.quota_blocked[facts.rank_shape] = blocked
        if first is not None:
            self._note_blocked(facts.job, first)
        return blocked

    def _quota_block(self, facts: JobFacts) -> tuple[bool, Blocked | None]:
        """Whether the quota blocks the job in every flavor, and then its first flavor's reason
        (None for a job without flavors); records nothing but the quota reasons' memo."""
        job = facts.job
        units = (job.min_workers or job.workers) * job.gpus_per_worker
        cls = self.ctx.cls_of(job)
        first: Blocked | None = None
        for flavor in job.flavors:
            reason = self._quota_reason(job.queue, flavor, units, cls)
            if reason is None:
                return False, None
            first = first_reason(first, reason, flavor)
        return True, first

    def blocks_all(self, shapes: list[JobFacts]) -> JobFacts | None:
        """Once only admissions are left (the fair order's ``blocks_all``): the first of these
        jobs, one per rank shape still to come in a borrowing queue, that its quota lets in;
        None when it blocks them all. Admissions only take quota, so the queue then admits
        nothing more this cycle, its own usage stays as it is, and so does each shape's reason
        (the cohort pools only shrink, which keeps a pool reason one): this records at once
        what the walk would record for each of its jobs, and the walk drops the queue.

        A backlog's queue is mostly found blocked cycle after cycle: the answer depends only on
        the shapes and on what decides their quota reasons (``reaccount.QuotaAsks.stamp``),
        and the ranker keeps it by queue (``Ranker.queue_blocks``)."""
        queue = shapes[0].job.queue
        sids = [facts.rank_shape for facts in shapes]
        ctx = self.ctx
        kept = self.ranker.queue_blocks.get(queue)
        if kept is not None and kept[0] == sids and kept[2] == kept[1].stamp(ctx):
            live, noted = kept[3]
        else:
            live, noted, asks = self._blocks_all(shapes)
            self.ranker.queue_blocks[queue] = (sids, asks, asks.stamp(ctx), (live, noted))
        if live is not None:
            return shapes[live]
        for index, why in noted:
            self._note_blocked(shapes[index].job, why)
        return None

    def _blocks_all(
        self, shapes: list[JobFacts]
    ) -> tuple[int | None, list[tuple[int, Blocked]], reaccount.QuotaAsks]:
        """``blocks_all``'s answer: the index of the first shape its quota lets in (None: it
        blocks all), the reasons to record by index, and what was asked of the quota."""
        known = self.memo.quota_blocked
        noted: list[tuple[int, Blocked]] = []
        asks = reaccount.QuotaAsks(shapes[0].job.queue)
        for index, facts in enumerate(shapes):
            asks.add(self.ctx, facts.job, self.ctx.cls_of(facts.job))
            if known.get(facts.rank_shape) is False:
                return index, noted, asks
            blocked, first = self._quota_block(facts)
            if not blocked:
                return index, noted, asks
            if first is not None:
                noted.append((index, first))
        return None, noted, asks

    def _note_blocked(self, job: PendingJob, why: Blocked) -> None:
        """What a job left pending tells growth: a flavor's GPUs or a cohort pool are wanted."""
        reason, flavor = why
        if reason in (explain.CAPACITY, explain.TOPOLOGY, explain.BEHIND_RESERVATION):
            self.flavors_waited_for.update(job.flavors)
        elif reason == explain.COHORT_POOL:
            cohort = self.ctx.quota.root_of(job.queue)  # the tree's root: any level's pool
            if cohort is not None:
                self.pools_waited_for.add((cohort, flavor))

    def commit_admit(
        self, job: PendingJob, flavor: str, placement: Placement, start_at: float, level: int
    ) -> None:
        ctx = self.ctx
        self.memo.quota_taken(flavor)
        gpus = job.gpus_per_worker
        units = {node: count * gpus for node, count in placement.workers.items()}
        ctx.cap.take(flavor, units)
        total = sum(units.values())
        borrowing = reaccount.admitted_borrowing(ctx, job, flavor, total)
        ctx.quota.add(job.queue, flavor, total)
        if level:
            take(ctx.reservations.binding(flavor, level), units, job.queue)
        self._track(job, placement, flavor, start_at)
        self.admits.append(
            Admit(
                job=job.name,
                cluster=placement.cluster,
                flavor=flavor,
                workers=placement.count,
                placement=ctx.cap.by_name(units),
                start_at=start_at,
                borrowing=borrowing,
            )
        )

    # -- preemption ----------------------------------------------------------------------------
    def may_preempt(self) -> bool:
        return self.policy.preemption and self.failed_preemptions < MAX_FAILED_PREEMPTIONS

    def try_preempt(self, job: PendingJob) -> bool:
        """Called while fewer than MAX_FAILED_PREEMPTIONS searches have failed this cycle."""
        ctx = self.ctx
        memo = self.memo
        cls = ctx.cls_of(job)
        gpus = job.gpus_per_worker
        least = job.min_workers or job.workers
        for flavor in job.flavors:
            if ctx.quota.never_fits(job.queue, flavor, least * gpus, cls.can_borrow):
                continue  # no victims could make room in its quota
            shape = (job.queue, cls.priority, flavor, gpus, job.topology, job.clusters)
            failed_at = memo.preemption_failed.get(shape)
            if failed_at is not None and least >= failed_at:
                continue
            ask = (job.queue, cls.name, flavor, least * gpus)
            if ask in memo.no_candidates:
                continue
            found = candidates(ctx, job, flavor)
            if not found:
                memo.no_candidates[ask] = True
                continue
            plan = plan_preemption(ctx, job, flavor, found)
            if plan is None:
                memo.preemption_failed[shape] = least
                self.failed_preemptions += 1
                continue
            if not takeback.take_back(self, job, flavor, plan):  # rule 8: no same-cycle swap
                self.commit_preemption(job, flavor, plan)
            return True
        return False

    def commit_preemption(self, job: PendingJob, flavor: str, plan: PreemptionPlan) -> None:
        ctx = self.ctx
        self.memo.state_changed()
        now = ctx.now
        free = ctx.cap.free_of(flavor)
        before = dict(free)
        release = now
        for victim in plan.victims:
            running = victim.job
            ctx.quota.add(running.queue, flavor, -sum(victim.removed.values()) * running.g)
            release_at = now + running.cls.grace_period
            release = max(release, release_at)
            ctx.mutated.append((running, dict(running.workers)))
            if victim.stops:
                ctx.stops.append(Stop(running.name, victim.reason, job.name, release_at))
                running.workers = {}
                running.preemptible_now = False
            else:
                for node, count in victim.removed.items():
                    running.workers[node] -= count
                    if running.workers[node] == 0:
                        del running.workers[node]
                self.scales.append(
                    Scale(
                        job=running.name,
                        workers=running.count,
                        placement=ctx.cap.by_name(running.units()),
                        by=job.name,
                        reason=victim.reason,
                        release_at=release_at,
                    )
                )
        free.clear()
        free.update(plan.free)
        ctx.cap.invalidate(flavor)
        gpus = job.gpus_per_worker
        units = {node: count * gpus for node, count in plan.placement.workers.items()}
        ctx.cap.take(flavor, units)
        freed = sum(sum(victim.removed.values()) * victim.job.g for victim in plan.victims)
        if release > now:
            # the victims' GPUs are held for the preemptor until it starts, and the victims
            # keep counting against their queues' quota until their grace period ends
            for node in list(free):
                if free[node] > before.get(node, 0):
                    free[node] = before.get(node, 0)
            ctx.cap.invalidate(flavor)
            for victim in plan.victims:
                held = sum(victim.removed.values()) * victim.job.g
                ctx.quota.add(victim.job.queue, flavor, held)
        elif freed > sum(units.values()):
            self.freed_at_once = True  # victims without grace left GPUs free beyond its take
        for reservation, spare, quota_room in plan.reserved:
            reservation.spare = spare
            reservation.quota_room = quota_room
        self.memo.capacity_freed(flavor)
        total = sum(units.values())
        borrowing = reaccount.admitted_borrowing(ctx, job, flavor, total)
        ctx.quota.add(job.queue, flavor, total)
        if release > now and not ctx.cls_of(job).can_borrow:
            ctx.nominal_only.add(job.queue)
        self._track(job, plan.placement, flavor, release)
        self.admits.append(
            Admit(
                job=job.name,
                cluster=plan.placement.cluster,
                flavor=flavor,
                workers=plan.placement.count,
                placement=ctx.cap.by_name(units),
                start_at=release,
                borrowing=borrowing,
            )
        )

    def _track(self, job: PendingJob, placement: Placement, flavor: str, start: float) -> None:
        """A job admitted this cycle: its estimated end feeds backfill; never a victim now."""
        ctx = self.ctx
        cls = ctx.cls_of(job)
        ctx.running.append(
            RunningJob(
                name=job.name,
                queue=job.queue,
                cls=cls,
                cluster=placement.cluster,
                flavor=flavor,
                g=job.gpus_per_worker,
                workers=dict(placement.workers),
                started_at=None,
                est_end=start + ctx.runtime_of(job.estimated_runtime, cls),
                min_workers=job.min_workers,
                max_workers=job.workers,
                topology=job.topology,
                preemptible_now=False,
            )
        )

    # -- backfill ------------------------------------------------------------------------------
    def reserve(self, job: PendingJob) -> None:
        ctx = self.ctx
        flavors = [flavor for flavor in job.flavors if ctx.cap.total.get(flavor)]
        if not flavors:
            return
        self.memo.reservations_changed()
        reservation = find_reservation(ctx, job, flavors)
        if reservation is not None:
            ctx.reservations.add(reservation)

    def admit_again(
        self,
        passed: list[JobFacts],
        left: set[str],
        fallback: Mapping[str, float],
        default: float,
    ) -> None:
        """One more admission try for the jobs ``passed`` before a preemption freed GPUs that
        nobody holds (victims without a grace period, beyond what the preemptor takes)."""
        done = {admit.job for admit in self.admits}
        reservations = self.ctx.reservations
        for facts in passed:
            job = facts.job
            if job.name in done:
                continue
            estimate = facts.estimate
            if estimate is None:
                estimate = fallback.get(job.service_class, default)
            # it may use its own reservation
            mine = reservations.remove(job.name)
            if mine is not None:
                self.memo.reservations_changed()
            if self.try_admit(facts, reservations.level(self.ctx.now + estimate)):
                left.discard(job.name)
            elif mine is not None:
                reservations.add(mine)
                self.memo.reservations_changed()

    # -- the walk ------------------------------------------------------------------------------
    def _only_admissions_left(self) -> bool:
        """The reservation is made and preemption is spent (or the policy has neither): the rest
        of the walk can only admit, and admissions only take quota. A shape its quota blocks in
        every flavor then stays blocked until the next admission, so its jobs are passed over
        whole. Not when explaining: every job's own reason is wanted then."""
        policy = self.policy
        return (
            self.reuse
            and not self.explain
            and not policy.head_of_line
            and not self.reserves_left
            and (self.failed_preemptions >= MAX_FAILED_PREEMPTIONS or not policy.preemption)
        )

    def run(self) -> CycleResult:
        ctx = self.ctx
        policy = self.policy
        # without explanations, a job its quota can never hold changes nothing (no admission,
        # preemption or reservation) unless it blocks the line: the walk leaves it out
        drop_hopeless = not self.explain and not policy.head_of_line
        ranking = self.ranker.rank(ctx, ctx.snapshot.pending, drop_hopeless=drop_hopeless)
        fair = FairOrder(ctx, ranking, self.ranker.shares)
        ranked: list[JobFacts] = []  # the jobs in the order walked
        left: set[str] = set()
        now = ctx.now
        # a job's estimated end when it has no estimate of its own, by service class
        fallback = {name: ctx.runtime_of(None, cls) for name, cls in ctx.classes.items()}
        default = ctx.runtime_of(None, DEFAULT_CLASS)
        # without explanations, a job whose shape already failed on the current state fails
        # the same way, preemption included (the memo), and so changes nothing: skip it
        skip_known = self.reuse and not self.explain
        admission_failed = self.memo.admission
        quota_blocked = self.memo.quota_blocked.get  # read for every job: bound once
        aged = AgedReservation(self, ranking)
        reservations = ctx.reservations
        only_admissions = self._only_admissions_left()
        fair.blocks_all = self.blocks_all if only_admissions else None
        recheck = 0
        for facts in chain(ranking.first, aged.gate(), fair, ranking.last):
            ranked.append(facts)
            job = facts.job
            if self.head_blocker is not None:
                left.add(job.name)
                continue
            if only_admissions:
                blocked = quota_blocked(facts.rank_shape)
                if blocked or (blocked is None and self.quota_blocks_shape(facts)):
                    continue
            if job is aged.job:  # it holds the reservation (aging.py), so may take it
                outcome = aged.walk(facts)
            else:
                level = 0
                if reservations:
                    estimate = facts.estimate
                    if estimate is None:
                        estimate = fallback.get(job.service_class, default)
                    level = reservations.level(now + estimate)
                if skip_known and facts.walk_key | level in admission_failed:
                    continue
                if self.try_admit(facts, level):
                    continue
                outcome = PREEMPTED if self.may_preempt() and self.try_preempt(job) else BLOCKED
            if outcome == PREEMPTED:
                fair.refresh()  # the victims' queues may borrow less now
                if self.freed_at_once:  # the jobs ranked before it saw fewer free GPUs
                    self.freed_at_once = False
                    recheck = len(ranked) - 1
            if outcome != BLOCKED:
                if job.name in aged.done:  # an aged job started: the reservation passed on
                    only_admissions = self._only_admissions_left()
                    fair.blocks_all = self.blocks_all if only_admissions else None
                continue
            left.add(job.name)
            why = self.blocked_reason.get(job.name, (explain.CAPACITY, ""))
            self._note_blocked(job, why)
            if self.reserves_left and why[0] not in explain.NEVER and job is not aged.job:
                self.reserves_left -= 1  # only the best-ranked blocked jobs
                self.reserve(job)
            if policy.head_of_line:
                self.head_blocker = job.name
            only_admissions = self._only_admissions_left()
            if only_admissions:  # it stays so: the fair order may drop quota-blocked queues
                fair.blocks_all = self.blocks_all
        if recheck:
            self.admit_again(ranked[:recheck], left, fallback, default)
        if policy.elastic_growth:
            self.scales.extend(grow(ctx, self.flavors_waited_for, self.pools_waited_for))
        if self.explain:
            borrowing = None if policy.fifo_order else self.ranker.borrowing_shapes
            self.infos = explain_pending(
                ctx, ranked, left, self.blocked_reason, self.head_blocker, borrowing, self.delays
            )
        reserves = tuple(
            Reserve(
                job=reservation.job,
                start=reservation.start,
                cluster=reservation.cluster,
                flavor=reservation.flavor,
                nodes=ctx.cap.by_name(reservation.units),
            )
            for reservation in ctx.reservations
        )
        return CycleResult(
            admits=tuple(self.admits),
            stops=tuple(ctx.stops),
            scales=tuple(self.scales),
            reservations=reserves,
            pending=self.infos,
        )


def run_cycle(
    snapshot: Snapshot,
    policy: Policy | str = "default",
    *,
    explain_pending: bool = True,
    state: EngineState | None = None,
) -> CycleResult:
    """Decide one cycle. ``explain_pending=False`` skips the PendingInfo of every pending job.

    ``state``: what the caller keeps from cycle to cycle (``EngineState``); it saves work when
    this snapshot shares objects with the last one and changes no decision. Without one, the
    cycle starts from a fresh state of its own."""
    pol = get_policy(policy) if isinstance(policy, str) else policy
    if state is None:
        state = EngineState()
    with cyclic_gc_paused():
        return _Cycle(snapshot, pol, explain_pending, state).run()
