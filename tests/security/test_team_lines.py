"""No data crosses team lines (issue 26): the estimate counts other teams' jobs it would stop
instead of naming them, and finance reads usage and money, not job names, owners or reasons."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from queues.services import submit_job

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def run(
    service_class_std: ServiceClass, flavor_h100: Flavor, cycle: Callable[..., Any]
) -> Callable[..., Job]:
    """``run(owner, queue, name, gpus=8, cls=...)``: a job submitted and running."""
    clock = [0.0]

    def make(owner: User, queue: Queue, name: str, gpus: int = 8, **fields: Any) -> Job:
        clock[0] += 10
        fields.setdefault("service_class", service_class_std)
        job = submit_job(
            owner=owner, queue=queue, name=name, image="pytorch/pytorch:2.4.0",
            flavors=[flavor_h100], workers=1, gpus_per_worker=gpus, now=at(clock[0]),
            duration_hint=36000, **fields,
        )  # fmt: skip
        cycle(at(clock[0] + 1))
        cycle(at(clock[0] + 2))
        job.refresh_from_db()
        assert job.state == Job.State.RUNNING, job.runtime.pending_message
        return job

    return make


@pytest.fixture
def team_a_borrows(
    sim_cluster: Cluster, queue_a: Queue, queue_b: Queue, researcher_a: User,
    run: Callable[..., Job],
) -> list[Job]:  # fmt: skip
    """Team A runs two 8-GPU jobs: the second one on team B's unused quota."""
    return [run(researcher_a, queue_a, "vision-secret"), run(researcher_a, queue_a, "llm-secret")]


def body(queue: Queue, **changes: Any) -> dict[str, Any]:
    return {
        "queue": queue.pk, "service_class": "standard", "flavors": ["h100"], "name": "mine",
        "image": "pytorch/pytorch:2.4.0", "command": ["python"], "workers": 1,
        "gpus_per_worker": 8, **changes,
    }  # fmt: skip


def api(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def test_estimate_api_counts_other_teams_victims_instead_of_naming_them(
    team_a_borrows: list[Job], queue_b: Queue, researcher_b: User
) -> None:
    response = api(researcher_b).post("/api/v1/jobs/estimate/", body(queue_b), format="json")
    assert response.status_code == 200, response.content
    estimate = response.json()
    assert estimate["outcome"] == "preempt"
    assert estimate["victims"] == [
        {"job_id": None, "name": "", "queue": "", "reason": "reclaim", "shrink_to": None}
    ]
    assert "1 job of another team" in estimate["summary"]
    text = response.content.decode()
    for job in team_a_borrows:
        assert job.name not in text and f"#{job.pk}" not in text
    assert "team-a" not in text


def test_submit_page_estimate_counts_other_teams_victims_instead_of_naming_them(
    team_a_borrows: list[Job], queue_b: Queue, researcher_b: User, client: Client,
    service_class_std: ServiceClass, flavor_h100: Flavor,
) -> None:  # fmt: skip
    client.force_login(researcher_b)
    form = {
        "queue": queue_b.pk, "service_class": service_class_std.pk, "flavor": flavor_h100.pk,
        "name": "mine", "image": "pytorch/pytorch:2.4.0", "command": "python", "workers": 1,
        "gpus_per_worker": 8,
    }  # fmt: skip
    live = client.get("/submit/estimate/", form)
    assert live.status_code == 200, live.content
    assert live.json()["estimate"]["victims"][0]["job_id"] is None
    checked = client.post("/submit/", {**form, "action": "check"})
    assert checked.status_code == 200
    for response in (live, checked):
        text = response.content.decode()
        assert "of another team" in text
        for job in team_a_borrows:
            assert job.name not in text and f"#{job.pk}" not in text


def test_estimate_names_own_teams_victims_and_counts_the_others(
    sim_cluster: Cluster, queue_a: Queue, queue_b: Queue, researcher_a: User,
    team_admin_a: User, researcher_b: User, run: Callable[..., Job],
) -> None:  # fmt: skip
    """Team A fills its quota with a spot job and borrows team B's with another; team A's admin
    estimating an urgent job is told its own job's name; team B's researcher is not."""
    spot = ServiceClass.objects.create(name="spot", priority=10, grace_period=30)
    ServiceClass.objects.create(name="urgent", priority=1000, grace_period=30)
    own = run(researcher_a, queue_a, "own-spot", service_class=spot)
    run(researcher_a, queue_a, "borrowing-spot", service_class=spot)
    mine = api(team_admin_a).post(
        "/api/v1/jobs/estimate/", body(queue_a, service_class="urgent"), format="json"
    )
    assert mine.status_code == 200, mine.content
    victims = mine.json()["victims"]
    assert mine.json()["outcome"] == "preempt", mine.json()
    assert all(v["job_id"] is not None for v in victims)
    assert own.name in mine.json()["summary"] or "borrowing-spot" in mine.json()["summary"]
    theirs = api(researcher_b).post("/api/v1/jobs/estimate/", body(queue_b), format="json")
    assert theirs.json()["victims"][0]["job_id"] is None
    assert "spot" not in theirs.content.decode()


# --- finance: usage and money, not jobs ------------------------------------------------------


@pytest.fixture
def busy_team_a(
    team_a_borrows: list[Job], queue_a: Queue, researcher_a: User, flavor_h100: Flavor,
    service_class_std: ServiceClass, cycle: Callable[..., Any],
) -> Job:  # fmt: skip
    """Team A runs two jobs (``*-secret``) and has one waiting (``waiting-secret``) with the
    engine's reason stored."""
    waiting = submit_job(
        owner=researcher_a, queue=queue_a, name="waiting-secret", image="pytorch/pytorch:2.4.0",
        flavors=[flavor_h100], workers=1, gpus_per_worker=8, now=at(100),
        service_class=service_class_std,
    )  # fmt: skip
    cycle(at(101))
    waiting.refresh_from_db()
    assert waiting.state == Job.State.PENDING and waiting.runtime.pending_message
    return waiting


def _pages(queue: Queue) -> list[str]:
    team = f"?team={queue.team_id}"
    return [
        f"/api/v1/queues/{queue.pk}/status/",
        f"/dashboards/team/{team}",
        f"/dashboards/team/data/{team}",
        "/dashboards/mig/",
        "/dashboards/mig/data/",
    ]


def test_finance_reads_no_job_names_owners_or_reasons(
    busy_team_a: Job, queue_a: Queue, finance_user: User, researcher_a: User
) -> None:
    client = api(finance_user)
    secrets = ["vision-secret", "llm-secret", "waiting-secret", researcher_a.username]
    secrets.append(busy_team_a.runtime.pending_message[:40])
    for url in _pages(queue_a):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        text = response.content.decode()
        assert [s for s in secrets if s in text] == [], url
    status = client.get(f"/api/v1/queues/{queue_a.pk}/status/").json()
    assert (status["pending_count"], status["pending"]) == (1, [])
    assert status["flavors"][0]["used"] == 16  # usage stays
    mig = client.get("/dashboards/mig/data/").json()
    assert "team-a" in str(mig["charts"])  # who holds the GPUs stays
    team = client.get(f"/dashboards/team/data/?team={queue_a.team_id}").json()
    [costs] = team["tables"]  # the team's total cost only, no user rows
    assert [row[0] for row in costs["rows"]] == ["Team team-a (all members)"]
    assert "1 pending job(s)" in team["notes"][0]


def test_platform_admin_and_the_team_still_read_job_names(
    busy_team_a: Job, queue_a: Queue, platform_admin: User, researcher_a: User
) -> None:
    for user in (platform_admin, researcher_a):
        client = api(user)
        status = client.get(f"/api/v1/queues/{queue_a.pk}/status/").json()
        assert [p["name"] for p in status["pending"]] == ["waiting-secret"]
        team = client.get(f"/dashboards/team/data/?team={queue_a.team_id}").json()
        assert "waiting-secret" in str(team["tables"])
    mig = api(platform_admin).get("/dashboards/mig/data/").content.decode()
    assert "vision-secret" in mig and "llm-secret" in mig
