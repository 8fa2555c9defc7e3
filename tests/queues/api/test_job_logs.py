"""GET /api/v1/jobs/{id}/logs/: the JSON a command-line client reads (its exact shape), the
worker and tail parameters (a bad one is a 400 naming it), who may read a job's logs (its team
and platform admins; not finance, not other teams), a job holding no cluster, and a cluster
that cannot be read (503 with its error, never a 500)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass, SimulatedWorkload
from queues.services import submit_job

Api = Callable[[User | None], APIClient]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _simulation(settings: Any) -> None:
    settings.SIMULATION_SPEED = 60.0
    settings.SIMULATION_FAILURE_RATE = 0.0


@pytest.fixture
def running(
    researcher_a: User, queue_a: Queue, service_class_std: ServiceClass, flavor_h100: Flavor,
    sim_cluster: Cluster, cycle: Callable[..., Any],
) -> Job:  # fmt: skip
    """Team A's 2 x 4 GPU job, launched on the simulated cluster 20 s ago (20 simulated
    minutes of work: a start line and 20 step lines per worker)."""
    now = timezone.now()
    job = submit_job(
        owner=researcher_a, queue=queue_a, service_class=service_class_std, name="llama",
        image="pytorch/pytorch:2.4.0", flavors=[flavor_h100], workers=2, gpus_per_worker=4,
        duration_hint=86_400, now=now,
    )  # fmt: skip
    cycle(now)
    cycle(now + timedelta(seconds=1))
    SimulatedWorkload.objects.filter(job_id=str(job.pk)).update(
        launched_at=timezone.now() - timedelta(seconds=20)
    )
    job.refresh_from_db()
    assert job.state == "running"
    return job


def url(job: Job) -> str:
    return f"/api/v1/jobs/{job.pk}/logs/"


def test_every_worker_in_the_agreed_shape(api: Api, researcher_a: User, running: Job) -> None:
    response = api(researcher_a).get(url(running))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"job", "cluster", "workers"}
    assert body["job"] == running.pk and body["cluster"] == "sim"
    assert [w["index"] for w in body["workers"]] == [0, 1]
    for worker in body["workers"]:
        assert set(worker) == {
            "index", "pod", "node", "phase", "reason", "message", "restarts", "lines"
        }  # fmt: skip
        assert worker["pod"] == f"job-{running.pk}-{worker['index']}"
        assert worker["node"] in ("n1", "n2") and worker["phase"] == "running"
        assert (worker["reason"], worker["message"], worker["restarts"]) == ("", "", 0)
        assert 21 <= len(worker["lines"]) <= 40  # start + 20 s at 60x (more on a slow machine)
        assert "starting on" in worker["lines"][0] and " loss " in worker["lines"][-1]


def test_one_worker_and_a_tail(api: Api, researcher_a: User, running: Job) -> None:
    body = api(researcher_a).get(url(running), {"worker": 1, "tail": 5}).json()
    (worker,) = body["workers"]
    assert worker["index"] == 1 and len(worker["lines"]) == 5
    assert all(" step " in line for line in worker["lines"])


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"worker": "abc"}, "worker"), ({"worker": "2"}, "worker"), ({"worker": "-1"}, "worker"),
        ({"tail": "0"}, "tail"), ({"tail": "5001"}, "tail"), ({"tail": "many"}, "tail"),
    ],
)  # fmt: skip
def test_a_bad_parameter_is_a_400_naming_it(
    api: Api, researcher_a: User, running: Job, query: dict[str, str], parameter: str
) -> None:
    response = api(researcher_a).get(url(running), query)
    assert response.status_code == 400
    assert list(response.json()) == [parameter]


def test_a_pending_job_answers_no_workers_and_why(
    api: Api, researcher_a: User, queue_a: Queue, make_job: Callable[..., Job]
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    response = api(researcher_a).get(url(job))
    assert response.status_code == 200
    body = response.json()
    assert body["workers"] == [] and body["cluster"] == ""
    assert "pending" in body["detail"] and "no workers" in body["detail"]


def test_who_may_read_a_jobs_logs(
    api: Api, running: Job, researcher_a: User, team_admin_a: User, researcher_b: User,
    finance_user: User, platform_admin: User, outsider: User,
) -> None:  # fmt: skip
    status = {
        user.username: api(user).get(url(running)).status_code
        for user in (researcher_a, team_admin_a, platform_admin, researcher_b, finance_user,
                     outsider)
    }  # fmt: skip
    assert status == {
        researcher_a.username: 200, team_admin_a.username: 200, platform_admin.username: 200,
        researcher_b.username: 404, finance_user.username: 404, outsider.username: 404,
    }  # fmt: skip
    assert api(None).get(url(running)).status_code == 401


def test_an_unreachable_cluster_is_a_503_with_its_error(
    api: Api, researcher_a: User, running: Job
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    Cluster.objects.filter(pk=running.cluster_id).update(
        driver="kubernetes", api_url=f"http://127.0.0.1:{port}", token="t"
    )
    response = api(researcher_a).get(url(running))
    assert response.status_code == 503
    detail = response.json()["detail"]
    assert detail.startswith("Cluster sim cannot be read now: list pods of job")
    assert "Connection" in detail or "refused" in detail


def test_a_cluster_with_unusable_settings_is_a_503_too(
    api: Api, researcher_a: User, running: Job
) -> None:
    Cluster.objects.filter(pk=running.cluster_id).update(driver="kubernetes", in_cluster=True)
    response = api(researcher_a).get(url(running))
    assert response.status_code == 503
    assert "in_cluster" in response.json()["detail"]
