"""Plain data the figure builders take: frozen dataclasses, no Django, no ORM.

`dashboards.data` fills them from the database; `dashboards.figures` turns them into Plotly
figure dicts. Quantities are GPU-equivalents (a whole GPU is 1, a k-slice MIG k/7) unless a
field says units (GPUs or MIG slices of one flavor).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

# What GPUs held by pods the platform did not create are called (a shared cluster's other
# workloads: another team's service, a DaemonSet): a GPU map slot, a chart's stack and bar.
OTHER_WORKLOADS = "other workloads"


@dataclass(frozen=True)
class UsageSeries:
    """Average GPU-equivalents in use per bucket, stacked by `stacks` (team or flavor)."""

    range_label: str  # "last day"
    bucket_seconds: int
    buckets: tuple[datetime, ...]
    stacks: dict[str, tuple[float, ...]]  # name -> one value per bucket
    capacity: tuple[float | None, ...] = ()  # None: no sample in that bucket
    failed: tuple[float | None, ...] = ()
    stacked_by: str = "team"
    other: tuple[float | None, ...] = ()  # held by other workloads (OTHER_WORKLOADS)


@dataclass(frozen=True)
class FlavorUtilization:
    flavor: str
    capacity: int  # units on every node
    used: int  # units held by admitted, running or stopping jobs
    failed: int  # units on nodes that are not Ready
    other: int = 0  # units on Ready nodes held by other workloads (OTHER_WORKLOADS)

    @property
    def free(self) -> int:
        return max(0, self.capacity - self.used - self.failed - self.other)

    @property
    def percent_used(self) -> float:
        """Of what the platform may use: capacity less failed nodes and other workloads."""
        usable = self.capacity - self.failed - self.other
        return round(100.0 * self.used / usable, 1) if usable > 0 else 0.0


@dataclass(frozen=True)
class QuotaRow:
    queue: str  # team/queue
    flavor: str
    nominal: int
    used: int
    borrowed: int
    lent: int


@dataclass(frozen=True)
class CohortRow:
    """One cohort and GPU type now: its pool and who lends what of it to whom."""

    cohort: str
    flavor: str
    pool: int  # the members' lendable nominal together
    lenders: tuple[tuple[str, int], ...]  # (queue, units of its unused nominal others use)
    borrowers: tuple[tuple[str, int], ...]  # (queue, units it uses above its nominal)


@dataclass(frozen=True)
class ShareTreeRow:
    """One row of the fair-share tree (dashboards/sshare.py): a cohort's totals or a queue."""

    cohort: str
    queue: str  # "" on the cohort's own row (its totals)
    weight: float | None  # None on a cohort row
    nominal: float  # GPU-equivalents [RawShares]
    norm_shares: float  # of the cohort's nominal, 0..1 [NormShares]
    raw_usage_hours: float  # decayed GPU-equivalent-hours [RawUsage]
    effective_usage: float  # of the cohort's decayed usage, 0..1 [EffectvUsage]
    share: float | None  # the engine's; None on a cohort row
    borrowed: float  # GPU-equivalents used above nominal now
    lent: float  # GPU-equivalents of its unused nominal other queues use now
    in_use: float  # GPU-equivalents held now (U(q))

    @property
    def is_cohort(self) -> bool:
        return not self.queue


@dataclass(frozen=True)
class FairShareRow:
    queue: str
    weight: float
    decayed_usage_hours: float  # H(q) in GPU-equivalent-hours
    usage_fraction: float  # of all queues' decayed usage
    share_fraction: float  # weight / sum of weights
    factor: float  # 2^(-usage_fraction/share_fraction); 0.5: exactly at its share
    score: float  # (H/tau + U)/weight, lower runs first
    current_usage: float  # U(q), GPU-equivalents
    pending: int
    share: float = 0.0  # the engine's share (queues.services.queue_status.SHARE_MEANING)

    @property
    def over_share(self) -> bool:
        """Over its share in the engine's sense: borrowing above its nominal quota, so fair
        sharing may preempt its jobs for a queue with a lower share."""
        return self.share > 0

    @property
    def starved(self) -> bool:
        """Has jobs waiting although it is within its nominal quota (share 0)."""
        return self.pending > 0 and self.share <= 0


@dataclass(frozen=True)
class Slot:
    """One GPU or MIG slice: free (team None), held by a job, or by other workloads (team
    OTHER_WORKLOADS, no job)."""

    team: str | None = None
    job: str | None = None  # "#12 train"; None when the viewer may not see the team's jobs


@dataclass(frozen=True)
class NodeSlots:
    node: str  # cluster/node
    flavor: str
    mig_config: str  # the node's nvidia.com/mig.config label, "" if none
    ready: bool
    is_mig: bool
    slots: tuple[Slot, ...]


@dataclass(frozen=True)
class WaitRow:
    queue: str
    service_class: str
    pending: int
    started: int  # jobs that started in the window (the wait samples)
    p50_minutes: float | None
    p95_minutes: float | None


@dataclass(frozen=True)
class PreemptionSeries:
    days: tuple[date, ...]
    by_reason: dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class MonthlyCosts:
    currency: str
    months: tuple[str, ...]  # "2026-03"
    by_group: dict[str, tuple[float, ...]]  # team (or flavor) -> cost per month


@dataclass(frozen=True)
class BurnDown:
    team: str
    currency: str
    budget: float
    days: tuple[date, ...]  # day ends shown so far (UTC)
    remaining: tuple[float, ...]  # budget minus month-to-date cost at each day's end
    ideal: tuple[float, ...]  # an even spend over the whole month


@dataclass(frozen=True)
class TeamJob:
    job_id: int
    name: str
    queue: str
    owner: str
    position: int | None  # the engine's rank in its queue (None: not ranked yet)
    pending_in_queue: int
    message: str
    mine: bool = False


@dataclass(frozen=True)
class Notes:
    """Messages shown above a dashboard's charts (e.g. a missing price)."""

    items: list[str] = field(default_factory=list)


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[rank - 1]
