"""The snapshot is read in a fixed number of queries; applying decisions twice is harmless."""

from __future__ import annotations

from django.db import transaction

from gpusched.engine.cycle import run_cycle as decide
from queues.models import Job, JobEvent
from queues.services.apply import apply_result
from queues.services.report import CycleReport
from queues.services.snapshot import build_snapshot
from tests.queues.services.helpers import T0, later

SNAPSHOT_QUERIES = 10


def test_snapshot_takes_the_same_number_of_queries_for_few_and_many_jobs(
    world, submit, cycle, django_assert_num_queries
):
    submit(gpus=8, duration_hint=86400)
    cycle(T0)
    with django_assert_num_queries(SNAPSHOT_QUERIES):
        few = build_snapshot(later(1))

    for i in range(40):
        submit(
            gpus=1 + i % 4,
            name=f"job-{i}",
            at=later(i),
            topology_level="rack",
            topology_mode="preferred",
        )
    cycle(later(60))
    with django_assert_num_queries(SNAPSHOT_QUERIES):
        many = build_snapshot(later(61))

    assert len(few.snapshot.pending) + len(few.snapshot.admitted) == 1
    assert len(many.snapshot.pending) + len(many.snapshot.admitted) == 41
    assert many.snapshot.admitted and many.snapshot.pending


def test_snapshot_names_jobs_by_id_and_queues_by_team(world, submit):
    job = submit(gpus=2, workers=3)

    snapshot = build_snapshot(later(1)).snapshot

    (pending,) = snapshot.pending
    assert pending.name == str(job.pk)
    assert pending.queue == "team-a/main"
    assert pending.flavors == ("h100",)
    assert (pending.workers, pending.gpus_per_worker) == (3, 2)
    assert {q.name for q in snapshot.queues} == {"team-a/main", "team-b/main"}
    assert snapshot.queues[0].cohort == "research"


def test_snapshot_tells_the_engine_how_often_a_running_job_was_stopped_and_its_checkpoints(
    world, submit, cycle
):
    """Rule 5 picks the victim that loses the least work and takes jobs already stopped last."""
    job = submit(gpus=1, checkpoint_interval=600)
    cycle(T0)
    Job.objects.filter(pk=job.pk).update(preemption_count=2)  # stopped and requeued twice

    (admitted,) = build_snapshot(later(1)).snapshot.admitted

    assert admitted.name == str(job.pk)
    assert admitted.stops == 2
    assert admitted.checkpoint_interval == 600 / 60  # wall seconds: the world's cluster runs 60x


def test_applying_the_same_decisions_twice_changes_nothing_the_second_time(world, submit):
    for i in range(3):
        submit(gpus=8, name=f"job-{i}", at=later(i))
    now = later(10)
    first = build_snapshot(now)
    second = build_snapshot(now)  # a second worker that read the same state
    result = decide(first.snapshot)
    assert len(result.admits) == 2

    with transaction.atomic():
        apply_result(first, result, CycleReport(now=now))
    states = {j.pk: (j.state, j.cluster_id, j.placement) for j in Job.objects.all()}
    events = JobEvent.objects.count()
    with transaction.atomic():
        effects = apply_result(second, result, CycleReport(now=now))

    assert {j.pk: (j.state, j.cluster_id, j.placement) for j in Job.objects.all()} == states
    assert JobEvent.objects.count() == events
    assert effects == []
    assert Job.objects.filter(state=Job.State.ADMITTED).count() == 2


def test_snapshot_takes_half_life_and_default_runtime_from_settings(world, settings):
    settings.FAIRSHARE_HALF_LIFE = 24 * 3600
    settings.DEFAULT_JOB_RUNTIME = 1800

    snapshot = build_snapshot(later(1)).snapshot

    assert snapshot.half_life == 24 * 3600
    assert snapshot.default_runtime == 1800 / 60  # in wall seconds: the world's cluster runs 60x
