"""Admissions are written in bulk (issue 27): a cycle that admits 50 jobs runs about as many
queries as one that admits 5 (the jobs moved in one UPDATE, their runtime rows in one upsert,
each queue's admission counter incremented once), and what it writes is what one-by-one writes
wrote: state, placement, runtime row, event, counter."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.models import Job, JobEvent, JobRuntime, MetricCounter, Node, Quota
from queues.services import run_cycle
from tests.queues.services.helpers import later


def roomy(world: SimpleNamespace) -> None:
    """Room for 60 one-GPU jobs in each team's quota and on the nodes."""
    for i in range(3, 17):
        Node.objects.create(cluster=world.cluster, name=f"n{i}", capacity={"h100": 8})
    for quota in Quota.objects.all():
        quota.nominal = 64
        quota.save()


def cycle_queries(at: float) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        run_cycle(now=later(at))
    sql = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    return len(sql), sql


def test_a_cycle_admitting_50_jobs_runs_about_the_queries_of_one_admitting_5(
    world: SimpleNamespace, submit: Any
) -> None:
    roomy(world)
    run_cycle(now=later(0))  # the first cycle's one-off writes (metric rows, usage times)
    few = [submit(gpus=1, name=f"few-{i}", team="ab"[i % 2], at=later(1)) for i in range(5)]
    with_five, _ = cycle_queries(2)
    many = [submit(gpus=1, name=f"many-{i}", team="ab"[i % 2], at=later(3)) for i in range(50)]
    with_fifty, sql = cycle_queries(4)

    jobs = Job.objects.filter(pk__in=[j.pk for j in few + many])
    assert set(jobs.values_list("state", flat=True)) == {Job.State.ADMITTED}
    print(f"queries: a cycle admitting 5 jobs {with_five}, 50 jobs {with_fifty}")
    assert with_fifty <= with_five + 10  # not 3 x 45 more: nothing is written one job at a time
    counter_writes = [q for q in sql if "gpuplatform_admitted_workloads_total" in q]
    assert len(counter_writes) <= 2 * 2  # once per queue (an UPDATE, or an INSERT first time)


def test_bulk_admissions_write_what_each_admission_needs(
    world: SimpleNamespace, submit: Any
) -> None:
    roomy(world)
    jobs = [submit(gpus=1, name=f"job-{i}", team="ab"[i % 2]) for i in range(6)]
    JobRuntime.objects.filter(job=jobs[0]).delete()  # a job without a runtime row gets one
    run_cycle(now=later(1))

    for job in Job.objects.filter(pk__in=[j.pk for j in jobs]).select_related("runtime"):
        assert job.state == Job.State.ADMITTED and job.admitted_at == later(1)
        assert job.cluster_id == world.cluster.pk and job.current_workers == 1
        assert sum(job.placement.values()) == 1
        node = next(iter(job.placement))
        assert job.runtime.flavor_id == world.h100.pk
        assert job.runtime.worker_nodes == [[0, node]]
        assert job.runtime.pending_reason == "" and job.runtime.estimated_start is None
        assert JobEvent.objects.filter(job=job, kind=JobEvent.Kind.ADMITTED).count() == 1
    counts = dict(
        MetricCounter.objects.filter(name="gpuplatform_admitted_workloads_total").values_list(
            "labels", "value"
        )
    )
    assert counts == {'queue="team-a/main"': 3.0, 'queue="team-b/main"': 3.0}


def test_a_job_cancelled_before_the_admissions_are_written_stays_cancelled(
    world: SimpleNamespace, submit: Any, monkeypatch: Any
) -> None:
    from queues.services import apply

    jobs = [submit(gpus=1, name=f"job-{i}") for i in range(2)]
    real = apply.Applier.write_admits

    def cancel_first(self: Any) -> None:  # another request cancels while the cycle decides
        Job.objects.filter(pk=jobs[0].pk).update(state=Job.State.CANCELLED)
        real(self)

    monkeypatch.setattr(apply.Applier, "write_admits", cancel_first)
    run_cycle(now=later(1))
    assert Job.objects.get(pk=jobs[0].pk).state == Job.State.CANCELLED
    assert Job.objects.get(pk=jobs[1].pk).state == Job.State.ADMITTED
    assert not JobEvent.objects.filter(job=jobs[0], kind=JobEvent.Kind.ADMITTED).exists()
