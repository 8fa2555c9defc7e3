"""One scheduling cycle: snapshot in, decisions out (docs/SCHEDULING.md section 4).

``run_cycle`` ranks the pending jobs, admits what fits quota and placement, preempts under rules
1-7, reserves for the best-ranked blocked job (EASY backfill), grows elastic jobs into idle
capacity and explains every job left pending. Deterministic: same snapshot, same result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from gpusched.engine import explain
from gpusched.engine.backfill import (
    estimated_free_time,
    find_reservation,
    limited_free,
    release_schedule,
)
from gpusched.engine.context import DEFAULT_CLASS, RunningJob, build_context
from gpusched.engine.explain import PendingInfo
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
from gpusched.engine.placement import Placement, Workers, place, place_in_cluster
from gpusched.engine.policies import Policy, get_policy
from gpusched.engine.preemption import PreemptionPlan, candidates, plan_preemption
from gpusched.engine.ranking import JobFacts
from gpusched.engine.state import EngineState

MAX_FAILED_PREEMPTIONS = 8  # bound on fruitless preemption searches per cycle


def _first(kept: tuple[str, str] | None, reason: str, flavor: str) -> tuple[str, str]:
    """The reason a job waits: its first flavor's, unless it can never run there and only waits
    for another flavor."""
    if kept is None or (kept[0] in explain.NEVER and reason not in explain.NEVER):
        return (reason, flavor)
    return kept


class _Cycle:
    def __init__(
        self, snapshot: Snapshot, policy: Policy, explain_pending: bool, state: EngineState
    ) -> None:
        self.ctx = build_context(snapshot, policy, state)
        self.ranker = state.ranker
        self.memoize = state.memoize  # reuse admission failures by job shape (see EngineState)
        self.policy = policy
        self.explain = explain_pending
        self.admits: list[Admit] = []
        self.scales: list[Scale] = []
        self.infos: dict[str, PendingInfo] = {}
        self.blocked_reason: dict[str, tuple[str, str]] = {}  # job -> (reason, flavor)
        # shapes that failed placement: (flavor, g, topology, limited) -> smallest failing size
        self.failed_shapes: dict[tuple[str, int, object, bool], int] = {}
        self.failed_preemptions = 0
        # (queue, priority, flavor, g, topology) -> smallest gang size that found no victims
        self.preempt_failed: dict[tuple[object, ...], int] = {}
        self.reserve_tried = False
        self.freed_at_once = False  # the last preemption freed GPUs nobody holds, at once
        self.head_blocker: str | None = None
        self.capacity_blocked: set[str] = set()  # flavors some pending job waits for GPUs of
        # (cohort, flavor) whose pool some pending job waits for quota of
        self.pool_blocked: set[tuple[str, str]] = set()
        # admission failures by job shape, valid until the cycle's state next changes
        self.admit_failed: dict[int, tuple[str, str] | None] = {}
        self.quota_memo: dict[tuple[str, str, int, bool], str | None] = {}  # same validity
        self.shape_blocked: dict[int, bool] = {}  # rank shape -> quota_blocks_shape; same
        # (queue, class, flavor, units) with no preemption candidates: same validity
        self.no_candidates: set[tuple[str, str, str, int]] = set()

    def _state_changes(self) -> None:
        """Admission, preemption or a reservation is about to change what later jobs see."""
        self.admit_failed.clear()
        self.quota_memo.clear()
        self.shape_blocked.clear()
        self.no_candidates.clear()

    # -- admission ---------------------------------------------------------------------------
    def try_admit(self, facts: JobFacts, long_job: bool) -> bool:
        """Admit the job if it fits; ``long_job``: it would still run at the reservation's start."""
        job = facts.job
        # a job of the same shape already failed on this very state: it fails the same way
        memo_key = facts.walk[long_job]
        if self.memoize and memo_key in self.admit_failed:
            known = self.admit_failed[memo_key]
            if known is not None:
                self.blocked_reason[job.name] = known
            return False
        cls = self.ctx.cls(job.service_class)
        least = job.min_workers or job.workers
        first_reason = self._try_admit(job, cls, job.gpus_per_worker, least, long_job)
        if first_reason is True:
            return True
        self.admit_failed[memo_key] = first_reason
        if first_reason is not None:
            self.blocked_reason[job.name] = first_reason
        return False

    def _try_admit(
        self, job: PendingJob, cls: ServiceClass, g: int, least: int, long_job: bool
    ) -> tuple[str, str] | Literal[True] | None:
        """Admit ``job`` if it fits (True); otherwise the first flavor's blocking reason."""
        ctx = self.ctx
        res = ctx.reservation
        first_reason: tuple[str, str] | None = None
        for f in job.flavors:
            reason = self._quota_reason(job.queue, f, least * g, cls.can_borrow)
            if reason is not None:
                first_reason = _first(first_reason, reason, f)
                continue
            room = ctx.quota.headroom(job.queue, f)
            if job.queue in ctx.nominal_only:
                left = ctx.quota.nominal(job.queue, f) - ctx.quota.used(job.queue, f)
                if least * g > left:
                    first_reason = _first(first_reason, explain.QUOTA_HELD, f)
                    continue
                room = min(room, left)
            if not cls.can_borrow:
                room = min(room, ctx.quota.nominal(job.queue, f) - ctx.quota.used(job.queue, f))
            if long_job and res is not None and res.flavor == f and res.queue == job.queue:
                # a long job of the reserved job's queue must leave it its quota at the start
                if least * g > res.quota_room:
                    first_reason = _first(first_reason, explain.BEHIND_RESERVATION, f)
                    continue
                room = min(room, res.quota_room)
            want = max(least, min(job.workers, room // g))
            shape = (f, g, job.topology, long_job)
            failed_at = self.failed_shapes.get(shape)
            if failed_at is not None and least >= failed_at:
                first_reason = _first(first_reason, self._capacity_reason(job, f), f)
                continue
            free = ctx.cap.free_of(f)
            if long_job and res is not None and res.flavor == f:
                free = limited_free(free, res)
            p = place(ctx.cap, f, want, least, g, job.topology, free, self.policy.first_fit)
            if p is None:
                self.failed_shapes[shape] = min(least, failed_at or least)
                if long_job and res is not None and res.flavor == f:
                    full = place(ctx.cap, f, want, least, g, job.topology, None, True)
                    if full is not None:
                        first_reason = _first(first_reason, explain.BEHIND_RESERVATION, f)
                        continue
                first_reason = _first(first_reason, self._capacity_reason(job, f), f)
                continue
            self.commit_admit(job, f, p, ctx.now, long_job)
            return True
        return first_reason

    def _quota_reason(self, queue: str, flavor: str, units: int, can_borrow: bool) -> str | None:
        """Why the queue's quota cannot take ``units`` more of ``flavor`` now; None if it can."""
        qkey = (queue, flavor, units, can_borrow)
        if self.memoize and qkey in self.quota_memo:
            return self.quota_memo[qkey]
        quota = self.ctx.quota
        reason = quota.blocked_reason(queue, flavor, units, can_borrow)
        if reason is not None and quota.never_fits(queue, flavor, units, can_borrow):
            reason = explain.QUOTA_EXCEEDED
        self.quota_memo[qkey] = reason
        return reason

    def quota_blocks_shape(self, facts: JobFacts) -> bool:
        """Whether the quota blocks the job in every flavor; the same for every job of its rank
        shape until the state next changes, so it is kept in ``shape_blocked`` (the walk looks
        there first). Records what the walk records for such a job."""
        sid = facts.rank_shape
        job = facts.job
        units = (job.min_workers or job.workers) * job.gpus_per_worker
        can_borrow = self.ctx.cls(job.service_class).can_borrow
        first: tuple[str, str] | None = None
        for f in job.flavors:
            reason = self._quota_reason(job.queue, f, units, can_borrow)
            if reason is None:
                self.shape_blocked[sid] = False
                return False
            first = _first(first, reason, f)
        self.shape_blocked[sid] = True
        if first is not None:
            self._note_blocked(job, first)
        return True

    def _note_blocked(self, job: PendingJob, why: tuple[str, str]) -> None:
        """What a job left pending tells growth: a flavor's GPUs or a cohort pool are wanted."""
        reason, flavor = why
        if reason in (explain.CAPACITY, explain.TOPOLOGY, explain.BEHIND_RESERVATION):
            self.capacity_blocked.update(job.flavors)
        elif reason == explain.COHORT_POOL:
            cohort = self.ctx.quota.cohort.get(job.queue)
            if cohort is not None:
                self.pool_blocked.add((cohort, flavor))

    def _capacity_reason(self, job: PendingJob, flavor: str) -> str:
        cap = self.ctx.cap
        totals = cap.total.get(flavor)
        if not totals:
            return explain.NO_FLAVOR
        need = (job.min_workers or job.workers) * job.gpus_per_worker
        if need > max(totals.values()):
            return explain.TOO_LARGE
        if job.topology is not None and job.topology.required:
            return explain.TOPOLOGY
        return explain.CAPACITY

    def commit_admit(
        self, job: PendingJob, flavor: str, p: Placement, start_at: float, long_job: bool
    ) -> None:
        ctx = self.ctx
        self._state_changes()
        units = {i: w * job.gpus_per_worker for i, w in p.workers.items()}
        ctx.cap.take(flavor, units)
        total = sum(units.values())
        borrowing = not ctx.quota.within_nominal(job.queue, flavor, total)
        ctx.quota.add(job.queue, flavor, total)
        res = ctx.reservation
        if long_job and res is not None and res.flavor == flavor:
            for i, u in units.items():
                if i in res.spare:
                    res.spare[i] -= u
            if res.queue == job.queue:
                res.quota_room -= total
        self._track(job, p, flavor, start_at)
        names = ctx.cap.names
        self.admits.append(
            Admit(
                job=job.name,
                cluster=p.cluster,
                flavor=flavor,
                workers=p.count,
                placement={names[i]: u for i, u in sorted(units.items())},
                start_at=start_at,
                borrowing=borrowing,
            )
        )

    # -- preemption ----------------------------------------------------------------------------
    def try_preempt(self, job: PendingJob) -> bool:
        """Called while fewer than MAX_FAILED_PREEMPTIONS searches have failed this cycle."""
        ctx = self.ctx
        cls = ctx.cls(job.service_class)
        least = job.min_workers or job.workers
        for f in job.flavors:
            if ctx.quota.never_fits(job.queue, f, least * job.gpus_per_worker, cls.can_borrow):
                continue  # no victims could make room in its quota
            key = (job.queue, cls.priority, f, job.gpus_per_worker, job.topology)
            failed_at = self.preempt_failed.get(key)
            if failed_at is not None and least >= failed_at:
                continue
            none_key = (job.queue, job.service_class, f, least * job.gpus_per_worker)
            if self.memoize and none_key in self.no_candidates:
                continue
            cands = candidates(ctx, job, f)
            if not cands:
                self.no_candidates.add(none_key)
                continue
            plan = plan_preemption(ctx, job, f, cands)
            if plan is None:
                self.preempt_failed[key] = least
                self.failed_preemptions += 1
                continue
            self.commit_preemption(job, f, plan)
            return True
        return False

    def commit_preemption(self, job: PendingJob, flavor: str, plan: PreemptionPlan) -> None:
        ctx = self.ctx
        self._state_changes()
        now = ctx.now
        free = ctx.cap.free_of(flavor)
        before = dict(free)
        release = now
        for v in plan.victims:
            r = v.job
            removed_units = sum(v.removed.values()) * r.g
            ctx.quota.add(r.queue, flavor, -removed_units)
            release_at = now + r.cls.grace_period
            release = max(release, release_at)
            ctx.mutated.append((r, dict(r.workers)))
            if v.stops:
                ctx.stops.append(Stop(r.name, v.reason, job.name, release_at))
                r.workers = {}
                r.preemptible_now = False
            else:
                for i, w in v.removed.items():
                    r.workers[i] -= w
                    if r.workers[i] == 0:
                        del r.workers[i]
                self.scales.append(
                    Scale(
                        job=r.name,
                        workers=r.count,
                        placement=self._named_units(r.workers, r.g),
                        by=job.name,
                        reason=v.reason,
                        release_at=release_at,
                    )
                )
        free.clear()
        free.update(plan.free)
        ctx.cap.invalidate(flavor)
        units = {i: w * job.gpus_per_worker for i, w in plan.placement.workers.items()}
        ctx.cap.take(flavor, units)
        if release > now:
            # the victims' GPUs are held for the preemptor until it starts, and the victims
            # keep counting against their queues' quota until their grace period ends
            for i in list(free):
                if free[i] > before.get(i, 0):
                    free[i] = before.get(i, 0)
            ctx.cap.invalidate(flavor)
            for v in plan.victims:
                ctx.quota.add(v.job.queue, flavor, sum(v.removed.values()) * v.job.g)
        elif sum(sum(v.removed.values()) * v.job.g for v in plan.victims) > sum(units.values()):
            self.freed_at_once = True  # victims without grace left GPUs free beyond its take
        res = ctx.reservation
        if res is not None and plan.reserved_spare is not None:
            res.spare = plan.reserved_spare
            res.quota_room = plan.quota_room
        # capacity came free: shapes that failed may fit now
        self.failed_shapes = {k: v for k, v in self.failed_shapes.items() if k[0] != flavor}
        total = sum(units.values())
        borrowing = not ctx.quota.within_nominal(job.queue, flavor, total)
        ctx.quota.add(job.queue, flavor, total)
        if release > now and not ctx.cls(job.service_class).can_borrow:
            ctx.nominal_only.add(job.queue)
        self._track(job, plan.placement, flavor, release)
        names = ctx.cap.names
        self.admits.append(
            Admit(
                job=job.name,
                cluster=plan.placement.cluster,
                flavor=flavor,
                workers=plan.placement.count,
                placement={names[i]: u for i, u in sorted(units.items())},
                start_at=release,
                borrowing=borrowing,
            )
        )

    def _track(self, job: PendingJob, p: Placement, flavor: str, start: float) -> None:
        """A job admitted this cycle: its estimated end feeds backfill; never a victim now."""
        ctx = self.ctx
        cls = ctx.cls(job.service_class)
        ctx.running.append(
            RunningJob(
                name=job.name,
                queue=job.queue,
                cls=cls,
                cluster=p.cluster,
                flavor=flavor,
                g=job.gpus_per_worker,
                workers=dict(p.workers),
                started_at=None,
                est_end=start + ctx.runtime_of(job.estimated_runtime, cls),
                min_workers=job.min_workers,
                max_workers=job.workers,
                topology=job.topology,
                preemptible_now=False,
            )
        )

    def _named_units(self, workers: Workers, g: int) -> dict[str, int]:
        names = self.ctx.cap.names
        return {names[i]: w * g for i, w in sorted(workers.items())}

    # -- backfill and growth -------------------------------------------------------------------
    def reserve(self, job: PendingJob) -> None:
        ctx = self.ctx
        flavors = [f for f in job.flavors if ctx.cap.total.get(f)]
        if not flavors:
            return
        self._state_changes()
        ctx.reservation = find_reservation(ctx, job, flavors)

    def grow(self) -> None:
        ctx = self.ctx
        res = ctx.reservation
        elastic = [
            r
            for r in ctx.running
            if r.min_workers is not None
            and r.preemptible_now
            and r.workers
            and r.count < r.max_workers
            and r.flavor not in self.capacity_blocked
        ]
        elastic.sort(key=lambda r: (-r.cls.priority, r.started_at or 0.0, r.name))
        for r in elastic:
            room = ctx.quota.headroom(r.queue, r.flavor)
            if not r.cls.can_borrow or r.queue in ctx.nominal_only:
                room = min(
                    room, ctx.quota.nominal(r.queue, r.flavor) - ctx.quota.used(r.queue, r.flavor)
                )
            cohort = ctx.quota.cohort.get(r.queue)
            if cohort is not None and (cohort, r.flavor) in self.pool_blocked:
                # a pending job waits for the cohort pool's quota: growing must not take it,
                # or the grown job's share invites a fair-share preemption that stops it whole,
                # and it comes back smaller to preempt its preemptor in turn (a livelock)
                lim = ctx.quota.limits(r.queue, r.flavor)
                room = min(room, lim.reserved - ctx.quota.used(r.queue, r.flavor))
            extra = min(r.max_workers - r.count, room // r.g)
            if extra <= 0:
                continue
            free = ctx.cap.free_of(r.flavor)
            if res is not None and res.flavor == r.flavor:
                free = limited_free(free, res)
            added = self._grow_on(r, extra, free)
            if not added:
                continue
            units = {i: w * r.g for i, w in added.items()}
            ctx.mutated.append((r, dict(r.workers)))
            ctx.cap.take(r.flavor, units)
            ctx.quota.add(r.queue, r.flavor, sum(units.values()))
            for i, w in added.items():
                r.workers[i] = r.workers.get(i, 0) + w
            self.scales.append(
                Scale(r.name, r.count, self._named_units(r.workers, r.g), reason="grow")
            )

    def _grow_on(self, r: RunningJob, extra: int, free: Mapping[int, int]) -> Workers:
        added: Workers = {}
        # first on nodes it already uses, then anywhere in its cluster (and domain)
        for i in sorted(r.workers):
            take = min(extra, free.get(i, 0) // r.g)
            if take > 0:
                added[i] = take
                extra -= take
        if extra > 0:
            rest = {i: f - added.get(i, 0) * r.g for i, f in free.items()}
            topo = r.topology
            if topo is not None and topo.required and topo.level in self.ctx.cap.domain:
                domain = self.ctx.cap.domain[topo.level]
                mine = {domain[i] for i in r.workers}
                rest = {i: f for i, f in rest.items() if domain[i] in mine}
            more = place_in_cluster(self.ctx.cap, r.cluster, r.flavor, extra, 1, r.g, None, rest)
            for i, w in (more or {}).items():
                added[i] = added.get(i, 0) + w
        return added

    # -- explanations --------------------------------------------------------------------------
    def explain_pending(self, ranked: list[PendingJob], pending: set[str]) -> None:
        ctx = self.ctx
        position: dict[str, int] = {}
        schedules: dict[str, list[tuple[float, int, int, str]]] = {}
        free_of: dict[str, tuple[int, int]] = {}
        res = ctx.reservation
        for job in ranked:
            if job.name not in pending:
                continue
            pos = position.get(job.queue, 0) + 1
            position[job.queue] = pos
            flavor = job.flavors[0] if job.flavors else ""
            reason, flavor = self.blocked_reason.get(job.name, (explain.CAPACITY, flavor))
            blocker = ""
            if (
                self.head_blocker is not None
                and job.name != self.head_blocker
                and (reason not in explain.NEVER and job.name not in self.blocked_reason)
            ):
                reason, blocker = explain.HEAD_OF_LINE, self.head_blocker
            estimate: float | None = None
            reserved = res is not None and res.job == job.name
            if res is not None and reserved:
                estimate = res.start
            elif reason == explain.BEHIND_RESERVATION and res is not None:
                blocker = res.job
            need = (job.min_workers or job.workers) * job.gpus_per_worker
            if flavor not in free_of:
                free_of[flavor] = (ctx.cap.free_total(flavor), ctx.cap.largest_block(flavor))
            free_total, largest = free_of[flavor]
            if reason in (explain.CAPACITY, explain.TOPOLOGY) and estimate is None:
                if flavor not in schedules:
                    schedules[flavor] = release_schedule(ctx, flavor)
                estimate = estimated_free_time(schedules[flavor], free_total, need)
            q = ctx.quota
            lim = q.limits(job.queue, flavor)
            pool_size, pool_used = q.pool_numbers(job.queue, flavor)
            self.infos[job.name] = PendingInfo(
                job=job.name,
                reason=reason,
                queue=job.queue,
                position=pos,
                flavor=flavor,
                need=need,
                used=q.used(job.queue, flavor),
                nominal=lim.nominal,
                limit=lim.limit if lim.limit < (1 << 59) else None,
                cohort=q.cohort.get(job.queue),
                pool_size=pool_size,
                pool_used=pool_used,
                free=free_total,
                largest_block=largest,
                service_class=job.service_class,
                topology_level=job.topology.level if job.topology else "",
                blocker=blocker,
                estimated_start=estimate,
                reserved=reserved,
                preemption=self.policy.preemption,
                can_borrow=ctx.cls(job.service_class).can_borrow,
            )

    def admit_again(
        self,
        passed: list[JobFacts],
        left: set[str],
        fallback: Mapping[str, float],
        default: float,
    ) -> None:
        """One more admission try for the jobs ``passed`` before a preemption freed GPUs that
        nobody holds (victims without a grace period, beyond what the preemptor takes)."""
        done = {a.job for a in self.admits}
        res = self.ctx.reservation
        for facts in passed:
            job = facts.job
            if job.name in done:
                continue
            estimate = facts.estimate
            if estimate is None:
                estimate = fallback.get(job.service_class, default)
            mine = res is not None and res.job == job.name  # it may use its own reservation
            long_job = res is not None and not mine and self.ctx.now + estimate > res.start
            if self.try_admit(facts, long_job):
                left.discard(job.name)
                if mine:
                    self.ctx.reservation = res = None

    # -- the walk ------------------------------------------------------------------------------
    def _only_admissions_left(self) -> bool:
        """The reservation is made and preemption is spent (or the policy has neither): the rest
        of the walk can only admit, and admissions only take quota. A shape its quota blocks in
        every flavor then stays blocked until the next admission, so its jobs are passed over
        whole. Not when explaining: every job's own reason is wanted then."""
        policy = self.policy
        return (
            self.memoize
            and not self.explain
            and not policy.head_of_line
            and (self.reserve_tried or not policy.backfill)
            and (self.failed_preemptions >= MAX_FAILED_PREEMPTIONS or not policy.preemption)
        )

    def run(self) -> CycleResult:
        ctx = self.ctx
        # without explanations, a job its quota can never hold changes nothing (no admission,
        # preemption or reservation) unless it blocks the line: the walk leaves it out
        drop_hopeless = not self.explain and not self.policy.head_of_line
        ranked = self.ranker.rank(ctx, ctx.snapshot.pending, drop_hopeless=drop_hopeless)
        left: set[str] = set()
        preemption = self.policy.preemption
        now = ctx.now
        # a job's estimated end when it has no estimate of its own, by service class
        fallback = {name: ctx.runtime_of(None, cls) for name, cls in ctx.classes.items()}
        default = ctx.runtime_of(None, DEFAULT_CLASS)
        # without explanations, a job whose shape already failed on the current state fails
        # the same way, preemption included (the memos), and so changes nothing: skip it
        skip_known = self.memoize and not self.explain
        admit_failed = self.admit_failed
        only_admissions = self._only_admissions_left()
        shape_blocked = self.shape_blocked
        recheck = 0
        for facts in ranked:
            job = facts.job
            if self.head_blocker is not None:
                left.add(job.name)
                continue
            if only_admissions:
                blocked = shape_blocked.get(facts.rank_shape)
                if blocked or (blocked is None and self.quota_blocks_shape(facts)):
                    continue
            res = ctx.reservation
            long_job = False
            if res is not None:
                estimate = facts.estimate
                if estimate is None:
                    estimate = fallback.get(job.service_class, default)
                long_job = now + estimate > res.start
            if skip_known and facts.walk[long_job] in admit_failed:
                continue
            if self.try_admit(facts, long_job):
                continue
            if (
                preemption
                and self.failed_preemptions < MAX_FAILED_PREEMPTIONS
                and self.try_preempt(job)
            ):
                if self.freed_at_once:  # the jobs ranked before it saw fewer free GPUs
                    self.freed_at_once = False
                    recheck = ranked.index(facts)
                continue
            left.add(job.name)
            why = self.blocked_reason.get(job.name, (explain.CAPACITY, ""))
            self._note_blocked(job, why)
            reason = why[0]
            if self.policy.backfill and not self.reserve_tried and reason not in explain.NEVER:
                self.reserve_tried = True  # EASY: only the best-ranked blocked job
                self.reserve(job)
            if self.policy.head_of_line:
                self.head_blocker = job.name
            only_admissions = self._only_admissions_left()
        if recheck:
            self.admit_again(ranked[:recheck], left, fallback, default)
        if self.policy.elastic_growth:
            self.grow()
        if self.explain:
            self.explain_pending([f.job for f in ranked], left)
        res = ctx.reservation
        reserve = None
        if res is not None:
            names = ctx.cap.names
            reserve = Reserve(
                job=res.job,
                start=res.start,
                cluster=res.cluster,
                flavor=res.flavor,
                nodes={names[i]: u for i, u in sorted(res.units.items())},
            )
        return CycleResult(
            admits=tuple(self.admits),
            stops=tuple(ctx.stops),
            scales=tuple(self.scales),
            reservation=reserve,
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
    return _Cycle(snapshot, pol, explain_pending, state).run()
