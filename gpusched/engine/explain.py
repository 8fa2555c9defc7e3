"""Why a job is still pending, in words a researcher understands.

``PendingInfo`` keeps the numbers; ``message`` turns them into one plain-English sentence, built
only when asked for (a cycle with 20,000 pending jobs does not format 20,000 strings).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusched.engine.stop_bound import HELD_SUFFIX, STOP_BOUND

# Reason codes, most specific first.
QUOTA_NOMINAL = "quota-nominal"  # queue without cohort is at its nominal quota
CANNOT_BORROW = "cannot-borrow"  # would borrow, but the class may not
BORROWING_LIMIT = "borrowing-limit"  # would exceed nominal + borrowing limit
COHORT_POOL = "cohort-pool"  # the cohort's shared pool is full
CAPACITY = "capacity"  # quota fits, but not enough free GPUs of the flavor
TOPOLOGY = "topology"  # enough free GPUs, but not inside one topology domain
TOO_LARGE = "too-large"  # no cluster could ever hold the job
QUOTA_EXCEEDED = "quota-exceeded"  # more than its queue's quota could ever give it
NO_FLAVOR = "no-flavor"  # no schedulable node exposes any acceptable flavor
BEHIND_RESERVATION = "behind-reservation"  # would delay the reservation of a better-ranked job
HEAD_OF_LINE = "head-of-line"  # fifo: waits behind an earlier job
QUOTA_HELD = "quota-held"  # its queue stays within nominal until a non-borrowing job starts
NEVER = (TOO_LARGE, NO_FLAVOR, QUOTA_EXCEEDED)  # reasons no amount of waiting removes


def _n(value: float) -> str:
    return f"{value:g}"


@dataclass(slots=True)
class PendingInfo:
    """Why ``job`` is pending after a cycle; ``message`` is the sentence to show.

    Read-only by convention, not frozen: a cycle makes one per pending job (50,000 in a deep
    backlog), and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field) took
    a fifth of such a cycle. Make a changed copy with ``dataclasses.replace``."""

    job: str
    reason: str
    queue: str
    position: int  # 1-based rank among the pending jobs of its queue
    # ranked among the jobs within their queue's nominal quota (rule 4's first key); None when
    # the policy does not rank by it (fifo)
    within_nominal: bool | None = None
    flavor: str = ""  # the flavor the reason is about (the job's first choice)
    need: int = 0  # units the job asks for in that flavor (at its smallest size)
    used: int = 0  # the queue's usage of that flavor
    nominal: int = 0
    limit: int | None = None  # nominal + borrowing limit, when one applies
    cohort: str | None = None
    pool_size: int = 0
    pool_used: int = 0
    free: int = 0  # free units of the flavor in the best cluster
    largest_block: int = 0  # most units free on one node
    service_class: str = ""
    topology_level: str = ""
    blocker: str = ""  # the reserved job it would delay / the job at the head of the line
    estimated_start: float | None = None
    reserved: bool = False  # holds a backfill reservation (starts at estimated_start)
    preemption: bool = True  # the policy may preempt running jobs for it
    can_borrow: bool = True  # its class may borrow from the cohort
    # its start waits for running jobs already at or past their estimated ends: no time can be
    # told (``estimated_start`` is None), only that it starts once they end (start_estimates.py)
    overdue: bool = False

    @property
    def message(self) -> str:
        text = self._reason_text()
        if self.reserved:
            text += (
                " It is next in line: GPUs are reserved for it as running jobs end, and other "
                "jobs may use them meanwhile only if they finish first."
            )
        if self.estimated_start is not None:
            text += f" Estimated start: t={_n(self.estimated_start)}."
        elif self.overdue:
            text += " Estimated start: " + self._overdue_text()
        return f"#{self.position} in queue {self.queue}. {text}"

    def _overdue_text(self) -> str:
        """When an overdue estimate starts, in words that stay the same from cycle to cycle."""
        if self.reason == BEHIND_RESERVATION and self.blocker:
            return (
                "not known yet: the job holding the reservation waits for running jobs that "
                "have run past their estimated runtimes."
            )
        return (
            "as soon as the running jobs it waits for end; they have run past their estimated "
            "runtimes."
        )

    def _quota_text(self) -> str:
        if self.used > self.nominal:
            usage = (
                f"queue {self.queue} uses {self.used} {self.flavor}, "
                f"{self.used - self.nominal} above its nominal {self.nominal},"
            )
        else:
            usage = (
                f"queue {self.queue} uses {self.used} of {self.nominal} {self.flavor} "
                f"(nominal {self.nominal})"
            )
        return f"{usage} and this job needs {self.need}"

    def _reason_text(self) -> str:
        r = self.reason
        if r == QUOTA_NOMINAL:
            return (
                f"Waiting for quota: {self._quota_text()}; the queue has no cohort to borrow from."
            )
        if r == CANNOT_BORROW and self.service_class.endswith(HELD_SUFFIX):
            return (
                f"Waiting for quota: {self._quota_text()}, which would borrow above nominal. "
                f"Stopped and requeued {STOP_BOUND} times already, the job now starts only "
                f"within its queue's nominal quota, where no preemption can stop it again."
            )
        if r == CANNOT_BORROW:
            return (
                f"Waiting for quota: {self._quota_text()}, which would borrow above nominal, "
                f"and class {self.service_class} may not borrow (the queue's lower-priority "
                f"jobs that may borrow do not hold that much above nominal, or the cohort has "
                f"no room for them to borrow it)."
            )
        if r == BORROWING_LIMIT:
            return (
                f"Waiting for quota: queue {self.queue} uses {self.used} {self.flavor} and may "
                f"use at most {self.limit} (nominal {self.nominal} + borrowing limit); "
                f"this job needs {self.need}."
            )
        if r == COHORT_POOL:
            free = self.pool_size - self.pool_used
            pool = f"the cohort pool of {self.cohort} ({self.pool_size} {self.flavor})"
            if free < 0:  # quotas lowered below what is in use: never a negative count
                return (
                    f"Waiting for quota: {self._quota_text()}; {pool} has none free: it is "
                    f"over-committed by {-free}, as jobs admitted before its quotas were lowered "
                    f"still run."
                )
            return f"Waiting for quota: {self._quota_text()}; {pool} has {free} free."

        if r == CAPACITY:
            text = (
                f"Waiting for GPUs: needs {self.need} {self.flavor}; {self.free} are free "
                f"(at most {self.largest_block} on one node)"
            )
            if self.preemption:
                return text + " and no running job may be preempted for it now."
            return text + "."
        if r == TOPOLOGY:
            return (
                f"Waiting for GPUs in one {self.topology_level}: needs {self.need} "
                f"{self.flavor} inside a single {self.topology_level}; {self.free} are free "
                f"but spread over several."
            )
        if r == TOO_LARGE:
            return (
                f"Cannot run: needs {self.need} {self.flavor}, more than any cluster has; "
                f"ask for fewer workers or GPUs per worker."
            )
        if r == QUOTA_EXCEEDED:
            if self.cohort is None:
                most = f"its nominal quota of {self.nominal}, and the queue has no cohort"
            elif not self.can_borrow:
                most = (
                    f"its nominal quota of {self.nominal}, and class {self.service_class} "
                    f"may not borrow"
                )
            else:
                most = f"its nominal {self.nominal} plus what it may borrow"
                if self.limit is not None:
                    most += f" (at most {self.limit})"
                most += f" from the cohort pool of {self.cohort} ({self.pool_size})"
            return (
                f"Cannot run: needs {self.need} {self.flavor}, more than queue {self.queue} "
                f"can ever use: {most}. Ask for fewer GPUs or a larger quota."
            )
        if r == NO_FLAVOR:
            return (
                f"Cannot run now: no schedulable node offers {self.flavor} "
                f"(nodes may be cordoned or failed)."
            )
        if r == BEHIND_RESERVATION:
            return (
                f"Held back: starting now on the free {self.flavor} would delay job "
                f"{self.blocker}, which ranks higher and holds a reservation."
            )
        if r == QUOTA_HELD:
            return (
                f"Waiting for quota: {self._quota_text()}; queue {self.queue} stays within its "
                f"nominal quota until a job that may not borrow, already admitted, starts."
            )
        if r == HEAD_OF_LINE:
            return f"Waiting in line (fifo policy) behind job {self.blocker}, submitted earlier."
        return f"Pending ({r})."
