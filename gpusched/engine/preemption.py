"""Preemption (docs/SCHEDULING.md section 4, rules 1-7): who may stop whom, and the minimal set.

``plan_preemption`` works on trial copies: it removes candidates from the cycle's quota state
(and undoes every change before returning) and adds their GPUs to a private free-capacity map.
It returns a plan only when the preemptor then fits both quota and placement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusched.engine.context import CycleContext
from gpusched.engine.model import PendingJob
from gpusched.engine.placement import Placement, Workers, place
from gpusched.engine.reservations import Reservation, spare_of
from gpusched.engine.running import RunningJob
from gpusched.engine.stop_bound import STOP_BOUND

MAX_CANDIDATES = 256


@dataclass(slots=True)
class Victim:
    job: RunningJob
    removed: Workers  # workers taken away (all of them when stopped)
    reason: str
    order: int  # position in the candidate order

    @property
    def stops(self) -> bool:
        return sum(self.removed.values()) >= self.job.count


@dataclass(slots=True)
class PreemptionPlan:
    placement: Placement
    victims: list[Victim]
    free: dict[int, int]  # the flavor's free units once victims are out and the preemptor is in
    # a preemptor that runs past reservations' starts: each, with what it leaves spare after
    # (GPUs per reserved node, and quota)
    reserved: list[tuple[Reservation, dict[int, int], int]] = field(default_factory=list)


def _shrink_workers(job: RunningJob, count: int) -> Workers:
    """Workers to remove when shrinking by ``count``: emptiest nodes of the job first."""
    out: Workers = {}
    for i, w in sorted(job.workers.items(), key=lambda kv: (kv[1], -kv[0])):
        if count <= 0:
            break
        take = min(w, count)
        out[i] = take
        count -= take
    return out


class _Search:
    def __init__(self, ctx: CycleContext, job: PendingJob, flavor: str) -> None:
        self.ctx = ctx
        self.job = job
        self.flavor = flavor
        self.cls = ctx.cls_of(job)
        self.least = job.min_workers or job.workers
        self.need = self.least * job.gpus_per_worker
        self.base_free = ctx.cap.free_of(flavor)
        self.free = dict(self.base_free)
        self.free_total = sum(self.free.values())
        self.victims: list[Victim] = []
        self.used_before = ctx.quota.used(job.queue, flavor)
        # a preemptor that would still run when reservations start must leave them their GPUs
        # and quota then; victims that would still run then give theirs back to each (``late``)
        reservations = ctx.reservations
        level = reservations.level(ctx.est_end_of(job)) if reservations else 0
        self.binding = reservations.binding(flavor, level) if level else []
        self.late: list[dict[int, int]] = [{} for _ in self.binding]
        self.late_quota = [0 for _ in self.binding]
        # rule 3's shares in a flat cohort (``_share``), by (queue, its usage of the flavor, extra)
        self.flat = not ctx.quota.tree.hierarchical
        self.shares: dict[tuple[str, int, int | None], float] = {}
        # the minimal-set pass's worker slots per cluster (``count_slots``), kept by ``apply``
        self.slots: dict[str, int] | None = None
        self.cluster_of: dict[int, str] = {}

    # -- applying and undoing a victim on the trial state --------------------------------------
    def apply(self, v: Victim, sign: int = 1) -> None:
        """Take ``v``'s removed workers out of the trial state (``sign=-1``: put them back)."""
        units = 0
        slots = self.slots
        for i, w in v.removed.items():
            u = w * v.job.g * sign
            units += u
            if i in self.free:
                before = self.free[i]
                self.free[i] = before + u
                self.free_total += u
                if slots is not None and i in self.cluster_of:
                    g = self.job.gpus_per_worker
                    after = before + u
                    change = (after // g if after >= g else 0) - (before // g if before >= g else 0)
                    slots[self.cluster_of[i]] += change
        for k, res in enumerate(self.binding):
            if v.job.est_end > res.start:
                late = self.late[k]
                for i, w in v.removed.items():
                    if i in res.spare:
                        late[i] = late.get(i, 0) + w * v.job.g * sign
                if v.job.queue == res.queue:
                    self.late_quota[k] += units
        self.ctx.quota.add(v.job.queue, self.flavor, -units)

    def undo(self, v: Victim) -> None:
        self.apply(v, -1)

    def reserved_each(self) -> list[tuple[Reservation, dict[int, int], int]]:
        """What each binding reservation leaves a long preemptor: GPUs per reserved node, and
        quota (of use to a preemptor of the reserved job's queue)."""
        return [
            (res, {i: s + late.get(i, 0) for i, s in res.spare.items()}, res.quota_room + q)
            for res, late, q in zip(self.binding, self.late, self.late_quota, strict=True)
        ]

    def reserved_view(self) -> tuple[dict[int, int], int | None]:
        """What the binding reservations together leave a long preemptor: GPUs per reserved
        node, and quota (None: no limit, no reservation is of its queue)."""
        each = self.reserved_each()
        rooms = [quota_room for res, _, quota_room in each if res.queue == self.job.queue]
        return spare_of([left for _, left, _ in each]) or {}, min(rooms) if rooms else None

    # -- rules ---------------------------------------------------------------------------------
    def reason_for(self, c: RunningJob, removed_units: int) -> str | None:
        """The rule that allows stopping ``c`` now, or None (rules 2-4)."""
        quota = self.ctx.quota
        if c.queue == self.job.queue:
            # statically filtered: strictly lower priority, same queue, past its protection
            return "priority"
        # across a cohort tree: compare the two sides just below their lowest common cohort
        at, mine_node, their_node = quota.meeting(self.job.queue, c.queue)
        if not quota.borrowing_up_to(c.queue, self.flavor, their_node):
            return None
        if quota.within_up_to(self.job.queue, self.flavor, self.need, mine_node):
            return "reclaim"
        if not self.cls.can_borrow:
            return None
        protection = c.cls.preemption_protection  # rule 1: only a reclaim inside it
        if protection and self.ctx.now - (c.started_at or 0.0) < protection:
            return None
        if c.stops >= STOP_BOUND:  # rule 1: only a reclaim once stopped that often
            return None
        if c.cheaper_to_wait_for(self.ctx.now, self.need):  # rule 1: only a reclaim then
            return None
        if self.flat:  # the nodes are the queues: their own shares
            mine = self._share(self.job.queue, self.need)
            theirs_after = self._share(c.queue, -removed_units)
            theirs_before = self._share(c.queue, None)
        else:
            mine = quota.level_share(self.job.queue, mine_node, at, self.flavor, self.need)
            theirs_after = quota.level_share(c.queue, their_node, at, self.flavor, -removed_units)
            theirs_before = quota.level_share(c.queue, their_node, at)
        if mine <= theirs_after or mine < theirs_before:
            return "fair-share"
        return None

    def _share(self, queue: str, extra: int | None) -> float:
        """``QuotaState.share`` of a queue in a flat cohort, with ``extra`` units of this
        flavor (None: as it is). Such a share reads the queue's own usage alone, and a search
        changes the usage of its flavor only, so it is kept by that usage: the minimal-set pass
        undoes and applies victims again and again, which comes back to the same usages (a
        change count never does)."""
        quota = self.ctx.quota
        key = (queue, quota.usage.get((queue, self.flavor), 0), extra)
        known = self.shares.get(key)
        if known is None:
            flavor = None if extra is None else self.flavor
            known = self.shares[key] = quota.share(queue, flavor, extra or 0)
        return known

    def quota_fits(self) -> bool:
        quota = self.ctx.quota
        if quota.blocked_reason(self.job.queue, self.flavor, self.need, self.cls.can_borrow):
            return False
        return self.job.queue not in self.ctx.nominal_only or quota.within_nominal(
            self.job.queue, self.flavor, self.need
        )

    def fits(self) -> Placement | None:
        if self.free_total < self.need or not self.quota_fits():
            return None
        free = self.free
        if self.binding:
            spare, quota_room = self.reserved_view()
            if quota_room is not None and self.need > quota_room:
                return None
            free = dict(free)
            for i, s in spare.items():
                if i in free:
                    free[i] = max(0, min(free[i], s))
        return place(
            self.ctx.cap,
            self.flavor,
            self.least,
            self.least,
            self.job.gpus_per_worker,
            self.job.topology,
            free,
            first_fit=self.ctx.policy.first_fit,
            clusters=self.job.clusters or None,
        )

    def count_slots(self) -> None:
        """Start keeping, per cluster ``fits`` would try, the preemptor's worker slots (free
        units // GPUs per worker, on nodes that take one) as victims are applied and undone.
        Without a topology or a reservation, ``place`` packs on the trial free map and finds a
        placement exactly when a cluster has ``least`` slots (``_pack``): ``can_fit`` then
        answers without packing."""
        if self.binding or self.job.topology is not None or self.least < 1:
            return
        g = self.job.gpus_per_worker
        by_cluster = self.ctx.cap.nodes.get(self.flavor, {})
        free = self.free
        self.slots = {}
        for name in self.job.clusters or list(by_cluster):
            total = 0
            for i in by_cluster.get(name, ()):
                self.cluster_of[i] = name
                f = free.get(i, 0)
                if f >= g:
                    total += f // g
            self.slots[name] = total

    def can_fit(self) -> bool:
        """Whether ``fits`` finds a placement (cheaper while ``count_slots`` applies)."""
        if self.slots is None:
            return self.fits() is not None
        if self.free_total < self.need or not self.quota_fits():
            return False
        return any(n >= self.least for n in self.slots.values())

    def still_allowed(self, pos: int, prefix: list[str | None]) -> bool:
        """With the victim that was at ``pos`` dropped (undone and out of ``victims``): whether
        each victim left is still allowed with only the victims before it in the list removed,
        in order (each allowed one takes the reason found; the first refused one ends the
        check). Leaves the trial state as it found it.

        The victims before ``pos`` are the same in every try of the minimal-set pass (it drops
        newest first), so their answers are found once (``prefix``, filled by the first call)
        and only the victims after ``pos`` are undone and checked again, one by one."""
        victims = self.victims
        later = victims[pos:]
        if len(prefix) < pos:  # the first call: nothing dropped yet, so pos is the largest
            for v in reversed(victims):
                self.undo(v)
            prefix[:] = []
            for v in victims[:pos]:
                prefix.append(self.reason_for(v.job, sum(v.removed.values()) * v.job.g))
                self.apply(v)
            for v in later:
                self.apply(v)
        for j in range(pos):
            reason = prefix[j]
            if reason is None:
                return False
            victims[j].reason = reason
        for v in reversed(later):
            self.undo(v)
        for k, v in enumerate(later):
            reason = self.reason_for(v.job, sum(v.removed.values()) * v.job.g)
            if reason is None:
                for w in later[k:]:
                    self.apply(w)
                return False
            v.reason = reason
            self.apply(v)
        return True

    def undo_all(self) -> None:
        for v in reversed(self.victims):
            self.undo(v)
        self.victims = []


def victim_rank(priority: int, stops: int, work_lost: float) -> tuple[int, bool, float]:
    """Rule 5's order among one queue's candidates, first to stop first: lower priority, then
    the stop that throws away the least work (``running.lost_work``), counted once more for each
    time the job was already stopped, and a job already stopped twice after every other. The
    previews of a quota change name the jobs in this order too (queues/services/quota_impact)."""
    return (priority, stops >= 2, work_lost * (1 + stops))


def candidates(ctx: CycleContext, job: PendingJob, flavor: str) -> list[RunningJob]:
    """Rule 1 filter, in no order (``plan_preemption`` puts them in rule 5's).

    Other queues' jobs are candidates only while their queue borrows (rules 2 and 3 need it),
    and only for a preemptor that may reclaim or borrow.
    """
    cls = ctx.cls_of(job)
    quota = ctx.quota
    cohort = quota.cohort.get(job.queue)
    least = (job.min_workers or job.workers) * job.gpus_per_worker
    hierarchical = quota.tree.hierarchical
    others = cohort is not None and (
        cls.can_borrow or hierarchical or quota.within_nominal(job.queue, flavor, least)
    )
    pool = ctx.victim_pools.get(flavor, {})  # started jobs of preemptible classes
    now = ctx.now
    prio = cls.priority
    # rule 1: not stopped or shrunk whole by this cycle, past its class's min_runtime; in the
    # own queue (priority only) past its preemption protection, under the stop bound and not
    # cheaper to wait for, which do not hold against a reclaim (``_Search.reason_for`` refuses
    # the other queues' protected, bounded or nearly finished jobs)
    out = [
        r
        for r in pool.get(job.queue, {}).values()
        if r.cls.priority < prio
        and r.workers
        and r.preemptible_now
        and now - (r.started_at or 0.0) >= r.cls.min_runtime
        and now - (r.started_at or 0.0) >= r.cls.preemption_protection
        and r.stops < STOP_BOUND
        and not r.cheaper_to_wait_for(now, least)
    ]
    if others and cohort is not None:
        for q in quota.tree_members(job.queue):
            if q == job.queue or q not in pool:
                continue
            if not quota.borrowing(q, flavor):
                continue  # rules 2 and 3 need the victim's queue borrowing
            if hierarchical:  # and, in a tree, its side below the lowest common cohort
                _at, mine_node, their_node = quota.meeting(job.queue, q)
                if not quota.borrowing_up_to(q, flavor, their_node):
                    continue
                if not cls.can_borrow and not quota.within_up_to(
                    job.queue, flavor, least, mine_node
                ):
                    continue
            out.extend(
                r
                for r in pool[q].values()
                if r.workers
                and r.preemptible_now
                and now - (r.started_at or 0.0) >= r.cls.min_runtime
            )
    return out


def victim_order(ctx: CycleContext, job: PendingJob, cands: list[RunningJob]) -> list[RunningJob]:
    """Rule 5's order of ``candidates``: other queues from the highest share, then own queue;
    the first MAX_CANDIDATES of them."""
    quota = ctx.quota
    now = ctx.now
    shares = {q: quota.share(q) for q in {r.queue for r in cands}}
    # across a tree: the share of the victim's side at the lowest common cohort comes first
    side: dict[str, float] = {}
    if quota.tree.hierarchical:
        for q in shares:
            if q != job.queue:
                at, _mine_node, their_node = quota.meeting(job.queue, q)
                side[q] = -quota.level_share(q, their_node, at)

    def key(r: RunningJob) -> tuple[object, ...]:
        own = 1 if r.queue == job.queue else 0
        first = side.get(r.queue, -shares[r.queue])
        rank = victim_rank(r.cls.priority, r.stops, r.work_lost(now))
        return (own, first, -shares[r.queue], *rank, r.name)

    return sorted(cands, key=key)[:MAX_CANDIDATES]


def plan_preemption(
    ctx: CycleContext, job: PendingJob, flavor: str, cands: list[RunningJob]
) -> PreemptionPlan | None:
    """The minimal set of victims among ``cands`` that lets ``job`` start on ``flavor``.

    The search tries victims on the cycle's quota state and undoes every try, so it leaves the
    usage as it found it; it leaves the change counts too (``QuotaState.changes_of``), or every
    search would make the fair order read the tried queues' shares again."""
    if not cands:
        return None
    counts = ctx.quota.change_counts()
    try:
        return _plan(ctx, job, flavor, cands)
    finally:
        ctx.quota.restore_change_counts(counts)


def _plan(
    ctx: CycleContext, job: PendingJob, flavor: str, cands: list[RunningJob]
) -> PreemptionPlan | None:
    s = _Search(ctx, job, flavor)
    if len(cands) > MAX_CANDIDATES:  # rule 5's order picks the candidates searched
        cands = victim_order(ctx, job, cands)
    # cheap bound: even stopping every candidate cannot make room (most searches end at one
    # of these bounds, which the candidates' order leaves the same: they are ordered after)
    held = _units_by_queue(cands)
    if s.free_total + sum(held.values()) < s.need:
        return None
    if _quota_blocked_without_all(s, held):
        return None
    cands = victim_order(ctx, job, cands)
    reclaiming = ctx.quota.within_nominal(job.queue, flavor, s.need)
    placement = _add_victims(s, cands)
    if placement is None and reclaiming and len(cands) > 1:
        # rule 5's order can spend a borrowing queue's excess on a victim that does not help
        # (a small job stopped first leaves the queue at nominal, and the large one that would
        # have made room is then protected): a within-nominal job tries the largest first
        s.undo_all()
        placement = _add_victims(s, sorted(cands, key=_size_first))
    if placement is None:
        s.undo_all()
        return None
    # minimal set: drop, newest choice first, every victim not needed
    prefix: list[str | None] = []  # still_allowed's answers for the victims before pos
    s.count_slots()
    for pos in range(len(s.victims) - 1, -1, -1):
        v = s.victims[pos]
        s.undo(v)
        del s.victims[pos]
        if s.can_fit() and s.still_allowed(pos, prefix):
            continue
        s.apply(v)
        s.victims.insert(pos, v)
    s.slots = None
    placement = s.fits()
    assert placement is not None
    _give_back(s, placement)
    victims = [v for v in s.victims if any(v.removed.values())]
    if not victims:  # it fits without stopping anything: not a preemption
        s.undo_all()
        return None
    if _swap_takes_waited_pool(s, victims):
        s.undo_all()
        return None
    plan = PreemptionPlan(placement, victims, dict(s.free))
    for res, spare, quota_room in s.reserved_each():
        for i, w in placement.workers.items():
            if i in spare:
                spare[i] -= w * job.gpus_per_worker
        plan.reserved.append((res, spare, quota_room - (s.need if job.queue == res.queue else 0)))
    s.undo_all()
    return plan


def _size_first(c: RunningJob) -> int:
    return -c.count * c.g


def _add_victims(s: _Search, cands: list[RunningJob]) -> Placement | None:
    """Rule 5's passes: add every candidate the rules allow, in order, until the preemptor
    fits; rule 6: shrink first, and stop shrunk victims whole when shrinking is not enough."""
    chosen: set[str] = set()
    placement: Placement | None = None
    added = True
    while added and placement is None:
        added = False
        for order, c in enumerate(cands):
            if c.name in chosen:
                continue
            floor = c.min_workers
            if floor is not None and c.count > floor:
                removed = _shrink_workers(c, c.count - floor)  # rule 6: shrink first
            else:
                removed = dict(c.workers)
            reason = s.reason_for(c, sum(removed.values()) * c.g)
            if reason is None:
                continue
            v = Victim(c, removed, reason, order)
            s.apply(v)
            s.victims.append(v)
            chosen.add(c.name)
            added = True
            placement = s.fits()
            if placement is not None:
                return placement
    for v in list(s.victims):  # rule 6: shrinking was not enough -> stop shrunk victims whole
        if v.stops:
            continue
        s.undo(v)
        v.removed = dict(v.job.workers)
        s.apply(v)
        placement = s.fits()
        if placement is not None:
            return placement
    return None


def _units_by_queue(cands: list[RunningJob]) -> dict[str, int]:
    """The units the candidates hold, by queue (what stopping them all would give back)."""
    by_queue: dict[str, int] = {}
    for c in cands:
        by_queue[c.queue] = by_queue.get(c.queue, 0) + c.count * c.g
    return by_queue


def _quota_blocked_without_all(s: _Search, by_queue: dict[str, int]) -> bool:
    """Cheap bound: the preemptor's quota stays blocked even with every candidate removed
    (``by_queue``: the units they hold, by queue).

    Whether a job fits its quota only improves as usage in its queue and its cohort's pool
    goes down, so no subset of the candidates can help then.
    """
    quota = s.ctx.quota
    for q, units in by_queue.items():
        quota.add(q, s.flavor, -units)
    blocked = quota.blocked_reason(s.job.queue, s.flavor, s.need, s.cls.can_borrow) is not None
    for q, units in by_queue.items():
        quota.add(q, s.flavor, units)
    return blocked


def _swap_takes_waited_pool(s: _Search, victims: list[Victim]) -> bool:
    """Rule 4's limit for a borrowing preemptor: stopping only jobs of its own queue, it may not
    borrow more of the cohort pool than its queue did while another queue of the cohort has a job
    waiting for the flavor.

    Otherwise a fair-share decision is undone without a share test: queue A stops B's big job
    for a small one, A's bigger job then swaps the small one out by priority (taking the freed
    GPUs from the pool), B's job stops it again under fair sharing, and so on for ever.
    """
    job = s.job
    if any(v.job.queue != job.queue for v in victims):
        return False  # rule 3 weighed the other queues' victims against the preemptor's share
    quota = s.ctx.quota
    cohort = quota.root_of(job.queue)  # the whole tree: any of its queues may be waiting
    if cohort is None:
        return False
    nominal = quota.nominal(job.queue, s.flavor)
    freed = sum(sum(v.removed.values()) * v.job.g for v in victims)
    after = s.used_before - freed + s.need
    if max(0, after - nominal) <= max(0, s.used_before - nominal):
        return False
    return _another_queue_waits(s.ctx, cohort, s.flavor, job.queue)


def _another_queue_waits(ctx: CycleContext, cohort: str, flavor: str, queue: str) -> bool:
    """Whether a job of another queue of ``cohort`` that could ever run in ``flavor`` waits (not
    admitted by this cycle). Scans the pending jobs and stops at the first: one usually comes
    early, and building the whole cohort's waiting list per cycle cost more than the answer."""
    quota = ctx.quota
    admitted: set[str] | None = None
    for p in ctx.snapshot.pending:
        if p.queue == queue or flavor not in p.flavors or quota.root_of(p.queue) != cohort:
            continue
        units = (p.min_workers or p.workers) * p.gpus_per_worker
        if quota.never_fits(p.queue, flavor, units, ctx.cls_of(p).can_borrow):
            continue
        if admitted is None:
            admitted = {r.name for r in ctx.running[ctx.base_running :]}  # by this cycle
        if p.name not in admitted:
            return True
    return False


def _give_back(s: _Search, placement: Placement) -> None:
    """Rule 6: a shrunk victim keeps every worker the preemptor does not need."""
    quota = s.ctx.quota
    after = dict(s.free)
    for i, w in placement.workers.items():
        after[i] = after.get(i, 0) - w * s.job.gpus_per_worker
    quota.add(s.job.queue, s.flavor, s.need)
    for v in s.victims:
        if v.stops:
            continue
        g = v.job.g
        for i in sorted(v.removed):
            room = quota.headroom(v.job.queue, s.flavor) // g
            if v.job.queue == s.job.queue and not s.cls.can_borrow:
                # the preemptor may not borrow: its queue must stay within nominal
                left = quota.nominal(s.job.queue, s.flavor) - quota.used(s.job.queue, s.flavor)
                room = min(room, left // g)
            back = min(v.removed[i], after.get(i, 0) // g, max(0, room))
            if back <= 0:
                continue
            v.removed[i] -= back
            after[i] -= back * g
            if i in s.free:
                s.free[i] -= back * g
                s.free_total -= back * g
            for k, res in enumerate(s.binding):
                if v.job.est_end > res.start:
                    if i in res.spare:
                        s.late[k][i] -= back * g
                    if v.job.queue == res.queue:
                        s.late_quota[k] -= back * g
            quota.add(v.job.queue, s.flavor, back * g)
        v.removed = {i: w for i, w in v.removed.items() if w > 0}
    quota.add(s.job.queue, s.flavor, -s.need)
