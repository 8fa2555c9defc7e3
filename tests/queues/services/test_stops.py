"""Jobs that stop before they end: preemption, node failure, worker failure, max runtime,
cancellation. Each gets an event that says why."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from queues.models import Job, ServiceClass
from queues.services import cancel_job, fail_nodes, recover_nodes
from tests.queues.services.helpers import T0, kinds, last_message, later


def test_within_nominal_job_reclaims_gpus_from_a_borrowing_queue(world, submit, cycle, reload):
    borrower = submit(team="b", cls="spot", gpus=8, workers=2, name="borrower")
    cycle(T0)
    cycle(later(1))
    assert reload(borrower).state == Job.State.RUNNING
    owner = submit(team="a", gpus=8, name="owner", at=later(10))

    cycle(later(11))

    borrower, owner = reload(borrower), reload(owner)
    assert borrower.state == Job.State.PREEMPTED
    assert owner.state == Job.State.ADMITTED
    text = last_message(borrower, "preempted")
    assert f"Preempted by owner (#{owner.pk}) of queue team-a/main" in text
    assert "reclaims its nominal quota" in text
    assert "30 s grace period" in text
    assert "Starts at 2026-03-02 09:00:41 UTC" in last_message(owner, "admitted")

    cycle(later(20))  # grace period running: the preemptor waits, nothing launched yet
    assert reload(owner).state == Job.State.ADMITTED

    cycle(later(42))
    borrower = reload(borrower)
    assert borrower.state == Job.State.PENDING
    assert borrower.submitted_at == T0
    assert borrower.preemption_count == 1
    assert kinds(borrower)[-2:] == ["requeued", "pending"]
    cycle(later(43))
    assert reload(owner).state == Job.State.RUNNING


def test_node_failure_requeues_the_whole_gang_and_it_restarts_elsewhere(
    world, submit, cycle, reload
):
    job = submit(gpus=4, workers=2)
    cycle(T0)
    cycle(later(1))
    job = reload(job)
    (node_name,) = job.placement
    failed = next(n for n in world.nodes if n.name == node_name)

    fail_nodes([failed])
    cycle(later(2))

    job = reload(job)
    assert job.state == Job.State.PENDING
    assert job.submitted_at == T0
    assert f"Node {node_name} failed: the whole gang is stopped and requeued" in last_message(
        job, "requeued"
    )
    cycle(later(3))
    job = reload(job)
    assert job.state == Job.State.ADMITTED
    assert node_name not in job.placement

    recover_nodes([failed])
    failed.refresh_from_db()
    assert failed.ready


def test_failed_worker_restarts_the_gang_then_fails_the_job_after_three_failures(
    world, submit, cycle, reload, settings
):
    settings.SIMULATION_FAILURE_RATE = 1.0
    job = submit(gpus=4, workers=2, duration_hint=600)

    for second in range(0, 200, 5):
        cycle(later(second))

    job = reload(job)
    assert job.state == Job.State.FAILED
    assert job.runtime.failures == 3
    assert kinds(job).count("requeued") == 2
    assert "simulated failure: exit code 1" in last_message(job, "failed")
    assert "failed 3 times, the limit" in last_message(job, "failed")


def test_job_past_its_class_maximum_runtime_is_stopped_and_failed(world, submit, cycle, reload):
    ServiceClass.objects.filter(pk=world.standard.pk).update(max_runtime=60)
    job = submit(gpus=8, duration_hint=86400)
    cycle(T0)
    cycle(later(1))

    cycle(later(70))

    job = reload(job)
    assert job.state == Job.State.FAILED
    assert "maximum runtime of class standard (60 s)" in last_message(job, "failed")


def test_cancelled_job_keeps_its_gpus_until_the_grace_period_ends(world, submit, cycle, reload):
    running = submit(cls="spot", gpus=8, workers=2, name="spot-job")
    cycle(T0)
    cycle(later(1))
    cancel_job(running, world.alice, now=later(5))
    waiting = submit(team="b", gpus=8, name="next", at=later(6))

    cycle(later(7))
    running = reload(running)
    assert running.state == Job.State.CANCELLED
    assert "30 s grace period" in last_message(running, "cancelled")
    assert reload(waiting).state == Job.State.PENDING

    cycle(later(36))
    assert reload(waiting).state == Job.State.ADMITTED


def test_pending_job_is_cancelled_at_once(world, submit, cycle, reload):
    job = submit(gpus=8)
    cancel_job(job, world.alice, now=later(1))

    cycle(later(2))

    job = reload(job)
    assert job.state == Job.State.CANCELLED
    assert kinds(job) == ["submitted", "cancelled"]


def test_researcher_cannot_cancel_other_teams_job(world, submit):
    job = submit(team="a", gpus=8)

    with pytest.raises(PermissionDenied):
        cancel_job(job, world.bob)
    assert Job.objects.get(pk=job.pk).state == Job.State.PENDING


def test_platform_admin_fails_and_recovers_a_node_from_the_admin_site(world, client):
    from django.contrib.auth.models import User

    from gpuplatform.access import PLATFORM_ADMIN_GROUP
    from queues.models import Node

    admin = User.objects.create_user("pat", password="x-pat-pass-1", is_staff=True)
    admin.groups.create(name=PLATFORM_ADMIN_GROUP)
    client.force_login(admin)
    node = world.nodes[0]

    client.post("/admin/queues/node/", {"action": "fail_node", "_selected_action": [node.pk]})
    assert not Node.objects.get(pk=node.pk).ready
    client.post("/admin/queues/node/", {"action": "recover_node", "_selected_action": [node.pk]})
    assert Node.objects.get(pk=node.pk).ready


def test_elastic_borrower_is_shrunk_rather_than_stopped_to_reclaim_quota(
    world, submit, cycle, reload
):
    elastic = submit(team="b", cls="spot", gpus=4, workers=4, min_workers=1, name="elastic")
    cycle(T0)
    cycle(later(1))
    assert reload(elastic).current_workers == 4
    owner = submit(team="a", gpus=8, name="owner", at=later(10))

    cycle(later(11))

    elastic, owner = reload(elastic), reload(owner)
    assert elastic.state == Job.State.RUNNING
    assert elastic.current_workers == 2
    assert f"Shrunk from 4 to 2 workers for owner (#{owner.pk}) (reclaim)" in last_message(
        elastic, "scaled"
    )
    assert owner.state == Job.State.ADMITTED
    assert len(elastic.runtime.worker_nodes) == 2


def test_requeued_job_is_not_taken_for_running_while_its_old_workers_terminate(
    world, submit, cycle, reload, settings
):
    from queues.models import SimulatedWorkload

    settings.SIMULATION_SPEED = 1.0  # the old workers take the whole grace period to go
    job = submit(gpus=8, workers=2)  # class standard: no grace period, requeued at once
    cycle(T0)
    cycle(later(1))
    failed = world.nodes[0]
    fail_nodes([failed])
    cycle(later(2))  # requeued; its workers are told to stop
    recover_nodes([failed])
    SimulatedWorkload.objects.filter(job_id=str(job.pk)).update(gone_at=later(60))

    cycle(later(3))  # admitted again while the old workers still terminate
    cycle(later(4))

    assert reload(job).state == Job.State.ADMITTED
    cycle(later(61))  # the old workers are gone: this run launches
    cycle(later(62))
    assert reload(job).state == Job.State.RUNNING


def test_node_failure_gives_the_gang_its_grace_period_before_the_requeue(
    world, submit, cycle, reload
):
    job = submit(gpus=8, workers=2, cls="spot")  # grace period 30 s
    cycle(T0)
    cycle(later(1))

    fail_nodes([world.nodes[0]])
    cycle(later(2))

    job = reload(job)
    assert job.state == Job.State.PREEMPTED
    assert "Node n1 failed: the whole gang is stopped. It stops with a 30 s grace period" in (
        last_message(job, "preempted")
    )
    cycle(later(33))
    job = reload(job)
    assert job.state == Job.State.PENDING
    assert job.submitted_at == T0


def test_higher_priority_job_preempts_a_lower_priority_job_of_its_own_queue(
    world, submit, cycle, reload
):
    low = submit(team="a", cls="spot", gpus=8, name="low")
    other = submit(team="b", gpus=8, name="other-team")
    cycle(T0)
    cycle(later(1))
    high = submit(team="a", cls="production", gpus=8, name="high", at=later(5))

    cycle(later(6))

    assert reload(other).state == Job.State.RUNNING
    assert reload(low).state == Job.State.PREEMPTED
    assert (
        f"Preempted by higher-priority high (#{high.pk}) (class production, priority 1000) "
        "of the same queue." in last_message(low, "preempted")
    )
    assert reload(high).state == Job.State.ADMITTED


def test_a_class_min_runtime_is_in_job_seconds_like_its_runtimes(world, submit, cycle, reload):
    """One clock (issue 24): at SIMULATION_SPEED 60 a class's min_runtime of 600 job seconds
    protects a job 10 wall-clock seconds, as its 4 h runtime takes 4 wall minutes; before the
    fix it protected for 600 wall seconds, longer than most of the demo's jobs ran."""
    ServiceClass.objects.filter(name="spot").update(min_runtime=600)
    borrower = submit(team="b", cls="spot", gpus=8, workers=2, name="borrower")
    cycle(T0)
    cycle(later(1))
    assert reload(borrower).state == Job.State.RUNNING
    owner = submit(team="a", gpus=8, name="owner", at=later(5))

    cycle(later(6))  # started at 09:00:01, protected until 09:00:11
    assert reload(borrower).state == Job.State.RUNNING
    assert reload(owner).state == Job.State.PENDING

    cycle(later(12))  # protection over: reclaimed
    assert reload(borrower).state == Job.State.PREEMPTED
    assert reload(owner).state == Job.State.ADMITTED
