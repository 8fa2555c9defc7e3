"""What one ``POST /api/v1/jobs/`` costs (issue 27: at most 8 queries), and that what makes it
cheap never answers from stale data: the catalog of queues, classes, flavors, quotas and capacity
is kept in the cache until one of them changes (queues/models/catalog.py), the rules run once,
the answer is the job in hand, the token's use is written at most once a minute."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.clusters.base import NodeInfo
from queues.models import Cluster, Flavor, Job, Node, Queue, Quota, job_rules
from queues.services.observe import update_nodes
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db

Body = Callable[..., dict[str, Any]]


def test_one_post_takes_at_most_8_queries_4_on_postgresql_and_answers_as_the_job_page(
    api: Callable[[User], Any],
    researcher_a: User,
    job_body: Body,
    django_assert_max_num_queries: Any,
) -> None:
    client = api(researcher_a)
    assert client.post("/api/v1/jobs/", job_body(), format="json").status_code == 201
    # the token, the user's groups and teams, then BEGIN, the job, its flavors, its runtime row,
    # its "submitted" event, COMMIT: the queue, class, flavors, quotas and capacity are cached.
    # PostgreSQL: the token with the groups and teams, the four rows in one statement
    # (queues/services/job_insert.py) inside a savepoint of the test's transaction (a server
    # runs it alone: 2 queries)
    most = 4 if connection.vendor == "postgresql" else 8
    with django_assert_max_num_queries(most):
        response = client.post("/api/v1/jobs/", job_body(name="second"), format="json")
    assert response.status_code == 201, response.json()
    shown = client.get(f"/api/v1/jobs/{response.json()['id']}/").json()
    assert response.json() == shown  # built from the job in hand, the same as read back
    assert shown["flavors"] == ["h100"] and shown["team"] == "team-a"


def test_the_rules_run_once_per_post(
    api: Callable[[User], Any],
    researcher_a: User,
    job_body: Body,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[job_rules.Submission] = []
    real = job_rules.problems

    def counted(user: Any, submission: job_rules.Submission, **kwargs: Any) -> Any:
        calls.append(submission)
        return real(user, submission, **kwargs)

    monkeypatch.setattr(job_rules, "problems", counted)
    response = api(researcher_a).post("/api/v1/jobs/", job_body(), format="json")
    assert response.status_code == 201
    assert len(calls) == 1


def test_a_node_made_larger_is_seen_by_the_next_submission(
    api: Callable[[User], Any], researcher_a: User, job_body: Body, sim_cluster: Cluster
) -> None:
    for quota in Quota.objects.all():  # room in the quota: only the nodes are too small
        quota.nominal = 16
        quota.save()
    client = api(researcher_a)
    big = job_body(gpus_per_worker=16)
    refused = client.post("/api/v1/jobs/", big, format="json")
    assert refused.status_code == 400
    assert "at most 8 on one node" in refused.json()["gpus_per_worker"][0]
    node = Node.objects.get(cluster=sim_cluster, name="n1")
    node.capacity = {"h100": 16}
    node.save()
    answer = client.post("/api/v1/jobs/", big, format="json")
    assert answer.status_code == 201, answer.json()


def test_a_capacity_the_sync_rewrites_in_bulk_is_seen_by_the_next_submission(
    api: Callable[[User], Any], researcher_a: User, job_body: Body, sim_cluster: Cluster
) -> None:
    for quota in Quota.objects.all():
        quota.nominal = 16
        quota.save()
    client = api(researcher_a)
    big = job_body(gpus_per_worker=16)
    assert client.post("/api/v1/jobs/", big, format="json").status_code == 400
    gpu = {"nvidia.com/gpu": 16}
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    update_nodes(sim_cluster, (NodeInfo("n1", gpu, labels), NodeInfo("n2", gpu, labels)))
    assert Node.objects.get(name="n1").capacity == {"h100": 16}
    answer = client.post("/api/v1/jobs/", big, format="json")
    assert answer.status_code == 201, answer.json()


def test_a_new_flavor_with_its_quota_and_nodes_is_seen_by_the_next_submission(
    api: Callable[[User], Any],
    researcher_a: User,
    job_body: Body,
    queue_a: Queue,
    sim_cluster: Cluster,
) -> None:
    client = api(researcher_a)
    body = job_body(flavors=["a100"])
    refused = client.post("/api/v1/jobs/", body, format="json")
    assert refused.status_code == 400 and "flavors" in refused.json()
    a100 = Flavor.objects.create(name="a100", resource="nvidia.com/gpu", gpu_model="A100")
    no_quota = client.post("/api/v1/jobs/", body, format="json")
    assert "has no quota for a100" in no_quota.json()["flavors"][0]
    Quota.objects.create(queue=queue_a, flavor=a100, nominal=4)
    no_node = client.post("/api/v1/jobs/", body, format="json")
    assert "a100: no node has it" in no_node.json()["gpus_per_worker"][0]
    Node.objects.create(cluster=sim_cluster, name="a1", capacity={"a100": 4})
    created = client.post("/api/v1/jobs/", body, format="json")
    assert created.status_code == 201 and created.json()["flavors"] == ["a100"]


def test_a_closed_queue_and_a_class_withdrawn_are_seen_by_the_next_submission(
    api: Callable[[User], Any],
    researcher_a: User,
    job_body: Body,
    queue_a: Queue,
    service_class_std: Any,
) -> None:
    client = api(researcher_a)
    assert client.post("/api/v1/jobs/", job_body(), format="json").status_code == 201
    spot = type(service_class_std).objects.create(name="spot", priority=10)
    queue_a.allowed_service_classes.add(spot)
    refused = client.post("/api/v1/jobs/", job_body(), format="json")
    assert "does not accept the 'standard' class" in refused.json()["service_class"][0]
    queue_a.allowed_service_classes.clear()
    queue_a.is_open = False
    queue_a.save()
    closed = client.post("/api/v1/jobs/", job_body(), format="json")
    assert "closed to new jobs" in closed.json()["queue"][0]
    assert Job.objects.count() == 1


def test_a_new_member_may_submit_at_once(
    api: Callable[[User], Any], outsider: User, job_body: Body, queue_a: Queue
) -> None:
    client = api(outsider)
    assert client.post("/api/v1/jobs/", job_body(), format="json").status_code == 403
    queue_a.team.memberships.create(user=outsider)
    assert client.post("/api/v1/jobs/", job_body(), format="json").status_code == 201


def test_the_tokens_use_is_written_once_a_minute(
    api: Callable[[User], Any], researcher_a: User, job_body: Body
) -> None:
    client = api(researcher_a)
    token = ApiToken.objects.get(user=researcher_a)

    def updates() -> list[str]:
        with CaptureQueriesContext(connection) as seen:
            assert client.post("/api/v1/jobs/", job_body(), format="json").status_code == 201
        return [q["sql"] for q in seen.captured_queries if "tokens_apitoken" in q["sql"]]

    assert any(sql.startswith("UPDATE") for sql in updates())  # first use: recorded
    assert not any(sql.startswith("UPDATE") for sql in updates())  # within the minute: no write
    token.refresh_from_db()
    assert token.last_used_at is not None
    earlier = token.last_used_at - timedelta(seconds=61)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=earlier)
    assert any(sql.startswith("UPDATE") for sql in updates())
    token.refresh_from_db()
    assert token.last_used_at > earlier


def test_the_submit_form_checks_the_rules_once_too(
    client: Any,
    researcher_a: User,
    queue_a: Queue,
    service_class_std: Any,
    flavor_h100: Flavor,
    sim_cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.urls import reverse

    from tests.queues.views.test_pages import form_data

    calls: list[job_rules.Submission] = []
    real = job_rules.problems

    def counted(user: Any, submission: job_rules.Submission, **kwargs: Any) -> Any:
        calls.append(submission)
        return real(user, submission, **kwargs)

    monkeypatch.setattr(job_rules, "problems", counted)
    client.force_login(researcher_a)
    response = client.post(reverse("submit"), form_data(queue_a, service_class_std, flavor_h100))
    assert response.status_code == 302 and Job.objects.count() == 1
    assert len(calls) == 1


def test_the_catalog_is_kept_in_the_process_while_its_version_stays(
    queue_a: Queue, sim_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry of a version this process has read is not read (and unpickled) again; a change
    moves the version and the next read sees it; an entry past its life is read again."""
    from django.core.cache import cache

    from queues.models import catalog

    first = catalog.current()
    entries: list[str] = []
    real_get = cache.get

    def counted(key: str, *args: Any, **kwargs: Any) -> Any:
        if key.startswith("gpuplatform:catalog:") and key != catalog.VERSION_KEY:
            entries.append(key)
        return real_get(key, *args, **kwargs)

    monkeypatch.setattr(cache, "get", counted)
    assert catalog.current() is first and entries == []
    queue_a.is_open = False
    queue_a.save()  # moves the version on
    changed = catalog.current()
    assert changed is not first and changed.queues[queue_a.pk].is_open is False
    monkeypatch.setattr(changed, "expires", 0.0)  # the shared copy would have expired
    again = catalog.current()
    assert entries and again is not changed and again.queues[queue_a.pk].is_open is False
