"""A job's life on the simulated cluster: submitted, admitted, running, succeeded."""

from __future__ import annotations

from queues.models import Job, JobEvent
from tests.queues.services.helpers import T0, kinds, last_message, later


def test_submitted_job_is_admitted_runs_and_succeeds_with_events(world, submit, cycle, reload):
    job = submit(gpus=4, workers=2, duration_hint=600)  # 10 simulated minutes: 10 s at 60x

    report = cycle(T0)
    job = reload(job)
    assert job.state == Job.State.ADMITTED
    assert sum(job.placement.values()) == 2
    assert job.cluster == world.cluster
    admitted = last_message(job, "admitted")
    assert "Admitted to cluster sim on" in admitted
    assert "within queue team-a/main's nominal quota" in admitted
    assert any(line.startswith("admitted: train") for line in report.lines)

    cycle(later(1))
    job = reload(job)
    assert job.state == Job.State.RUNNING
    assert job.started_at == later(1)

    cycle(later(5))
    assert reload(job).state == Job.State.RUNNING

    cycle(later(11))
    job = reload(job)
    assert job.state == Job.State.SUCCEEDED
    assert kinds(job) == ["submitted", "admitted", "started", "succeeded"]


def test_job_that_does_not_fit_stays_pending_with_a_reason(world, submit, cycle, reload):
    running = submit(gpus=8, workers=2, name="big")
    cycle(T0)
    waiting = submit(gpus=8, name="small", at=later(1))

    cycle(later(2))

    waiting = reload(waiting)
    assert reload(running).state == Job.State.RUNNING
    assert waiting.state == Job.State.PENDING
    assert waiting.runtime.pending_reason
    assert "in queue team-a/main" in waiting.runtime.pending_message
    assert kinds(waiting) == ["submitted", "pending"]


def test_pending_reason_is_recorded_once_while_it_does_not_change(world, submit, cycle, reload):
    submit(gpus=8, workers=2, name="big")
    cycle(T0)
    waiting = submit(gpus=8, name="small", at=later(1))

    for second in (2, 3, 4):
        cycle(later(second))

    assert kinds(reload(waiting)).count("pending") == 1


def test_rerunning_a_cycle_at_the_same_moment_admits_and_stops_nothing_twice(
    world, submit, cycle, reload
):
    submit(gpus=8, workers=2, name="big")
    submit(gpus=8, name="small", at=later(1))
    cycle(later(2))
    placements = {j.pk: (j.cluster_id, j.placement) for j in Job.objects.all()}
    decisions = list(
        JobEvent.objects.exclude(kind="started").values_list("job_id", "kind", "message")
    )

    report = cycle(later(2))

    assert {j.pk: (j.cluster_id, j.placement) for j in Job.objects.all()} == placements
    assert (
        list(JobEvent.objects.exclude(kind="started").values_list("job_id", "kind", "message"))
        == decisions
    )
    assert report.counts["admitted"] == 0
    assert report.counts["preempted"] == 0


def test_launch_lost_in_a_crash_after_commit_is_redone_by_the_next_cycle(
    world, submit, reload, cycle, django_capture_on_commit_callbacks
):
    from queues.models import SimulatedWorkload
    from queues.services import run_cycle

    job = submit(gpus=8)
    with django_capture_on_commit_callbacks(execute=False):  # the worker died after commit
        run_cycle(now=T0)
    assert reload(job).state == Job.State.ADMITTED
    assert not SimulatedWorkload.objects.exists()

    cycle(later(1))
    assert SimulatedWorkload.objects.filter(job_id=str(job.pk)).count() == 1
    cycle(later(2))

    job = reload(job)
    assert job.state == Job.State.RUNNING
    assert kinds(job).count("admitted") == 1


def test_elastic_job_starts_smaller_and_grows_into_freed_gpus(world, submit, cycle, reload):
    short = submit(gpus=8, name="short", duration_hint=600)
    cycle(T0)
    elastic = submit(
        gpus=4, workers=4, min_workers=1, name="elastic", at=later(1), duration_hint=86400
    )
    cycle(later(2))
    elastic = reload(elastic)
    assert elastic.state == Job.State.ADMITTED
    assert elastic.current_workers == 2

    cycle(later(12))  # short ends after 10 s: its node comes free
    cycle(later(13))

    elastic = reload(elastic)
    assert reload(short).state == Job.State.SUCCEEDED
    assert elastic.current_workers == 4
    assert sum(elastic.placement.values()) == 4
    assert "Grew from 2 to 4 workers" in last_message(elastic, "scaled")
    assert len(elastic.runtime.worker_nodes) == 4


def test_job_with_required_rack_topology_runs_inside_one_rack(world, submit, cycle, reload):
    job = submit(gpus=4, workers=2, topology_level="rack", topology_mode="required")

    cycle(T0)

    job = reload(job)
    assert job.state == Job.State.ADMITTED
    assert len(job.placement) == 1  # the two racks hold one node each: both workers share one
