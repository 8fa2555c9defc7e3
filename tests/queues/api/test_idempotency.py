"""``Idempotency-Key`` on ``POST /api/v1/jobs/``: a retried submission creates one job and gets
the first answer again; the key is per user; a reused key with another body is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from queues.api import idempotency
from queues.models import Job, JobEvent, Queue, SubmissionKey

Api = Callable[[User | None], APIClient]
Body = Callable[..., dict[str, Any]]

pytestmark = pytest.mark.django_db

KEY = "5f0c6a4e-8d1b-4c0e-9a7e-2b8f3d1c9e01"


def post(client: APIClient, body: dict[str, Any], key: str | None = KEY) -> Any:
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post("/api/v1/jobs/", body, format="json", **headers)


def test_a_retried_submission_with_the_same_key_creates_one_job_and_answers_the_same(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    client = api(researcher_a)
    first = post(client, job_body(workers=2, gpus_per_worker=4))
    second = post(client, job_body(workers=2, gpus_per_worker=4))

    assert first.status_code == second.status_code == 201, second.json()
    assert second.json() == first.json()
    assert Job.objects.count() == 1
    assert JobEvent.objects.filter(kind="submitted").count() == 1


def test_the_key_is_per_user_and_absent_keys_change_nothing(
    api: Api, researcher_a: User, team_admin_a: User, job_body: Body
) -> None:
    mine = post(api(researcher_a), job_body())
    theirs = post(api(team_admin_a), job_body())  # same key, another user: another job
    assert mine.json()["id"] != theirs.json()["id"]
    without = [post(api(researcher_a), job_body(), key=None) for _ in range(2)]
    assert len({r.json()["id"] for r in without}) == 2
    assert Job.objects.count() == 4


def test_a_reused_key_with_another_body_is_refused(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    client = api(researcher_a)
    assert post(client, job_body(name="first")).status_code == 201
    response = post(client, job_body(name="second"))
    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()["detail"]
    assert list(Job.objects.values_list("name", flat=True)) == ["first"]


def test_a_refused_submission_keeps_no_key(api: Api, researcher_a: User, job_body: Body) -> None:
    client = api(researcher_a)
    assert post(client, job_body(workers=0)).status_code == 400
    assert not SubmissionKey.objects.exists()
    assert post(client, job_body()).status_code == 201  # the corrected retry goes through


@pytest.mark.parametrize("key", ["", "  ", "x" * 256, "clé"])
def test_a_malformed_key_is_a_400_naming_the_header(
    api: Api, researcher_a: User, job_body: Body, key: str
) -> None:
    response = post(api(researcher_a), job_body(), key=key)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()
    assert not Job.objects.exists()


def test_a_race_on_one_key_keeps_the_winners_job_only(
    researcher_a: User, queue_a: Queue, make_job: Any
) -> None:
    winner = make_job(queue=queue_a, owner=researcher_a)
    digest = idempotency.fingerprint({"a": 1})
    SubmissionKey.objects.create(owner=researcher_a, key=KEY, request_hash=digest, job=winner)
    calls: list[int] = []

    def submit() -> Job:  # the loser's request, past its look-up before the winner committed
        calls.append(1)
        return make_job(queue=queue_a, owner=researcher_a, name="loser")

    assert idempotency.submit_once(researcher_a, KEY, digest, submit) == winner.pk
    assert calls == [1]
    assert not Job.objects.filter(name="loser").exists()  # rolled back with the key
    assert SubmissionKey.objects.get().job_id == winner.pk
