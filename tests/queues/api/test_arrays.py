"""Job arrays on ``POST /api/v1/jobs/`` (Slurm's ``--array``): N jobs in one request, validated
whole first and created all or none, one 201 with their ids; a burst queues one cycle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from queues.models import Job, JobEvent, JobRuntime

Api = Callable[[User | None], APIClient]
Body = Callable[..., dict[str, Any]]

pytestmark = pytest.mark.django_db


def post(client: APIClient, body: Any, **headers: str) -> Any:
    return client.post("/api/v1/jobs/", body, format="json", **headers)


def test_an_array_of_n_creates_n_jobs_in_array_order_with_one_answer(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    response = post(api(researcher_a), job_body(array=5, workers=2, gpus_per_worker=2))

    assert response.status_code == 201, response.json()
    answer = response.json()
    jobs = list(Job.objects.order_by("pk"))
    assert answer == {"array_id": jobs[0].pk, "count": 5, "ids": [job.pk for job in jobs]}
    assert [(job.array_id, job.array_index) for job in jobs] == [
        (jobs[0].pk, index) for index in range(5)
    ]
    assert {(job.workers, job.gpus_per_worker, job.state) for job in jobs} == {(2, 2, "pending")}
    assert JobEvent.objects.filter(kind="submitted").count() == 5
    assert JobRuntime.objects.count() == 5
    shown = api(researcher_a).get(f"/api/v1/jobs/{jobs[3].pk}/").json()
    assert (shown["array_id"], shown["array_index"]) == (jobs[0].pk, 3)


def test_a_list_of_bodies_creates_one_job_each(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    bodies = [job_body(name="prep", gpus_per_worker=1), job_body(name="train", workers=2)]

    response = post(api(researcher_a), bodies)

    assert response.status_code == 201, response.json()
    created = Job.objects.filter(pk__in=response.json()["ids"]).order_by("array_index")
    assert [(job.name, job.workers) for job in created] == [("prep", 1), ("train", 2)]


def test_one_bad_body_in_a_list_refuses_the_whole_request_naming_its_place_and_field(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    bodies = [job_body(name="ok-1"), job_body(name="bad", gpus_per_worker=0), job_body()]

    response = post(api(researcher_a), bodies)

    assert response.status_code == 400
    assert list(response.json()) == ["1"]  # the place of the bad body, then its fields
    assert "gpus_per_worker" in response.json()["1"]
    assert not Job.objects.exists()


@pytest.mark.parametrize("size", [0, -1, 10_001, "3", True, None])
def test_an_array_size_out_of_range_or_not_a_number_is_a_400_naming_array(
    api: Api, researcher_a: User, job_body: Body, size: Any
) -> None:
    response = post(api(researcher_a), job_body(array=size))

    assert response.status_code == 400
    assert "array" in response.json()
    assert not Job.objects.exists()


def test_a_job_rule_broken_by_the_array_body_creates_nothing(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    response = post(api(researcher_a), job_body(array=3, gpus_per_worker=9))  # 8-GPU nodes

    assert response.status_code == 400
    assert "gpus_per_worker" in response.json()
    assert not Job.objects.exists()


def test_a_failure_while_creating_rolls_the_whole_array_back(
    api: Api, researcher_a: User, job_body: Body, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = JobEvent.objects.bulk_create

    def fails(*args: Any, **kwargs: Any) -> Any:  # the jobs, links and runtimes are written
        assert Job.objects.count() == 4 and JobRuntime.objects.count() == 4
        raise RuntimeError("database went away")

    monkeypatch.setattr(JobEvent.objects, "bulk_create", fails)
    client = api(researcher_a)
    client.raise_request_exception = False

    response = post(client, job_body(array=4))

    assert response.status_code == 500
    monkeypatch.setattr(JobEvent.objects, "bulk_create", real)
    assert not Job.objects.exists()
    assert not JobRuntime.objects.exists()
    assert not JobEvent.objects.exists()


def test_a_large_array_is_written_in_a_few_statements_not_a_few_per_job(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api(researcher_a)
    assert post(client, job_body(array=2)).status_code == 201  # the catalog is cached

    def queries(size: int) -> int:
        with CaptureQueriesContext(connection) as seen:
            assert post(client, job_body(array=size)).status_code == 201
        return len(seen.captured_queries)

    small, large = queries(3), queries(1_200)
    # batches of rows (500 on PostgreSQL; SQLite's limit on parameters makes them smaller),
    # where one job alone takes five statements
    assert large - small < 1_200 / 10
    assert Job.objects.filter(array_index=1_199).count() == 1
    assert JobEvent.objects.filter(kind="submitted").count() == 2 + 3 + 1_200


def test_a_retried_array_with_the_same_idempotency_key_creates_it_once(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    client = api(researcher_a)
    key = {"HTTP_IDEMPOTENCY_KEY": "array-3f9c"}

    first = post(client, job_body(array=3), **key)
    again = post(client, job_body(array=3), **key)

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert Job.objects.count() == 3


def test_an_array_queues_one_scheduling_cycle(
    api: Api,
    researcher_a: User,
    job_body: Body,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from django.core.cache import cache

    from queues import tasks

    queued: list[int] = []
    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: queued.append(1))
    cache.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api(researcher_a), job_body(array=50))

    assert response.status_code == 201
    assert queued == [1]
