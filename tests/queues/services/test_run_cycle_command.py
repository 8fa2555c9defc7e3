"""``manage.py run_cycle`` prints the cycle's decisions in readable lines."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from queues.models import Job


def test_run_cycle_command_prints_each_admission_and_a_summary(world, submit):
    job = submit(gpus=4, workers=2, name="resnet")
    out = StringIO()

    call_command("run_cycle", stdout=out)

    text = out.getvalue()
    assert f"admitted: resnet (#{job.pk}): Admitted to cluster sim on" in text
    assert "admitted 1, pending 0" in text
    assert Job.objects.get(pk=job.pk).state == Job.State.ADMITTED


def test_run_cycle_command_explains_a_skipped_cycle(world, submit):
    from queues.services import lease

    lease.acquire("another-worker")
    out = StringIO()

    call_command("run_cycle", stdout=out)

    assert "skipped: another worker holds the scheduling lease" in out.getvalue()


def test_run_cycle_command_prints_why_jobs_wait_when_asked(world, submit):
    submit(gpus=8, workers=2, name="fills-the-cluster")
    call_command("run_cycle", stdout=StringIO())
    waiting = submit(gpus=8, name="waits")
    out = StringIO()

    call_command("run_cycle", "--pending", "5", stdout=out)

    assert f"pending: waits (#{waiting.pk}): #1 in queue team-a/main." in out.getvalue()
