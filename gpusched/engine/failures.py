"""Failures (docs/SCHEDULING.md section 4): the stops a cycle makes before any decision.

A job with a worker on a failed node is stopped whole and requeued (``node-failure``), as is a
job with a worker on a node an admin drains (``node-drain``, kubectl drain's meaning for the
platform's own jobs); a job past its class ``max_runtime`` is stopped and failed
(``max-runtime``). Each stop keeps the job's GPUs busy, and counted against its queue, through
its class grace period; without one they are free for this very cycle. A preemptor still
waiting for its victims does not start on a node lost meanwhile: it is stopped at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusched.engine.bookkeeping import Bookkeeping
from gpusched.engine.model import Stop
from gpusched.engine.running import RunningJob

if TYPE_CHECKING:
    from gpusched.engine.context import CycleContext


def stop_failed_and_overrun(ctx: CycleContext, book: Bookkeeping) -> list[RunningJob]:
    """Add the stops to ``ctx.stops`` (sorted by job) and return the running jobs they stop,
    which no longer run for this cycle (undone before the next, see ``ctx.mutated``)."""
    cap = ctx.cap
    now = ctx.now
    entries = book.entries
    stopped: list[RunningJob] = []
    timed = {c.name for c in ctx.snapshot.service_classes if c.max_runtime is not None}
    suspects: set[int] = set()
    for node in (*cap.failed, *cap.draining):
        suspects.update(book.on_node.get(node, ()))
    if timed:
        suspects.update(entries)
    for key in sorted(suspects):
        entry = entries[key]
        job = entry.job
        if job.stopping or job.started_at is None:
            continue  # stopping already, or a preemptor still waiting (see below)
        cls = ctx.cls(job.service_class)
        reason = None
        if cap.failed and not cap.failed.isdisjoint(entry.units):
            reason = "node-failure"
        elif cap.draining and not cap.draining.isdisjoint(entry.units):
            reason = "node-drain"
        elif (
            job.service_class in timed
            and cls.max_runtime is not None
            and job.started_at is not None
            and now - job.started_at >= cls.max_runtime
        ):
            reason = "max-runtime"
        if reason is not None and entry.running is not None:
            # stopped whole; its GPUs stay busy (and counted) through its grace period, and
            # without one they are free for this very cycle
            release = now + cls.grace_period
            ctx.stops.append(Stop(job.name, reason, None, release, reason != "max-runtime"))
            stopped.append(entry.running)
            if release > now:
                releases = ctx.releases.setdefault(job.flavor, [])
                releases.extend((release, node, n, job.queue) for node, n in entry.units.items())
            else:
                cap.give(job.flavor, entry.units)
                ctx.quota.add(job.queue, job.flavor, -entry.total)
    # a preemptor still waiting for its victims does not start on a node lost meanwhile
    for name, entry in sorted(book.waiting.items()):
        usable = book.layout.base_free.get(entry.job.flavor, {})
        if entry.running is not None and any(node not in usable for node in entry.units):
            ctx.stops.append(Stop(name, "node-failure", None, now, True))
            stopped.append(entry.running)
    ctx.stops.sort(key=lambda stop: stop.job)
    for running in stopped:  # no longer running for this cycle (undone before the next)
        ctx.mutated.append((running, dict(running.workers)))
        running.workers = {}
        running.preemptible_now = False
    return stopped
