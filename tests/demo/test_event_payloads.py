"""The demo's replayed history writes the very events the live platform writes.

Each scenario runs live (the cycle on the simulated cluster). Then, for every event it wrote,
the demo's writer (``demo.history_rows.HistoryWriter``) is given the same happening as the
replay records it (a ``Moment`` holding the engine's decision of that cycle) and must build the
same kind, the same sentence and the same data, to the byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest

from demo.history_rows import HistoryWriter
from demo.replay import Moment, first_worker_node
from demo.workload import JobRequest
from gpusched.engine.model import CycleResult
from queues.models import Job, JobEvent, ServiceClass
from queues.services import cycle as live_cycle
from queues.services import submit_job
from queues.services.snapshot import LiveSnapshot
from tests.queues.services.helpers import T0, build_world, later

pytestmark = pytest.mark.django_db

Kind = JobEvent.Kind
# what the demo writes: every kind but the cancellations (nobody cancels in the replay) and the
# changes to kubectl-applied workloads (the demo has no kubectl users)
DEMO_KINDS = set(Kind) - {Kind.CANCELLED, Kind.WORKLOAD}
Cycle = Callable[[datetime], Any]


@pytest.fixture(autouse=True)
def _live(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)
    settings.SIMULATION_SPEED = 60.0
    settings.SIMULATION_FAILURE_RATE = 0.0


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> dict[datetime, tuple[LiveSnapshot, CycleResult]]:
    """Each live cycle's snapshot and engine result, by the cycle's time."""
    seen: dict[datetime, tuple[LiveSnapshot, CycleResult]] = {}
    apply = live_cycle.apply_result

    def recording(live: LiveSnapshot, result: CycleResult, report: Any) -> Any:
        seen[live.now] = (live, result)
        return apply(live, result, report)

    monkeypatch.setattr(live_cycle, "apply_result", recording)
    return seen


class Writer(HistoryWriter):
    """The demo's writer over the live jobs: a replay name is the job's id, as in the live
    cycle."""

    def job(self, name: str | None) -> Job | None:
        if name is None:
            return None
        return Job.objects.select_related("queue__team", "queue__cohort", "service_class").get(
            pk=int(name)
        )


def request_of(job: Job) -> JobRequest:
    return JobRequest(
        team=job.queue.team.name,
        user=job.owner.get_username(),
        queue=job.queue.name,
        service_class=job.service_class.name,
        flavors=tuple(job.acceptable_flavor_names()),
        workers=job.workers,
        gpus_per_worker=job.gpus_per_worker,
        runtime_seconds=job.duration_hint or 0,
        name=job.name,
    )


def moment_of(
    event: JobEvent,
    job: Job,
    earlier: list[JobEvent],
    decisions: dict[datetime, tuple[LiveSnapshot, CycleResult]],
) -> Moment:
    """The happening behind a live event, as the replay records it."""
    t = event.at.timestamp()
    name = str(job.pk)
    live, result = decisions.get(event.at, (None, None))
    if event.kind == Kind.PENDING:
        assert result is not None
        return Moment(t, event.kind, info=result.pending[name])
    if event.kind == Kind.ADMITTED:
        assert result is not None
        return Moment(t, event.kind, admit=next(a for a in result.admits if a.job == name))
    if event.kind == Kind.SCALED:
        assert live is not None and result is not None
        scale = next(s for s in result.scales if s.job == name)
        before = sum(live.jobs[name].placement.values())
        return Moment(t, event.kind, scale=scale, workers_before=before)
    if "reason" in event.data:  # an engine stop
        assert result is not None
        return Moment(t, event.kind, stop=next(s for s in result.stops if s.job == name))
    admitted = next(e for e in reversed(earlier) if e.kind == Kind.ADMITTED).data
    if event.kind == Kind.STARTED:
        nodes = tuple(sorted(admitted["placement"]))
        return Moment(t, event.kind, nodes=nodes, workers=admitted["workers"])
    if "failures" in event.data:  # a worker failed
        node = first_worker_node(admitted["placement"], job.gpus_per_worker)
        return Moment(t, event.kind, failures=event.data["failures"], failed_node=node)
    return Moment(t, event.kind)  # succeeded, or requeued after the grace period


def payload(kind: str, message: str, data: dict[str, Any]) -> tuple[str, str, str]:
    """Kind, words and data as text with the keys sorted: PostgreSQL's jsonb keeps no key order."""
    return str(kind), message, json.dumps(data, sort_keys=True)


def compare(decisions: dict[datetime, tuple[LiveSnapshot, CycleResult]]) -> set[str]:
    """Every live event against the demo writer's; returns the kinds compared."""
    writer = Writer(None, [], T0, 60.0)  # type: ignore[arg-type]
    compared: set[str] = set()
    for job in Job.objects.select_related("queue__team", "queue__cohort", "service_class", "owner"):
        events = list(job.events.order_by("at", "pk"))
        for index, event in enumerate(events):
            live = payload(event.kind, event.message, event.data)
            if event.kind == Kind.SUBMITTED:
                said = writer.submitted(job, request_of(job))
            else:
                moment = moment_of(event, job, events[:index], decisions)
                said = writer.said(job, moment, event.at)
            assert payload(said.kind, said.message, said.data) == live, f"job {job.pk}"
            compared.add(event.kind)
    return compared


def submit(world: SimpleNamespace, *, team: str = "a", at: datetime = T0, **fields: Any) -> Job:
    fields.setdefault("duration_hint", 3600)
    fields.setdefault("service_class", world.standard)
    fields.setdefault("name", "train")
    return submit_job(
        owner=world.alice if team == "a" else world.bob,
        queue=world.queue_a if team == "a" else world.queue_b,
        image="pytorch/pytorch:2.4.0",
        flavors=[world.h100],
        now=at,
        **fields,
    )


# --- the scenarios -----------------------------------------------------------------------------
def reclaim_with_a_grace_period(world: SimpleNamespace, cycle: Cycle, settings: Any) -> None:
    submit(world, team="b", service_class=world.spot, gpus_per_worker=8, workers=2)
    cycle(T0)
    cycle(later(1))
    submit(world, team="a", gpus_per_worker=8, name="owner", at=later(10))
    for second in (11, 20, 42, 43):
        cycle(later(second))


def waiting_for_room(world: SimpleNamespace, cycle: Cycle, settings: Any) -> None:
    submit(world, team="a", gpus_per_worker=8, workers=2, name="big")
    submit(world, team="b", gpus_per_worker=8, name="waits", at=later(1))
    for second in (2, 3, 4):
        cycle(later(second))


def elastic_shrink(world: SimpleNamespace, cycle: Cycle, settings: Any) -> None:
    submit(world, team="b", service_class=world.spot, gpus_per_worker=4, workers=4, min_workers=1)
    cycle(T0)
    cycle(later(1))
    submit(world, team="a", gpus_per_worker=8, name="owner", at=later(10))
    cycle(later(11))


def past_the_maximum_runtime(world: SimpleNamespace, cycle: Cycle, settings: Any) -> None:
    ServiceClass.objects.filter(pk=world.standard.pk).update(max_runtime=60)
    submit(world, gpus_per_worker=8, duration_hint=86400)
    for second in (0, 1, 70):
        cycle(later(second))


def failing_workers(world: SimpleNamespace, cycle: Cycle, settings: Any) -> None:
    settings.SIMULATION_FAILURE_RATE = 1.0
    submit(world, gpus_per_worker=4, workers=2, duration_hint=600)
    for second in range(0, 200, 5):
        cycle(later(second))


def to_the_end(world: SimpleNamespace, cycle: Cycle, settings: Any) -> None:
    submit(world, gpus_per_worker=8, duration_hint=120)
    for second in range(0, 30, 3):
        cycle(later(second))


def priority_requeues_at_once(world: SimpleNamespace, cycle: Cycle, settings: Any) -> None:
    submit(world, team="a", gpus_per_worker=8, name="low")  # standard: no grace period
    submit(world, team="b", gpus_per_worker=8, name="other-team")
    cycle(T0)
    cycle(later(1))
    submit(world, team="a", service_class=world.production, gpus_per_worker=8, at=later(5))
    cycle(later(6))


# each scenario, and the kinds its events must include
SCENARIOS: dict[str, tuple[Callable[[SimpleNamespace, Cycle, Any], None], set[str]]] = {
    "reclaim with a grace period": (
        reclaim_with_a_grace_period,
        {Kind.SUBMITTED, Kind.ADMITTED, Kind.STARTED, Kind.PREEMPTED, Kind.REQUEUED},
    ),
    "waiting for room": (waiting_for_room, {Kind.PENDING}),
    "elastic shrink": (elastic_shrink, {Kind.SCALED}),
    "past the maximum runtime": (past_the_maximum_runtime, {Kind.FAILED}),
    "failing workers": (failing_workers, {Kind.REQUEUED, Kind.FAILED}),
    "to the end": (to_the_end, {Kind.SUCCEEDED}),
    "priority requeues at once": (priority_requeues_at_once, {Kind.REQUEUED}),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_demo_writes_the_live_events_payloads(
    name: str,
    decisions: dict[datetime, tuple[LiveSnapshot, CycleResult]],
    cycle: Cycle,
    settings: Any,
) -> None:
    scenario, kinds = SCENARIOS[name]
    scenario(build_world(), cycle, settings)
    assert kinds <= compare(decisions)


def test_the_scenarios_cover_every_kind_the_demo_writes() -> None:
    assert set().union(*(kinds for _, kinds in SCENARIOS.values())) == DEMO_KINDS
