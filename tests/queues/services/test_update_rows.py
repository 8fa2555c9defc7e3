"""queues/services/rows.update_rows saves many changed rows as ``bulk_update`` would (issue 27:
admitting 10,000 jobs in one cycle), in a constant number of queries per batch: the fields
equal in every row by a plain UPDATE, the others by values per row (``unnest`` on PostgreSQL)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from queues.models import Job
from queues.services.rows import update_rows


def test_rows_get_their_own_values_and_the_shared_ones_in_few_queries(
    world: SimpleNamespace, submit: Any
) -> None:
    jobs = [submit(gpus=1, name=f"job-{i}", team="ab"[i % 2]) for i in range(7)]
    now = timezone.now()
    for i, job in enumerate(jobs):
        job.state, job.admitted_at, job.cluster = Job.State.ADMITTED, now, world.cluster
        job.placement = {f"n{1 + i % 2}": 1}  # differs from row to row
        job.current_workers = 1
    fields = ["state", "admitted_at", "cluster", "placement", "current_workers"]

    with CaptureQueriesContext(connection) as seen:
        update_rows(jobs, fields, batch=3)

    assert len(seen.captured_queries) <= 2 * 3  # 3 batches: shared values, then each row's
    for i, job in enumerate(Job.objects.filter(pk__in=[j.pk for j in jobs]).order_by("pk")):
        assert job.pk == jobs[i].pk
        assert (job.state, job.admitted_at, job.cluster_id) == ("admitted", now, world.cluster.pk)
        assert (job.placement, job.current_workers) == ({f"n{1 + i % 2}": 1}, 1)


def test_jobs_share_one_object_of_each_queue_they_point_to(
    world: SimpleNamespace, submit: Any
) -> None:
    from django.db.models import QuerySet

    from queues.models import Cluster, Queue, ServiceClass
    from queues.services.rows import share_related

    made = [submit(gpus=1, name=f"job-{i}", team="ab"[i % 2]) for i in range(6)]
    jobs = list(Job.objects.filter(pk__in=[j.pk for j in made]).order_by("pk"))
    queues: QuerySet[Queue] = Queue.objects.select_related("team")

    with CaptureQueriesContext(connection) as seen:
        share_related(
            jobs,
            queue=queues,
            service_class=ServiceClass.objects.all(),
            cluster=Cluster.objects.all(),  # pending jobs: no cluster, no query
        )
        names = [(job.queue.team.name, job.service_class.name, job.cluster) for job in jobs]

    assert len(seen.captured_queries) == 2
    assert names == [(j.queue.team.name, j.service_class.name, None) for j in made]
    assert jobs[0].queue is jobs[2].queue and jobs[0].queue is not jobs[1].queue
