"""Admin pages: the cluster token is write-only, lists filter and search."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queues.models import Cluster

pytestmark = pytest.mark.django_db

SECRET = "eyJhbGciOiJSUzI1NiJ9.super-secret-service-account-token"


def cluster_form(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "gpu-prod",
        "driver": "kubernetes",
        "api_url": "https://k8s.example.org:6443",
        "token": "",
        "kubeconfig_path": "",
        "kubeconfig_context": "",
        "verify_tls": "on",
        "ca_cert": "",
        "nodes-TOTAL_FORMS": "0",
        "nodes-INITIAL_FORMS": "0",
        "nodes-MIN_NUM_FORMS": "0",
        "nodes-MAX_NUM_FORMS": "1000",
    }
    data.update(overrides)
    return data


@pytest.fixture
def admin_client_(client: Client, platform_admin: User) -> Client:
    client.force_login(platform_admin)
    return client


def test_cluster_token_is_stored_but_never_shown_back(admin_client_: Client) -> None:
    response = admin_client_.post("/admin/queues/cluster/add/", cluster_form(token=SECRET))
    assert response.status_code == 302, response.content.decode()[:2000]
    cluster = Cluster.objects.get(name="gpu-prod")
    assert cluster.token == SECRET
    change_page = admin_client_.get(f"/admin/queues/cluster/{cluster.pk}/change/")
    assert change_page.status_code == 200
    assert SECRET not in change_page.content.decode()
    assert SECRET not in admin_client_.get("/admin/queues/cluster/").content.decode()


def test_saving_a_cluster_with_an_empty_token_keeps_the_stored_one(admin_client_: Client) -> None:
    cluster = Cluster.objects.create(
        name="gpu-prod", driver="kubernetes", api_url="https://k8s.example.org:6443", token=SECRET
    )
    response = admin_client_.post(
        f"/admin/queues/cluster/{cluster.pk}/change/", cluster_form(kubeconfig_context="prod")
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    cluster.refresh_from_db()
    assert cluster.token == SECRET
    assert cluster.kubeconfig_context == "prod"


def test_clear_token_removes_the_stored_token(admin_client_: Client) -> None:
    cluster = Cluster.objects.create(
        name="gpu-prod",
        driver="kubernetes",
        kubeconfig_path="/etc/kube/config",
        token=SECRET,
        api_url="https://k8s.example.org:6443",
    )
    response = admin_client_.post(
        f"/admin/queues/cluster/{cluster.pk}/change/",
        cluster_form(clear_token="on", kubeconfig_path="/etc/kube/config"),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    cluster.refresh_from_db()
    assert cluster.token == ""


def test_kubernetes_cluster_without_credentials_shows_a_form_error(admin_client_: Client) -> None:
    response = admin_client_.post("/admin/queues/cluster/add/", cluster_form(api_url=""))
    assert response.status_code == 200
    assert "needs either an API server URL and a token" in response.content.decode()
    assert not Cluster.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "/admin/queues/job/?state__exact=pending&q=train",
        "/admin/queues/queue/?is_open__exact=1&q=main",
        "/admin/queues/quota/?q=h100",
        "/admin/queues/flavor/?q=h100",
        "/admin/queues/membership/?role__exact=team_admin",
        "/admin/queues/node/?q=n1",
        "/admin/queues/jobevent/",
        "/admin/queues/cyclerun/",
        "/admin/queues/job/add/",
        "/admin/queues/cluster/add/",
        "/admin/queues/queue/add/",
    ],
)
def test_admin_lists_filter_and_search(admin_client_: Client, queue_a: Any, url: str) -> None:
    assert admin_client_.get(url).status_code == 200


def test_platform_admin_group_member_manages_users_and_memberships(
    admin_client_: Client, platform_admin: User, researcher_a: User, team_a: Any
) -> None:
    assert not platform_admin.is_superuser
    assert admin_client_.get("/admin/auth/user/").status_code == 200
    assert admin_client_.get("/admin/queues/membership/add/").status_code == 200
    autocomplete = admin_client_.get(
        "/admin/autocomplete/",
        {"app_label": "queues", "model_name": "membership", "field_name": "user", "term": "rae"},
    )
    assert autocomplete.status_code == 200
    assert researcher_a.username in autocomplete.content.decode()


def test_job_change_page_shows_the_job_and_its_events(
    admin_client_: Client, make_job: Any, queue_a: Any, researcher_a: User
) -> None:
    from queues.models import JobEvent

    job = make_job(queue=queue_a, owner=researcher_a, name="vision-train")
    JobEvent.objects.create(job=job, kind=JobEvent.Kind.SUBMITTED, message="submitted by rae")
    html = admin_client_.get(f"/admin/queues/job/{job.pk}/change/").content.decode()
    assert "vision-train" in html
    assert "submitted by rae" in html


def test_admin_offers_only_the_hashed_api_tokens(client: Client) -> None:
    """DRF's own token app stores keys in plain text and authenticates nothing here: the admin
    must not offer to create such tokens next to the real (hashed) ones."""
    client.force_login(User.objects.create_superuser("root", password="x"))
    index = client.get("/admin/").content.decode()
    assert "/admin/tokens/apitoken/" in index
    assert "/admin/authtoken/" not in index


def _queries_to_list(client: Client, url: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.parametrize("url", ["/admin/queues/queue/", "/admin/queues/job/"])
def test_admin_lists_read_a_fixed_number_of_queries_however_many_queues(
    admin_client_: Client, queue_a: Any, url: str
) -> None:
    from queues.models import Cohort, Queue

    cohort = Cohort.objects.get(queues=queue_a)
    few = _queries_to_list(admin_client_, url)
    for i in range(10):
        Queue.objects.create(team=queue_a.team, name=f"extra-{i}", cohort=cohort)
    assert _queries_to_list(admin_client_, url) == few
