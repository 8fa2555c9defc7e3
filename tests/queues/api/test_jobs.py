"""Jobs through the API: who sees, submits and cancels what; filters, events, estimate, status,
query counts and the submission rate limit."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from queues.models import Cluster, Job, JobEvent, Queue

Api = Callable[[User | None], APIClient]
MakeJob = Callable[..., Job]

pytestmark = pytest.mark.django_db


def ids(response: Any) -> set[int]:
    return {row["id"] for row in response.json()["results"]}


def test_anonymous_requests_get_401(api: Api) -> None:
    response = api(None).get("/api/v1/jobs/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_member_sees_only_their_teams_jobs(
    api: Api, make_job: MakeJob, researcher_a: User, researcher_b: User, queue_a: Queue,
    queue_b: Queue,
) -> None:  # fmt: skip
    mine = make_job(queue=queue_a, owner=researcher_a)
    theirs = make_job(queue=queue_b, owner=researcher_b)
    assert ids(api(researcher_a).get("/api/v1/jobs/")) == {mine.pk}
    assert ids(api(researcher_b).get("/api/v1/jobs/")) == {theirs.pk}


def test_outsider_gets_404_for_another_teams_job(
    api: Api, make_job: MakeJob, researcher_b: User, researcher_a: User, queue_a: Queue
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    client = api(researcher_b)
    assert client.get(f"/api/v1/jobs/{job.pk}/").status_code == 404
    assert client.get(f"/api/v1/jobs/{job.pk}/events/").status_code == 404
    assert client.post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 404
    job.refresh_from_db()
    assert job.state == Job.State.PENDING


def test_finance_sees_no_jobs_and_cannot_submit(
    api: Api, make_job: MakeJob, finance_user: User, researcher_a: User, queue_a: Queue,
    job_body: Callable[..., dict[str, Any]],
) -> None:  # fmt: skip
    make_job(queue=queue_a, owner=researcher_a)
    client = api(finance_user)
    assert client.get("/api/v1/jobs/").json()["count"] == 0
    assert client.post("/api/v1/jobs/", job_body(), format="json").status_code == 403


def test_platform_admin_sees_every_job(
    api: Api, make_job: MakeJob, platform_admin: User, researcher_a: User, researcher_b: User,
    queue_a: Queue, queue_b: Queue,
) -> None:  # fmt: skip
    a = make_job(queue=queue_a, owner=researcher_a)
    b = make_job(queue=queue_b, owner=researcher_b)
    assert ids(api(platform_admin).get("/api/v1/jobs/")) == {a.pk, b.pk}


def test_researcher_submits_a_job_through_the_service(
    api: Api, researcher_a: User, job_body: Callable[..., dict[str, Any]]
) -> None:
    response = api(researcher_a).post(
        "/api/v1/jobs/", job_body(workers=2, gpus_per_worker=4, flavors=["h100"]), format="json"
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    job = Job.objects.get(pk=data["id"])
    assert job.owner == researcher_a
    assert (job.workers, job.gpus_per_worker, job.state) == (2, 4, "pending")
    assert data["flavors"] == ["h100"]
    assert data["owner"] == researcher_a.username
    assert data["queue_name"] == "team-a/main"
    assert data["submitted_at"].endswith("Z") or data["submitted_at"].endswith("+00:00")
    assert JobEvent.objects.filter(job=job, kind="submitted").exists()


def test_owner_cancels_their_pending_job(
    api: Api, make_job: MakeJob, researcher_a: User, queue_a: Queue
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    response = api(researcher_a).post(f"/api/v1/jobs/{job.pk}/cancel/")
    assert response.status_code == 200
    assert response.json()["state"] == "cancelled"
    job.refresh_from_db()
    assert job.state == Job.State.CANCELLED


def test_researcher_cannot_cancel_a_teammates_job(
    api: Api, make_job: MakeJob, researcher_a: User, team_admin_a: User, queue_a: Queue
) -> None:
    job = make_job(queue=queue_a, owner=team_admin_a)
    assert api(researcher_a).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 403
    job.refresh_from_db()
    assert job.state == Job.State.PENDING


def test_team_admin_cancels_any_job_of_the_team(
    api: Api, make_job: MakeJob, researcher_a: User, team_admin_a: User, queue_a: Queue
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    assert api(team_admin_a).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 200


def test_cancelling_an_ended_job_is_a_conflict(
    api: Api, make_job: MakeJob, researcher_a: User, queue_a: Queue
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    client = api(researcher_a)
    client.post(f"/api/v1/jobs/{job.pk}/cancel/")
    response = client.post(f"/api/v1/jobs/{job.pk}/cancel/")
    assert response.status_code == 409
    assert "already ended" in response.json()["detail"]


def test_jobs_cannot_be_edited_or_deleted(
    api: Api, make_job: MakeJob, platform_admin: User, researcher_a: User, queue_a: Queue
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    client = api(platform_admin)
    assert client.patch(f"/api/v1/jobs/{job.pk}/", {"name": "x"}, format="json").status_code == 405
    assert client.delete(f"/api/v1/jobs/{job.pk}/").status_code == 405


def test_job_events_list_the_history_oldest_first(
    api: Api, researcher_a: User, job_body: Callable[..., dict[str, Any]]
) -> None:
    client = api(researcher_a)
    job_id = client.post("/api/v1/jobs/", job_body(), format="json").json()["id"]
    client.post(f"/api/v1/jobs/{job_id}/cancel/")
    events = client.get(f"/api/v1/jobs/{job_id}/events/").json()
    assert [event["kind"] for event in events] == ["submitted", "cancelled"]


def test_jobs_filter_by_state_owner_class_team_and_submission_time(
    api: Api, make_job: MakeJob, platform_admin: User, researcher_a: User, team_admin_a: User,
    researcher_b: User, queue_a: Queue, queue_b: Queue,
) -> None:  # fmt: skip
    t0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
    old = make_job(queue=queue_a, owner=researcher_a, submitted_at=t0)
    new = make_job(queue=queue_a, owner=team_admin_a, submitted_at=t0 + timedelta(hours=2))
    other = make_job(queue=queue_b, owner=researcher_b, submitted_at=t0 + timedelta(hours=1))
    Job.objects.filter(pk=new.pk).update(state="cancelled")
    client = api(platform_admin)
    assert ids(client.get("/api/v1/jobs/", {"state": "pending"})) == {old.pk, other.pk}
    assert ids(client.get("/api/v1/jobs/", {"state": ["pending", "cancelled"]})) == {
        old.pk, new.pk, other.pk,
    }  # fmt: skip
    assert ids(client.get("/api/v1/jobs/", {"owner": researcher_a.username})) == {old.pk}
    assert ids(client.get("/api/v1/jobs/", {"mine": "true"})) == set()  # the admin's own
    assert ids(api(team_admin_a).get("/api/v1/jobs/", {"mine": "true"})) == {new.pk}
    assert ids(api(team_admin_a).get("/api/v1/jobs/", {"mine": "false"})) == {old.pk, new.pk}
    assert ids(client.get("/api/v1/jobs/", {"team": "team-b"})) == {other.pk}
    assert ids(client.get("/api/v1/jobs/", {"queue": queue_a.pk})) == {old.pk, new.pk}
    assert ids(client.get("/api/v1/jobs/", {"service_class": "standard"})) == {
        old.pk, new.pk, other.pk,
    }  # fmt: skip
    assert ids(client.get("/api/v1/jobs/", {"service_class": "spot"})) == set()
    window = {"submitted_after": "2026-03-01T12:30:00Z", "submitted_before": "2026-03-01T13:30Z"}
    assert ids(client.get("/api/v1/jobs/", window)) == {other.pk}
    rows = client.get("/api/v1/jobs/", {"ordering": "submitted_at"}).json()["results"]
    assert [row["id"] for row in rows] == [old.pk, other.pk, new.pk]
    assert client.get("/api/v1/jobs/", {"state": "sleeping"}).status_code == 400


def test_job_list_is_paginated(
    api: Api, make_job: MakeJob, researcher_a: User, queue_a: Queue
) -> None:
    for _ in range(3):
        make_job(queue=queue_a, owner=researcher_a)
    page = api(researcher_a).get("/api/v1/jobs/", {"page_size": 2}).json()
    assert page["count"] == 3
    assert len(page["results"]) == 2
    assert page["next"] is not None


def test_job_list_query_count_does_not_grow_with_the_number_of_jobs(
    api: Api, make_job: MakeJob, researcher_a: User, queue_a: Queue,
    django_assert_num_queries: Any,
) -> None:  # fmt: skip
    client = api(researcher_a)
    make_job(queue=queue_a, owner=researcher_a)
    client.get("/api/v1/jobs/")  # the token's first use is recorded (an UPDATE once a minute)
    with CaptureQueriesContext(connection) as one:
        assert client.get("/api/v1/jobs/").json()["count"] == 1
    for _ in range(20):
        make_job(queue=queue_a, owner=researcher_a)
    with django_assert_num_queries(len(one.captured_queries)):
        assert client.get("/api/v1/jobs/").json()["count"] == 21


def test_estimate_says_what_would_happen_and_creates_nothing(
    api: Api, researcher_a: User, job_body: Callable[..., dict[str, Any]]
) -> None:
    response = api(researcher_a).post(
        "/api/v1/jobs/estimate/", job_body(gpus_per_worker=4), format="json"
    )
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["outcome"] == "start"
    assert data["queue"] == "team-a/main"
    assert data["quotas"][0]["need"] == 4
    assert not Job.objects.exists()


def test_queue_status_lists_pending_jobs_in_the_order_the_last_cycle_ranked_them(
    api: Api,
    researcher_a: User,
    queue_a: Queue,
    queue_b: Queue,
    sim_cluster: Cluster,
    job_body: Callable[..., dict[str, Any]],
    cycle: Callable[[datetime], Any],
) -> None:
    """The queue page ranks nothing itself: before a cycle the jobs have no position; after
    one, the within-nominal job comes first although it was submitted second."""
    sim_cluster.nodes.update(schedulable=False)  # both nodes cordoned: everything waits
    client = api(researcher_a)
    body = job_body(name="big", workers=2, gpus_per_worker=8)  # 16: borrows from team B
    big = client.post("/api/v1/jobs/", body, format="json").json()["id"]
    small = client.post("/api/v1/jobs/", job_body(name="small"), format="json").json()["id"]
    url = f"/api/v1/queues/{queue_a.pk}/status/"
    data = client.get(url).json()
    assert data["queue"] == "team-a/main"
    assert data["pending_count"] == 2
    assert [(p["position"], p["job_id"], p["within_nominal"]) for p in data["pending"]] == [
        (None, big, None),
        (None, small, None),
    ]
    cycle(timezone.now())
    data = client.get(url).json()
    assert [(p["position"], p["job_id"], p["within_nominal"]) for p in data["pending"]] == [
        (1, small, True),
        (2, big, False),
    ]
    assert data["pending"][0]["message"].startswith("#1 in queue team-a/main.")
    assert data["flavors"][0]["flavor"] == "h100"
    assert data["flavors"][0]["nominal"] == 8
    assert data["share"] == 0.0  # the engine's share: nothing runs, nothing borrowed


def test_queue_status_of_another_teams_queue_is_404(
    api: Api, researcher_a: User, queue_b: Queue
) -> None:
    assert api(researcher_a).get(f"/api/v1/queues/{queue_b.pk}/status/").status_code == 404


def test_submissions_are_rate_limited_per_user(
    api: Api, researcher_a: User, team_admin_a: User, settings: Any,
    job_body: Callable[..., dict[str, Any]],
) -> None:  # fmt: skip
    settings.JOB_SUBMIT_RATE = "2/minute"
    client = api(researcher_a)
    codes = [client.post("/api/v1/jobs/", job_body(), format="json").status_code for _ in range(3)]
    assert codes == [201, 201, 429]
    assert client.get("/api/v1/jobs/").status_code == 200  # reading is not limited
    assert api(team_admin_a).post("/api/v1/jobs/", job_body(), format="json").status_code == 201
