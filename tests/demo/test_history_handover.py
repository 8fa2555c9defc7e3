"""The replayed history ends mid-story and the live cycles carry it on: a reclaim decided just
before ``now`` (the victim in its grace period, the preemptor waiting for its GPUs) finishes
in the live demo exactly as one decided live would."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command

from demo.history import simulate_history
from demo.history_rows import HistoryWriter
from demo.workload import JobRequest
from queues.models import Job, JobEvent, SimulatedWorkload
from queues.services import run_cycle

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)  # a Monday
START = NOW - timedelta(hours=4)


def request(user: str, team: str, service_class: str, name: str, hours: float) -> JobRequest:
    return JobRequest(
        team=team,
        user=user,
        queue="main",
        service_class=service_class,
        flavors=("h100",),
        workers=1,
        gpus_per_worker=8,
        runtime_seconds=int(hours * 3600),
        name=name,
    )


@pytest.fixture
def replayed(settings: Any) -> dict[str, Job]:
    """Team A fills the 32 H100s (16 of them borrowed); a minute before now team C's production
    job reclaims its nominal 8. Written as the seed writes a history."""
    settings.SIMULATION_FAILURE_RATE = 0.0
    call_command("seed_demo", history=0, stdout=None, allow_production=True)
    requests = [
        (START + timedelta(minutes=i), request("alice", "team-a", "standard", f"train-{i}", 10))
        for i in range(4)
    ]
    requests.append(
        (NOW - timedelta(minutes=1), request("carol", "team-c", "production", "release", 5))
    )
    sim = simulate_history(requests, START, NOW)
    HistoryWriter(sim, requests, NOW, float(settings.SIMULATION_SPEED)).write()
    jobs = {job.name: job for job in Job.objects.all()}
    return jobs | {"victim": Job.objects.get(state=Job.State.PREEMPTED)}


def fresh(job: Job) -> Job:
    return Job.objects.select_related("runtime").get(pk=job.pk)


def test_the_reclaim_in_progress_is_written_as_the_live_apply_writes_it(
    replayed: dict[str, Job], settings: Any
) -> None:
    victim, preemptor = fresh(replayed["victim"]), fresh(replayed["release"])
    release = NOW + timedelta(seconds=60)  # the standard class's 120 s grace, a minute ago
    assert victim.queue.team.name == "team-a"
    assert (victim.runtime.stop_reason, victim.runtime.stop_by_id) == ("reclaim", preemptor.pk)
    assert victim.runtime.release_at == release
    stop = victim.events.latest("at", "pk")
    assert stop.kind == "preempted"
    assert stop.data == {"reason": "reclaim", "by": str(preemptor.pk)}
    assert stop.message.startswith(
        f"Preempted by release (#{preemptor.pk}) of queue team-c/main, which reclaims its "
        "nominal quota: queue team-a/main was borrowing above its nominal quota."
    )
    assert preemptor.state == Job.State.ADMITTED
    assert preemptor.runtime.start_at == release
    assert preemptor.placement == victim.placement
    assert "Starts at 2026-03-02 12:01:00 UTC" in preemptor.events.get(kind="admitted").message
    # on the simulated cluster: the victim's workers stop within what is left of its grace
    # period on the live clock; the preemptor has none yet
    workload = SimulatedWorkload.objects.get(job_id=str(victim.pk))
    assert workload.gone_at == NOW + timedelta(seconds=60) / float(settings.SIMULATION_SPEED)
    assert not SimulatedWorkload.objects.filter(job_id=str(preemptor.pk)).exists()


def test_live_cycles_finish_the_reclaim_and_keep_the_rest_running(
    replayed: dict[str, Job], django_capture_on_commit_callbacks: Any
) -> None:
    victim, preemptor = replayed["victim"], replayed["release"]
    others = list(Job.objects.filter(state=Job.State.RUNNING))
    assert len(others) == 3
    first_new_event = JobEvent.objects.order_by("-pk").values_list("pk", flat=True)[0] + 1

    with django_capture_on_commit_callbacks(execute=True):
        run_cycle(now=NOW + timedelta(seconds=10))  # within the grace period: nothing changes
    assert (fresh(victim).state, fresh(preemptor).state) == ("preempted", "admitted")
    assert not JobEvent.objects.filter(pk__gte=first_new_event).exists()

    with django_capture_on_commit_callbacks(execute=True):
        run_cycle(now=NOW + timedelta(seconds=61))  # grace over: victim requeued, preemptor out
    with django_capture_on_commit_callbacks(execute=True):
        run_cycle(now=NOW + timedelta(seconds=62))

    assert fresh(victim).state == Job.State.PENDING
    assert fresh(preemptor).state == Job.State.RUNNING
    new = list(
        JobEvent.objects.filter(pk__gte=first_new_event).values_list("job_id", "kind", "message")
    )
    assert [(job, kind) for job, kind, _ in new if kind != "pending"] == [
        (victim.pk, "requeued"),
        (preemptor.pk, "started"),
    ]
    assert new[0][2].startswith("Back in the queue after its preemption")
    for job in others:
        assert (fresh(job).state, fresh(job).placement) == ("running", job.placement)
    assert preemptor.events.filter(kind="admitted").count() == 1
