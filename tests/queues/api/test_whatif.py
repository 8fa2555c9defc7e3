"""``/api/v1/what-if/`` (issue 22): a platform admin asks for a replay, polls its status URL and
reads both runs per queue; bad fields are a 400 naming them; the replay writes no scheduling
state."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from gpuplatform.access import PLATFORM_ADMIN_GROUP
from queues import tasks
from queues.models import (
    CycleRun,
    Job,
    JobEvent,
    JobFlavor,
    JobRuntime,
    Node,
    Queue,
    Quota,
    WhatIfRun,
)
from queues.services.whatif import runs
from tests.queues.services.whatif.conftest import NOW, ran  # noqa: F401 (a fixture)

Api = Callable[[User | None], APIClient]

pytestmark = pytest.mark.django_db

SCHEDULING_STATE = (Job, JobRuntime, JobFlavor, JobEvent, Quota, Queue, Node, CycleRun)


@pytest.fixture(autouse=True)
def worker(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Celery worker, in process: each queued run is replayed at once, its window ending
    at the history's NOW."""
    queued: list[str] = []

    def run(run_id: str) -> None:
        queued.append(run_id)
        runs.execute(run_id, now=NOW)

    monkeypatch.setattr(tasks.run_what_if, "delay", run)
    return queued


@pytest.fixture
def history(ran: Callable[..., Job], queue_a: Queue, queue_b: Queue) -> None:  # noqa: F811
    ran(queue_b, submitted=20, started=20, finished=10)
    ran(queue_a, submitted=20 - 1 / 60, started=20 - 1 / 60, finished=16 - 1 / 60)
    ran(queue_a, submitted=20 - 1 / 60, started=16 - 1 / 60, finished=12 - 1 / 60)


def lower_a(queue_a: Queue, nominal: int = 4, **more: Any) -> dict[str, Any]:
    quota = {"queue": queue_a.pk, "flavor": "h100", "nominal": nominal}
    return {"days": 1, "quotas": [quota], **more}


def rows_of_scheduling_state() -> dict[str, list[dict[str, Any]]]:
    return {m.__name__: list(m.objects.order_by("pk").values()) for m in SCHEDULING_STATE}


def test_admin_asks_polls_and_reads_both_runs(
    api: Api, platform_admin: User, history: None, queue_a: Queue,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:  # fmt: skip
    client = api(platform_admin)
    with django_capture_on_commit_callbacks(execute=True):
        asked = client.post("/api/v1/what-if/", lower_a(queue_a), format="json")
    assert asked.status_code == 202, asked.content
    status_url = asked.json()["status_url"]
    assert asked["Location"] == status_url
    assert asked.json()["state"] == "queued"

    answer = client.get(status_url).json()
    assert (answer["state"], answer["progress"]) == ("done", 1.0)
    team_a = next(r for r in answer["result"]["queues"] if r["name"] == "team-a/main")
    assert team_a["today"]["mean_wait_s"] == 7200.0
    assert team_a["proposed"]["mean_wait_s"] > 10 * 3600
    assert {r["name"] for r in answer["result"]["cohorts"]} == {"research"}


def test_the_replay_writes_no_scheduling_state(
    api: Api, platform_admin: User, history: None, queue_a: Queue, sim_cluster: Any,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:  # fmt: skip
    before = rows_of_scheduling_state()
    body = lower_a(queue_a, nominal=0, nodes=[{"cluster": sim_cluster.pk, "flavor": "h100",
                                               "add": -1}])  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        asked = api(platform_admin).post("/api/v1/what-if/", body, format="json")
    assert WhatIfRun.objects.get(pk=asked.json()["id"]).state == "done"
    assert rows_of_scheduling_state() == before


def test_a_run_is_read_only_by_the_admin_who_asked_until_it_expires(
    api: Api, platform_admin: User, history: None, queue_a: Queue,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        asked = api(platform_admin).post("/api/v1/what-if/", lower_a(queue_a), format="json")
    url = asked.json()["status_url"]
    other = User.objects.create_user(username="other-admin")
    other.groups.add(Group.objects.get_or_create(name=PLATFORM_ADMIN_GROUP)[0])
    assert api(other).get(url).status_code == 404
    WhatIfRun.objects.update(expires_at=NOW)  # long past
    assert api(platform_admin).get(url).status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"days": 0}, "days"),
        ({"days": 91}, "days"),
        ({"days": "two weeks"}, "days"),
        ({"quotas": [{"queue": 999999, "flavor": "h100", "nominal": 1}]}, "quotas"),
        ({"quotas": [{"queue": "QUEUE", "flavor": "b200", "nominal": 1}]}, "quotas"),
        ({"quotas": [{"queue": "QUEUE", "flavor": "h100", "nominal": -1}]}, "quotas"),
        (
            {"quotas": [{"queue": "QUEUE", "flavor": "h100", "nominal": 1, "borrowing_limit": -2}]},
            "quotas",
        ),
        (
            {"quotas": [{"queue": "QUEUE", "flavor": "h100", "nominal": 1, "lending_limit": 2}]},
            "quotas",
        ),
        ({"quotas": [{"queue": "QUEUE", "flavor": "h100", "nominal": 1}] * 2}, "quotas"),
        ({"nodes": [{"cluster": 999999, "flavor": "h100", "add": 1}]}, "nodes"),
        ({"nodes": [{"cluster": "CLUSTER", "flavor": "b200", "add": 1}]}, "nodes"),
        ({"nodes": [{"cluster": "CLUSTER", "flavor": "h100", "add": -3}]}, "nodes"),
        ({"nodes": [{"cluster": "CLUSTER", "flavor": "h100", "add": 2**40}]}, "nodes"),
    ],
)
def test_bad_fields_are_400_naming_them(
    api: Api, platform_admin: User, queue_a: Queue, sim_cluster: Any, worker: list[str],
    change: dict[str, Any], field: str,
) -> None:  # fmt: skip
    ids = {'"QUEUE"': str(queue_a.pk), '"CLUSTER"': str(sim_cluster.pk)}
    text = json.dumps({"days": 14, **change})
    for name, pk in ids.items():
        text = text.replace(name, pk)
    response = api(platform_admin).post("/api/v1/what-if/", text, content_type="application/json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not WhatIfRun.objects.exists() and worker == []


@pytest.mark.parametrize("who", ["researcher_a", "team_admin_a", "finance_user"])
def test_only_platform_admins_may_ask(
    api: Api, request: pytest.FixtureRequest, queue_a: Queue, who: str
) -> None:
    user = request.getfixturevalue(who)
    response = api(user).post("/api/v1/what-if/", lower_a(queue_a), format="json")
    assert response.status_code == 403
    assert not WhatIfRun.objects.exists()
