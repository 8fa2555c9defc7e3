"""Running jobs past their estimated runtimes (issue 27): the jobs waiting for them are told so in
words that stay the same from cycle to cycle, with no estimated start that moves with the clock,
so a steady live cycle rewrites none of their explanations (docs/SCHEDULING.md, "Estimated
start")."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.models import Job, JobRuntime
from tests.queues.services.helpers import later

OVERDUE = "they have run past their estimated runtimes."


def runtime_writes(cycle: Callable[[datetime], Any], at: datetime) -> int:
    """The statements of one cycle at ``at`` that write JobRuntime rows."""
    with CaptureQueriesContext(connection) as queries:
        cycle(at)
    return sum(
        1
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE"))
        and '"queues_jobruntime"' in q["sql"]
    )


def explanations() -> dict[int, tuple[str, str, datetime | None]]:
    return {
        r.job_id: (r.pending_reason, r.pending_message, r.estimated_start)
        for r in JobRuntime.objects.filter(job__state=Job.State.PENDING)
    }


def fill_both_nodes(submit: Callable[..., Job], cycle: Callable[[datetime], Any]) -> None:
    """An 8-GPU job per team, started at later(3): estimated 10 job minutes (10 wall-clock
    seconds at 60x, so they end by their estimates at about later(13)), running 10 job hours."""
    for team in ("a", "b"):
        submit(team=team, gpus=8, name=f"runs-{team}", estimated_runtime=600, duration_hint=36000)
    cycle(later(1))
    cycle(later(3))


def test_steady_cycles_with_overdue_running_jobs_rewrite_no_explanation(
    world: SimpleNamespace, submit: Callable[..., Job], cycle: Callable[[datetime], Any]
) -> None:
    fill_both_nodes(submit, cycle)
    assert Job.objects.filter(state=Job.State.RUNNING).count() == 2  # both nodes full
    for i, team in enumerate(("a", "a", "b")):
        submit(team=team, gpus=8, name=f"waits-{i}", at=later(4), estimated_runtime=600)
    cycle(later(5))  # the running jobs end by their estimates at about later(13)
    cycle(later(60))  # now they are overdue: the waiting jobs are told so
    told = explanations()
    assert len(told) == 3
    for _reason, message, estimate in told.values():
        assert message.endswith(
            "Estimated start: as soon as the running jobs it waits for end; " + OVERDUE
        ), message
        assert estimate is None  # no time that moves with the clock

    writes = runtime_writes(cycle, later(90))  # nothing changed but the clock

    assert writes == 0
    assert explanations() == told
    assert Job.objects.filter(state=Job.State.RUNNING).count() == 2


def test_a_future_estimate_is_still_a_time(
    world: SimpleNamespace, submit: Callable[..., Job], cycle: Callable[[datetime], Any]
) -> None:
    fill_both_nodes(submit, cycle)
    waiting = submit(team="a", gpus=8, name="waits", at=later(4), estimated_runtime=600)
    cycle(later(5))
    runtime = JobRuntime.objects.get(job=waiting)
    assert runtime.estimated_start == later(13)  # started at 3, 600 job seconds = 10 s wall
    assert runtime.pending_message.endswith("Estimated start: 2026-03-02 09:00:13 UTC.")
    assert OVERDUE not in runtime.pending_message
