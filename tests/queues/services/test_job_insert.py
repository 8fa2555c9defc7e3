"""One job written in one statement on PostgreSQL (queues/services/job_insert.py): the same rows
as the ORM's four INSERTs, the objects left as ``bulk_create`` leaves them, and no transaction
of its own. Elsewhere (SQLite) ``submit_job`` keeps the ORM's path."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.models import Flavor, Job, JobEvent, JobFlavor, JobRuntime, Node, Quota
from queues.services import job_insert, submit_job
from queues.services.jobs import prepare_job, write_jobs

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the one statement is PostgreSQL's"
)
AT = datetime(2026, 11, 27, 1, 2, 3, 456789, tzinfo=UTC)


def _two_flavors(world: Any) -> list[Flavor]:
    a100 = Flavor.objects.create(name="a100", resource="nvidia.com/gpu", gpu_model="A100")
    Quota.objects.create(queue=world.queue_a, flavor=a100, nominal=8)
    Node.objects.create(cluster=world.cluster, name="a1", capacity={"a100": 8})
    return [a100, world.h100]


def _prepared(world: Any, flavors: list[Flavor], name: str) -> Any:
    return prepare_job(
        owner=world.alice,
        queue=world.queue_a,
        service_class=world.standard,
        name=name,
        image="pytorch/pytorch:2.4.0",
        command=["python", "train.py", "--note", 'it\'s "quoted" ü'],
        flavors=flavors,
        workers=2,
        gpus_per_worker=4,
        min_workers=1,
        topology_level="rack",
        topology_mode="preferred",
        estimated_runtime=3600,
        checkpoint_interval=600,
        duration_hint=7200,
        spec={"env": [{"name": "MODE", "value": "fast"}], "shm_size": "16Gi"},
        now=AT,
    )


def _written(job_id: int) -> dict[str, Any]:
    """Every column of the job's rows but their own ids and the job's id and name."""
    job = Job.objects.filter(pk=job_id).values().get()
    runtime = JobRuntime.objects.filter(job_id=job_id).values().get()
    for row, keys in ((job, ("id", "name")), (runtime, ("job_id",))):
        for key in keys:
            row.pop(key)
    return {
        "job": job,
        "links": list(
            JobFlavor.objects.filter(job_id=job_id).order_by("rank").values("flavor_id", "rank")
        ),
        "runtime": runtime,
        "events": list(
            JobEvent.objects.filter(job_id=job_id).values("at", "kind", "message", "data")
        ),
    }


@on_postgresql
def test_the_one_statement_writes_the_rows_the_orm_writes(world, monkeypatch):
    flavors = _two_flavors(world)
    through_orm = _prepared(world, flavors, "orm")
    with monkeypatch.context() as patch:
        patch.setattr(job_insert, "usable", lambda: False)
        with CaptureQueriesContext(connection) as orm_queries:
            [orm_job] = write_jobs([through_orm])
    one = _prepared(world, flavors, "one")
    with CaptureQueriesContext(connection) as one_queries:
        [one_job] = write_jobs([one])
    assert [q["sql"].split()[0] for q in orm_queries.captured_queries].count("INSERT") == 4
    assert [q["sql"].split()[0] for q in one_queries.captured_queries if "INSERT" in q["sql"]] == [
        "WITH"
    ]
    assert _written(one_job.pk) == _written(orm_job.pk)
    assert _written(one_job.pk)["links"] == [
        {"flavor_id": flavors[0].pk, "rank": 0},
        {"flavor_id": flavors[1].pk, "rank": 1},
    ]


@on_postgresql
def test_the_job_comes_back_saved_with_its_links_and_runtime_in_hand(
    world, django_assert_num_queries
):
    flavors = _two_flavors(world)
    [job] = write_jobs([_prepared(world, flavors, "in-hand")])
    assert job.pk is not None and not job._state.adding
    with django_assert_num_queries(0):  # what the answer reads, without a query
        links = list(job.flavor_links.all())
        assert [(link.job_id, link.flavor.name, link.rank) for link in links] == [
            (job.pk, "a100", 0),
            (job.pk, "h100", 1),
        ]
        assert all(link.pk is not None for link in links)
        assert job.runtime.job_id == job.pk and job.runtime.pending_reason == ""
    assert {link.pk for link in links} == set(
        JobFlavor.objects.filter(job=job).values_list("pk", flat=True)
    )
    event = JobEvent.objects.get(job=job)
    assert event.kind == "submitted" and event.at == AT


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_one_statement_needs_no_begin_and_commit(world, queued_cycles):
    with CaptureQueriesContext(connection) as seen:
        job = submit_job(
            owner=world.alice,
            queue=world.queue_a,
            service_class=world.standard,
            name="alone",
            image="pytorch/pytorch:2.4.0",
            flavors=[world.h100],
            duration_hint=60,
        )
    statements = [q["sql"].split()[0].upper() for q in seen.captured_queries]
    assert "BEGIN" not in statements and "COMMIT" not in statements
    assert statements.count("WITH") == 1
    assert queued_cycles == [1]  # committed at once: the cycle is queued at once
    assert Job.objects.get(pk=job.pk).state == Job.State.PENDING
    assert JobRuntime.objects.filter(job=job).exists()


@on_postgresql
def test_a_row_the_database_refuses_leaves_nothing_written(world):
    new = _prepared(world, [world.h100], "refused")
    new.job.current_workers = 5  # more than its 2 workers: a check constraint says no
    before = (Job.objects.count(), JobFlavor.objects.count(), JobEvent.objects.count())
    with pytest.raises(Exception, match="job_current_workers_within_workers"):
        write_jobs([new])
    after = (Job.objects.count(), JobFlavor.objects.count(), JobEvent.objects.count())
    assert after == before
    assert JobRuntime.objects.count() == 0


def test_submit_job_writes_the_job_with_its_rows_on_any_database(world, queued_cycles):
    flavors = _two_flavors(world)
    job = submit_job(
        owner=world.alice,
        queue=world.queue_a,
        service_class=world.standard,
        name="anywhere",
        image="pytorch/pytorch:2.4.0",
        flavors=flavors,
        duration_hint=60,
    )
    written = _written(job.pk)
    assert [link["flavor_id"] for link in written["links"]] == [f.pk for f in flavors]
    assert written["events"][0]["kind"] == "submitted"
    assert written["runtime"]["worker_nodes"] == []
