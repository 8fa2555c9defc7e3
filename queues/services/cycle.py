"""``run_cycle``: one live scheduling cycle, single-flight and safe to re-run.

1. take the lease (another worker holds it: do nothing), renewed while the cycle works;
2. sync every cluster and record what happened there (observe.py);
3. requeue preempted jobs whose grace period is over;
4. build the snapshot and let the pure engine decide;
5. in one transaction, confirm the lease and apply the decisions with conditional updates;
6. after commit, hand launches, stops and scales to the cluster drivers.

A crash anywhere leaves the database either before or after step 5 as a whole; the next cycle
compares the clusters with it again and redoes any side effect that did not happen.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounting.services import accrue_usage
from dashboards.rollup import record_cycle
from gpuplatform.logs import cycle_context
from gpusched.engine.cycle import run_cycle as decide
from gpusched.engine.snapshot_keep import SnapshotKeep
from queues.clusters.pool import DriverPool
from queues.kueue_metrics import record_admission_waits
from queues.models import CycleRun
from queues.services import counters, lease, observe
from queues.services.apply import apply_result
from queues.services.effects import Effect, run_effects
from queues.services.report import CycleReport
from queues.services.snapshot import build_snapshot

logger = logging.getLogger(__name__)

PHASES = ("sync", "snapshot", "decide", "apply", "accounting")
DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def run_cycle(
    now: datetime | None = None,
    *,
    policy: str = "default",
    worker: str = "",
    drivers: DriverPool | None = None,
    keep: SnapshotKeep | None = None,
    started: Callable[[], None] | None = None,
) -> CycleReport:
    """Run one cycle at ``now`` (default: the current time) and report what it did.

    ``drivers``: the caller's pool of cluster drivers kept across its cycles (the Celery worker
    process keeps one, queues/tasks.py); without one the clusters are read from scratch.
    ``keep``: likewise, the engine state and last snapshot kept across the caller's cycles
    (snapshot_keep.py; it changes no decision); without one the engine starts afresh.
    ``started``: called once this cycle holds the lease (not when it is skipped).

    Every log line written meanwhile (decisions, side effects, driver calls) carries the cycle's
    id (``report.cycle_id``; gpuplatform/logs.py), and the last one names its ``CycleRun``."""
    report = CycleReport(now=now or timezone.now(), cycle_id=uuid.uuid4().hex[:12])
    with cycle_context(report.cycle_id):
        _run(report, now, policy, worker, drivers, keep or SnapshotKeep(), started)
    return report


def _run(
    report: CycleReport,
    now: datetime | None,
    policy: str,
    worker: str,
    drivers: DriverPool | None,
    keep: SnapshotKeep,
    started: Callable[[], None] | None = None,
) -> None:
    holder = lease.new_holder()
    if not lease.acquire(holder):
        report.ran = False
        logger.info("scheduling cycle skipped: another worker holds the lease")
        return
    if started is not None:
        started()
    try:
        with lease.Renewal(holder):
            _work(report, now, policy, worker or holder, holder, drivers, keep)
    finally:
        lease.release(holder)
    logger.info(
        "%s (%.3f s, cycle run %s)", report.summary(), report.duration_seconds, report.cycle_run_id
    )


def _work(
    report: CycleReport,
    now: datetime | None,
    policy: str,
    worker: str,
    holder: str,
    drivers: DriverPool | None,
    keep: SnapshotKeep,
) -> None:
    moment = report.now
    started = time.perf_counter()
    phases = PhaseTimer()
    with phases("sync"):
        effects = observe.sync_clusters(moment, report, drivers)
        with transaction.atomic():
            observe.finish_stops(moment, report)
    with phases("snapshot"):
        live = build_snapshot(moment, keep)
    with phases("decide"), keep.use(live.snapshot) as (snapshot, state):
        live.snapshot = snapshot  # the same values, with the last cycle's equal objects
        result = decide(snapshot, policy, state=state)
    with phases("apply"), transaction.atomic():
        lease.confirm(holder)
        effects += apply_result(live, result, report)
        record_admission_waits(moment)  # kueue_admission_wait_time_seconds
        cycle_id = report.cycle_id
        transaction.on_commit(lambda: _carry_out(effects, now, cycle_id))
    with phases("accounting"):
        accrue_usage(moment)  # the usage ledger up to this cycle (accounting/ledger.py)
        record_cycle(moment)  # dashboards: usage and capacity series (dashboards/rollup.py)
    report.duration_seconds = time.perf_counter() - started
    _record(report, worker, phases.seconds)


def _carry_out(effects: list[Effect], now: datetime | None, cycle_id: str) -> None:
    with cycle_context(cycle_id):
        try:
            run_effects(_unique(effects), now)
        except Exception:  # a side effect must never undo a committed cycle
            logger.exception("cluster side effects failed; the next cycle retries them")


def _unique(effects: list[Effect]) -> list[Effect]:
    seen: set[Effect] = set()
    out = []
    for effect in effects:
        if effect not in seen:
            seen.add(effect)
            out.append(effect)
    return out


class PhaseTimer:
    """``with timer("decide"): ...`` adds the block's wall time to ``seconds["decide"]``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - started


def _record(report: CycleReport, worker: str, phases: dict[str, float]) -> None:
    """A ``CycleRun`` row (written once the cycle is done), the duration histogram and the
    phases' summary (``gpuplatform_cycle_phase_seconds``)."""
    duration = report.duration_seconds
    run = CycleRun.objects.create(
        started_at=report.now,
        finished_at=report.now + timedelta(seconds=duration),  # the cycle's clock
        worker=worker,
        outcome=report.summary(),
    )
    report.cycle_run_id = run.pk
    name = "gpuplatform_cycle_duration_seconds"
    for bound in DURATION_BUCKETS:
        if duration <= bound:
            counters.increment(f"{name}_bucket", le=f"{bound:g}")
    counters.increment(f"{name}_bucket", le="+Inf")
    counters.increment(f"{name}_sum", duration)
    counters.increment(f"{name}_count")
    for phase, seconds in phases.items():
        counters.increment("gpuplatform_cycle_phase_seconds_sum", seconds, phase=phase)
        counters.increment("gpuplatform_cycle_phase_seconds_count", phase=phase)
