"""Teams, memberships, cohorts, queues with quotas, flavors, service classes, clusters and nodes:
who reads and who writes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from queues.models import Cluster, Cohort, Flavor, Membership, Queue, Quota, ServiceClass, Team

Api = Callable[[User | None], APIClient]

pytestmark = pytest.mark.django_db

NEW_OBJECTS: dict[str, dict[str, Any]] = {
    "teams": {"name": "team-c", "description": "Team C"},
    "cohorts": {"name": "vision"},
    "flavors": {"name": "a100", "resource": "nvidia.com/gpu", "gpu_model": "NVIDIA-A100"},
    "service-classes": {"name": "urgent", "priority": 1000, "preemptible": False},
    "clusters": {"name": "east", "driver": "simulated"},
    "queues": {"team": "team-a", "name": "batch", "quotas": [{"flavor": "h100", "nominal": 4}]},
}


@pytest.fixture
def world(
    queue_a: Queue, queue_b: Queue, service_class_std: ServiceClass, sim_cluster: Cluster
) -> None:
    """Both teams' queues, a class and a cluster with nodes."""


@pytest.mark.parametrize("resource", [*NEW_OBJECTS, "nodes", "memberships"])
def test_anonymous_gets_401(api: Api, world: None, resource: str) -> None:
    assert api(None).get(f"/api/v1/{resource}/").status_code == 401


@pytest.mark.parametrize("resource", NEW_OBJECTS)
@pytest.mark.parametrize("persona", ["researcher_a", "team_admin_a", "finance_user", "outsider"])
def test_only_platform_admins_create_catalog_objects(
    api: Api, world: None, resource: str, persona: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)
    response = api(user).post(f"/api/v1/{resource}/", NEW_OBJECTS[resource], format="json")
    assert response.status_code == 403


@pytest.mark.parametrize("resource", NEW_OBJECTS)
def test_platform_admin_creates_catalog_objects(
    api: Api, world: None, platform_admin: User, resource: str
) -> None:
    client = api(platform_admin)
    response = client.post(f"/api/v1/{resource}/", NEW_OBJECTS[resource], format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["name"] == NEW_OBJECTS[resource]["name"]
    assert client.get(f"/api/v1/{resource}/{created['id']}/").status_code == 200


@pytest.mark.parametrize("resource", ["flavors", "service-classes", "cohorts", "clusters", "nodes"])
def test_members_read_the_shared_catalog(
    api: Api, world: None, researcher_a: User, resource: str
) -> None:
    response = api(researcher_a).get(f"/api/v1/{resource}/")
    assert response.status_code == 200
    assert response.json()["count"] >= 1


def test_members_see_only_their_own_team_and_queues(
    api: Api, world: None, researcher_a: User, team_b: Team, queue_b: Queue
) -> None:
    client = api(researcher_a)
    assert [t["name"] for t in client.get("/api/v1/teams/").json()["results"]] == ["team-a"]
    assert [q["team"] for q in client.get("/api/v1/queues/").json()["results"]] == ["team-a"]
    assert client.get(f"/api/v1/teams/{team_b.pk}/").status_code == 404
    assert client.get(f"/api/v1/queues/{queue_b.pk}/").status_code == 404


def test_outsider_sees_no_team_and_gets_404(
    api: Api, world: None, outsider: User, team_a: Team, queue_a: Queue
) -> None:
    client = api(outsider)
    assert client.get("/api/v1/teams/").json()["count"] == 0
    assert client.get(f"/api/v1/teams/{team_a.pk}/").status_code == 404
    assert client.get(f"/api/v1/queues/{queue_a.pk}/").status_code == 404


def test_finance_reads_every_team_but_changes_nothing(
    api: Api, world: None, finance_user: User, team_a: Team
) -> None:
    client = api(finance_user)
    assert client.get("/api/v1/teams/").json()["count"] == 2
    response = client.patch(f"/api/v1/teams/{team_a.pk}/", {"description": "x"}, format="json")
    assert response.status_code == 403


def test_queue_shows_its_quotas_nested(api: Api, world: None, researcher_a: User) -> None:
    queue = api(researcher_a).get("/api/v1/queues/").json()["results"][0]
    assert queue["quotas"] == [
        {"flavor": "h100", "nominal": 8, "borrowing_limit": None, "lending_limit": None}
    ]
    assert queue["cohort"] == "research"


def test_platform_admin_replaces_a_queues_quotas(
    api: Api, world: None, platform_admin: User, queue_a: Queue
) -> None:
    Flavor.objects.create(name="a100", resource="nvidia.com/gpu")
    body = {"quotas": [{"flavor": "a100", "nominal": 2, "lending_limit": 1}]}
    response = api(platform_admin).patch(f"/api/v1/queues/{queue_a.pk}/", body, format="json")
    assert response.status_code == 200, response.json()
    quotas = Quota.objects.filter(queue=queue_a)
    assert [(q.flavor.name, q.nominal, q.lending_limit) for q in quotas] == [("a100", 2, 1)]


def test_team_admin_manages_their_teams_members(
    api: Api, world: None, team_admin_a: User, outsider: User
) -> None:
    client = api(team_admin_a)
    body = {"user": outsider.username, "team": "team-a", "role": "member"}
    response = client.post("/api/v1/memberships/", body, format="json")
    assert response.status_code == 201, response.json()
    membership_id = response.json()["id"]
    response = client.patch(
        f"/api/v1/memberships/{membership_id}/", {"role": "team_admin"}, format="json"
    )
    assert response.json()["role"] == "team_admin"
    assert client.delete(f"/api/v1/memberships/{membership_id}/").status_code == 204
    assert not Membership.objects.filter(user=outsider).exists()


def test_researcher_cannot_manage_members(
    api: Api, world: None, researcher_a: User, team_admin_a: User, outsider: User
) -> None:
    client = api(researcher_a)
    body = {"user": outsider.username, "team": "team-a"}
    assert client.post("/api/v1/memberships/", body, format="json").status_code == 403
    theirs = Membership.objects.get(user=team_admin_a)
    assert client.delete(f"/api/v1/memberships/{theirs.pk}/").status_code == 403


def test_team_admin_cannot_add_members_to_another_team(
    api: Api, world: None, team_admin_a: User, outsider: User, researcher_b: User
) -> None:
    client = api(team_admin_a)
    body = {"user": outsider.username, "team": "team-b"}
    response = client.post("/api/v1/memberships/", body, format="json")
    assert response.status_code == 400
    assert "team" in response.json()
    other = Membership.objects.get(user=researcher_b)
    assert client.delete(f"/api/v1/memberships/{other.pk}/").status_code == 404


def test_members_see_the_memberships_of_their_team_only(
    api: Api, world: None, researcher_a: User, team_admin_a: User, researcher_b: User
) -> None:
    rows = api(researcher_a).get("/api/v1/memberships/").json()["results"]
    assert {row["user"] for row in rows} == {researcher_a.username, team_admin_a.username}
    filtered = api(researcher_a).get("/api/v1/memberships/", {"role": "team_admin"}).json()
    assert [row["user"] for row in filtered["results"]] == [team_admin_a.username]


def test_cluster_credentials_are_write_only(api: Api, platform_admin: User) -> None:
    client = api(platform_admin)
    body = {
        "name": "prod",
        "driver": "kubernetes",
        "api_url": "https://k8s.example.com:6443",
        "token": "very-secret-service-account-token",
        "ca_cert": "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----",
    }
    response = client.post("/api/v1/clusters/", body, format="json")
    assert response.status_code == 201, response.json()
    for data in (response.json(), client.get("/api/v1/clusters/").json()["results"][0]):
        assert "token" not in data and "ca_cert" not in data and "kubeconfig_path" not in data
        assert data["has_token"] is True and data["has_ca_cert"] is True
    assert b"very-secret" not in client.get("/api/v1/clusters/").content
    assert Cluster.objects.get(name="prod").token == "very-secret-service-account-token"


def test_kubernetes_cluster_without_credentials_is_refused(api: Api, platform_admin: User) -> None:
    response = api(platform_admin).post(
        "/api/v1/clusters/", {"name": "prod", "driver": "kubernetes"}, format="json"
    )
    assert response.status_code == 400
    assert "needs either an API server URL and a token" in str(response.json())


def test_nodes_are_read_only(api: Api, world: None, platform_admin: User) -> None:
    client = api(platform_admin)
    assert client.post("/api/v1/nodes/", {"name": "n3"}, format="json").status_code == 405
    rows = client.get("/api/v1/nodes/", {"cluster": "sim"}).json()["results"]
    assert [(row["name"], row["capacity"]) for row in rows] == [
        ("n1", {"h100": 8}), ("n2", {"h100": 8}),
    ]  # fmt: skip


def test_deleting_a_flavor_in_use_is_a_conflict(
    api: Api, world: None, platform_admin: User, flavor_h100: Flavor
) -> None:
    response = api(platform_admin).delete(f"/api/v1/flavors/{flavor_h100.pk}/")
    assert response.status_code == 409
    assert "Still in use" in response.json()["detail"]
    assert Flavor.objects.filter(pk=flavor_h100.pk).exists()


@pytest.mark.parametrize("resource", ["queues", "memberships", "teams", "clusters", "nodes"])
def test_list_query_count_does_not_grow_with_rows(
    api: Api, world: None, platform_admin: User, researcher_a: User, resource: str,
    flavor_h100: Flavor, service_class_std: ServiceClass, django_assert_max_num_queries: Any,
) -> None:  # fmt: skip
    client = api(platform_admin)
    with CaptureQueriesContext(connection) as few:
        assert client.get(f"/api/v1/{resource}/").status_code == 200
    for i in range(8):
        team = Team.objects.create(name=f"extra-{i}")
        queue = Queue.objects.create(team=team, name="main")
        queue.allowed_service_classes.add(service_class_std)
        Quota.objects.create(queue=queue, flavor=flavor_h100, nominal=i)
        Membership.objects.create(user=User.objects.create(username=f"u{i}"), team=team)
        Cluster.objects.create(name=f"c{i}").nodes.create(name="n", capacity={"h100": 1})
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(f"/api/v1/{resource}/").json()["count"] >= 8


def test_api_changes_land_in_the_change_history(
    api: Api, world: None, platform_admin: User, queue_a: Queue
) -> None:
    from audit.models import AuditEntry

    client = api(platform_admin)
    body = {"weight": 2.0, "quotas": [{"flavor": "h100", "nominal": 4}]}
    assert client.patch(f"/api/v1/queues/{queue_a.pk}/", body, format="json").status_code == 200
    changes = {
        (e.object_type, e.field, str(e.old), str(e.new)): e.actor for e in AuditEntry.objects.all()
    }
    assert changes[("queues.queue", "weight", "1.0", "2.0")] == platform_admin
    assert changes[("queues.quota", "nominal", "8", "4")] == platform_admin


def test_cluster_secrets_are_masked_in_the_change_history(api: Api, platform_admin: User) -> None:
    from audit.models import AuditEntry

    body = {
        "name": "prod",
        "driver": "kubernetes",
        "api_url": "https://k8s.example.com:6443",
        "token": "very-secret-service-account-token",
    }
    assert api(platform_admin).post("/api/v1/clusters/", body, format="json").status_code == 201
    token_entry = AuditEntry.objects.get(object_type="queues.cluster", field="token")
    assert token_entry.new == "(secret)"
    assert "very-secret" not in str(list(AuditEntry.objects.values_list("new", flat=True)))


def test_deleting_through_the_api_is_recorded(api: Api, platform_admin: User) -> None:
    from audit.models import AuditEntry

    spare = Cohort.objects.create(name="spare")
    assert api(platform_admin).delete(f"/api/v1/cohorts/{spare.pk}/").status_code == 204
    entry = AuditEntry.objects.get(object_type="queues.cohort", field="name")
    assert (entry.object_id, entry.old, entry.new) == (str(spare.pk), "spare", None)
