"""Replay the last N days twice, under today's quotas and nodes and under the proposed ones,
and compare them per queue and per cohort.

The world both runs start from is the one the live cycle sees now (``build_snapshot`` →
``demo.replay.world_of``, the mapping the demo's history replay uses); the scenario is
``demo.replay.scenario_of``'s with the real submissions as its jobs
(``submissions.read_submissions``). Reads only: no row is written here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from dashboards import figures
from dashboards.plain import UsageSeries, percentile
from demo.replay import World, scenario_of, world_of
from queues.services.snapshot import build_snapshot
from queues.services.whatif import proposal as proposals
from queues.services.whatif.replay import BUCKET, JobOutcome, RunOutcome, replay
from queues.services.whatif.submissions import read_submissions

DAY = 86400.0
RUNS = ("today", "proposed")


def compare(
    proposal: proposals.Proposal, now: datetime, progress: Callable[[float], None]
) -> dict[str, Any]:
    """The comparison's JSON: per queue and per cohort both runs' numbers, and the figures."""
    start = now - timedelta(days=proposal.days)
    world = world_of(build_snapshot(now).snapshot)
    proposed = proposals.apply(world, proposal)
    submissions = read_submissions(start, now, world.default_runtime)
    outcomes: dict[str, RunOutcome] = {}
    for index, (run, w) in enumerate(zip(RUNS, (world, proposed), strict=True)):
        scenario = replace(
            scenario_of(w, [], start.timestamp(), now.timestamp(), float(settings.CYCLE_INTERVAL)),
            name=f"what-if {run}",
            jobs=submissions.jobs,
        )
        outcomes[run] = replay(
            scenario,
            start.timestamp(),
            now.timestamp(),
            _share(progress, index),
        )
    counted = {n for n in (j.name for j in submissions.jobs) if n not in submissions.carried}
    cohorts = _cohorts(world)
    return {
        "days": proposal.days,
        "start": start.isoformat(),
        "end": now.isoformat(),
        "jobs": len(counted),
        "carried_in": len(submissions.carried),
        "proposal": proposal.to_json(),
        "queues": [
            _row(name, cohorts[name], outcomes, {name}, counted) for name in sorted(cohorts)
        ],
        "cohorts": [
            _row(c, c, outcomes, members, counted, is_cohort=True)
            for c, members in sorted(_subtrees(world).items())
        ],
        "capacity": {run: round(outcomes[run].capacity, 3) for run in RUNS},
        "charts": [
            figures.chart(f"what-if-{run}", figures.usage_over_time(_series(run, o, start, world)))
            for run, o in outcomes.items()
        ],
    }


def _share(progress: Callable[[float], None], index: int) -> Callable[[float], None]:
    """Run ``index``'s progress (0 to 1) as its share of the whole comparison's."""

    def report(done: float) -> None:
        progress((index + done) / len(RUNS))

    return report


def _cohorts(world: World) -> dict[str, str]:
    return {q.name: q.cohort or "" for q in world.queues}


def _subtrees(world: World) -> dict[str, set[str]]:
    """Every cohort (named by a queue or declared in the tree) -> the queues under it at any
    depth, so a department's row adds up its teams' queues."""
    parent = {c.name: c.parent for c in world.cohorts}
    out: dict[str, set[str]] = {c.name: set() for c in world.cohorts}
    for q in world.queues:
        k = q.cohort
        while k is not None and q.name not in out.setdefault(k, set()):
            out[k].add(q.name)
            k = parent.get(k)
    return out


def _row(
    name: str, cohort: str, outcomes: dict[str, RunOutcome], queues: set[str], counted: set[str],
    *, is_cohort: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """One line of the table: ``queues`` (one queue, or every queue under a cohort) in both
    runs; the waits of the jobs in ``counted`` (not those carried in). Borrowed: a queue's above
    its nominal, a cohort's above its capacity in the tree (from its parent)."""
    row: dict[str, Any] = {"name": name, "cohort": cohort}
    for run, outcome in outcomes.items():
        borrowed = (
            outcome.cohort_borrowed_seconds.get(name, 0.0) if is_cohort
            else sum(outcome.borrowed_seconds.get(q, 0.0) for q in queues)
        )  # fmt: skip
        row[run] = measures(
            [j for n, j in outcome.jobs.items() if j.queue in queues and n in counted],
            sum(outcome.gpu_seconds.get(q, 0.0) for q in queues),
            borrowed,
        )
    return row


def measures(jobs: list[JobOutcome], gpu_seconds: float, borrowed_seconds: float) -> dict[str, Any]:
    """The table's numbers for one queue (or cohort) in one run."""
    waits = [j.wait for j in jobs]
    return {
        "jobs": len(jobs),
        "never_started": sum(1 for j in jobs if not j.started),
        "mean_wait_s": round(sum(waits) / len(waits), 1) if waits else 0.0,
        "p95_wait_s": round(percentile(waits, 95) or 0.0, 1),
        "gpu_hours": round(gpu_seconds / 3600.0, 2),
        "borrowed_gpu_hours": round(borrowed_seconds / 3600.0, 2),
        "preemptions": sum(j.preemptions for j in jobs),
        "waited_over_a_day": sum(1 for j in jobs if j.wait > DAY),
    }


def _series(run: str, outcome: RunOutcome, start: datetime, world: World) -> UsageSeries:
    hours = len(next(iter(outcome.allocation.values()), []))
    return UsageSeries(
        range_label="today" if run == "today" else "proposed",
        bucket_seconds=int(BUCKET),
        buckets=tuple(start + timedelta(seconds=BUCKET * i) for i in range(hours)),
        stacks={q.name: tuple(outcome.allocation[q.name]) for q in world.queues},
        capacity=tuple(outcome.capacity for _ in range(hours)),
        stacked_by="queue",
    )
