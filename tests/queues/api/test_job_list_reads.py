"""The jobs list reads a page cheaply (issue 27: ``Job.objects.listed``): a fixed number of
queries whatever the number of jobs, their owners, queues, teams, clusters and flavors, and each
row the same as the job's own answer (read the full way)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import serializers
from rest_framework.test import APIClient

from queues.api.job_serializers import JOB_ROW, JobRow, JobSerializer
from queues.models import Cluster, Flavor, Job, JobRuntime, Queue

pytestmark = pytest.mark.django_db

Api = Callable[[User | None], APIClient]


def jobs_of_every_kind(
    count: int, make_job: Callable[..., Job], owners: list[User], queues: list[Queue],
    cluster: Cluster, flavors: list[Flavor],
) -> None:  # fmt: skip
    """Running jobs on ``cluster`` admitted on their second choice, pending ones with a reason
    and an estimated start, finished ones: spread over the owners and queues."""
    now = timezone.now()
    for i in range(count):
        kind = ("running", "pending", "succeeded")[i % 3]
        job = make_job(
            queue=queues[i % len(queues)], owner=owners[i % len(owners)], name=f"job-{i}",
            submitted_at=now - timedelta(minutes=i + 10), state=kind,
        )  # fmt: skip
        job.set_acceptable_flavors(flavors)
        runtime = JobRuntime(job=job)
        if kind == "running":
            Job.objects.filter(pk=job.pk).update(
                cluster=cluster, started_at=now - timedelta(minutes=i + 5),
                placement={"n1": 1}, current_workers=1,
            )  # fmt: skip
            runtime.flavor = flavors[1]
        elif kind == "pending":
            runtime.pending_reason = "quota"
            runtime.pending_message = f"waits for quota ({i})"
            runtime.estimated_start = now + timedelta(minutes=i)
        runtime.save()


def test_the_jobs_list_reads_a_fixed_number_of_queries_and_rows_as_each_job_reads(
    api: Api, make_job: Callable[..., Job], platform_admin: User, researcher_a: User,
    researcher_b: User, queue_a: Queue, queue_b: Queue, sim_cluster: Cluster,
    flavor_h100: Flavor, django_assert_num_queries: Any,
) -> None:  # fmt: skip
    a100 = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu", gpu_equivalent=1.0)
    flavors = [a100, flavor_h100]
    kinds = (make_job, [researcher_a, researcher_b], [queue_a, queue_b], sim_cluster, flavors)
    client = api(platform_admin)
    jobs_of_every_kind(3, *kinds)
    client.get("/api/v1/jobs/")  # the token's first use is recorded (an UPDATE once a minute)
    with CaptureQueriesContext(connection) as few:
        assert client.get("/api/v1/jobs/").json()["count"] == 3
    jobs_of_every_kind(45, *kinds)
    with django_assert_num_queries(len(few.captured_queries)):
        page = client.get("/api/v1/jobs/").json()
    assert page["count"] == 48 and len(page["results"]) == 48
    for row in page["results"]:
        assert row == client.get(f"/api/v1/jobs/{row['id']}/").json()
    running = [row for row in page["results"] if row["state"] == "running"]
    assert {row["cluster"] for row in running} == {"sim"}
    assert {row["flavors"][0] for row in page["results"]} == {"a100-80gb"}  # rank order
    owners = {row["owner"] for row in page["results"]}
    assert owners == {researcher_a.username, researcher_b.username}


def test_a_jobs_json_is_what_drf_makes_of_its_declared_fields(
    make_job: Callable[..., Job], researcher_a: User, researcher_b: User, queue_a: Queue,
    queue_b: Queue, sim_cluster: Cluster, flavor_h100: Flavor,
) -> None:  # fmt: skip
    """``JobSerializer.to_representation`` reads each value directly, ``rows_json`` each job
    read as values (the list's read); DRF's generic one reads the declared fields' sources: the
    same answer, key for key, in the same order."""
    a100 = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu", gpu_equivalent=1.0)
    kinds = (make_job, [researcher_a, researcher_b], [queue_a, queue_b], sim_cluster)
    jobs_of_every_kind(6, *kinds, [a100, flavor_h100])
    special = make_job(
        queue=queue_a, owner=researcher_a, name="special", workers=4, min_workers=2,
        gpus_per_worker=2, topology_level="rack", topology_mode="preferred",
        estimated_runtime=7200, checkpoint_interval=600, array_id=7, array_index=3,
        command=["python", "-m", "train"], placement={"n1": 2, "n2": 2},
        spec={"args": ["--epochs", "3"], "env": [{"name": "A", "value": "1"}], "cpu": "8",
              "labels": {"x": "y"}, "host_network": True},
    )  # fmt: skip
    Job.objects.create(  # no runtime row, no flavors
        queue=queue_b, owner=researcher_b, name="bare", image="busybox",
        service_class=special.service_class,
    )  # fmt: skip
    generic = serializers.ModelSerializer.to_representation
    jobs = Job.objects.order_by("pk")
    rows = [JobRow(*values) for values in jobs.values_list(*JOB_ROW)]
    assert len(rows) == 8
    for job, from_row in zip(jobs, JobSerializer().rows_json(rows), strict=True):
        direct = JobSerializer(job).data
        assert list(direct.items()) == list(generic(JobSerializer(), job).items()), job.name
        assert list(from_row.items()) == list(direct.items()), job.name
    assert JobSerializer(special).data["placement"] == {"n1": 2, "n2": 2}
