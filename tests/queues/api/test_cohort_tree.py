"""The cohort tree on the platform (issue 22 part 1): a cohort's parent and own quotas edited
over REST with the change history, cycles refused by field, and the live snapshot handing the
tree to the engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from audit.models import AuditEntry
from gpusched.engine import model as engine
from gpusched.engine.cycle import run_cycle
from queues.models import Cluster, Cohort, CohortQuota, Flavor, Queue
from queues.services.snapshot import build_snapshot

Api = Callable[[User | None], APIClient]

pytestmark = pytest.mark.django_db


def test_an_admin_puts_a_cohort_under_a_parent_with_its_own_quota_and_it_is_recorded(
    api: Api, platform_admin: User, cohort: Cohort, queue_a: Queue
) -> None:
    client = api(platform_admin)
    assert client.post("/api/v1/cohorts/", {"name": "org"}, format="json").status_code == 201
    body = {
        "parent": "org",
        "quotas": [{"flavor": "h100", "nominal": 0, "borrowing_limit": 4, "lending_limit": 8}],
    }
    response = client.patch(f"/api/v1/cohorts/{cohort.pk}/", body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["parent"] == "org"
    assert response.json()["quotas"] == [
        {"flavor": "h100", "nominal": 0, "borrowing_limit": 4, "lending_limit": 8}
    ]
    quota = CohortQuota.objects.get(cohort=cohort)
    assert (quota.borrowing_limit, quota.lending_limit) == (4, 8)  # may lend above its nominal
    changes = {(e.object_type, e.field, e.old, e.new): e.actor for e in AuditEntry.objects.all()}
    assert changes[("queues.cohort", "parent", None, "org")] == platform_admin
    assert changes[("queues.cohortquota", "borrowing_limit", None, 4)] == platform_admin

    # quotas given again replace them all: an empty list removes the cohort's own quota
    body = {"quotas": []}
    assert client.patch(f"/api/v1/cohorts/{cohort.pk}/", body, format="json").status_code == 200
    assert not CohortQuota.objects.filter(cohort=cohort).exists()
    removed = AuditEntry.objects.filter(object_type="queues.cohortquota", field="nominal")
    assert [(e.old, e.new) for e in removed.order_by("pk")] == [(None, 0), (0, None)]


@pytest.mark.parametrize("own", [True, False], ids=["itself", "its-child"])
def test_a_parent_that_would_close_a_cycle_is_refused_naming_parent(
    api: Api, platform_admin: User, own: bool
) -> None:
    org = Cohort.objects.create(name="org")
    physics = Cohort.objects.create(name="physics", parent=org)
    parent = "org" if own else "physics"
    response = api(platform_admin).patch(
        f"/api/v1/cohorts/{org.pk}/", {"parent": parent}, format="json"
    )
    assert response.status_code == 400
    assert "parent" in response.json()
    assert "cycle" in str(response.json()["parent"])
    org.refresh_from_db()
    assert org.parent is None
    assert physics.parent == org
    # a parent with children cannot go: they would lose their place in the tree
    response = api(platform_admin).delete(f"/api/v1/cohorts/{org.pk}/")
    assert response.status_code == 409 and "physics" in response.json()["detail"]


def test_an_unknown_parent_and_a_repeated_flavor_are_refused_by_field(
    api: Api, platform_admin: User, cohort: Cohort, flavor_h100: object
) -> None:
    client = api(platform_admin)
    url = f"/api/v1/cohorts/{cohort.pk}/"
    response = client.patch(url, {"parent": "nowhere"}, format="json")
    assert response.status_code == 400 and "parent" in response.json()
    twice = {"quotas": [{"flavor": "h100", "nominal": 1}, {"flavor": "h100", "nominal": 2}]}
    response = client.patch(url, twice, format="json")
    assert response.status_code == 400 and "quotas" in response.json()


def test_only_platform_admins_edit_the_tree(api: Api, researcher_a: User, cohort: Cohort) -> None:
    response = api(researcher_a).patch(
        f"/api/v1/cohorts/{cohort.pk}/", {"parent": None}, format="json"
    )
    assert response.status_code == 403


def test_the_live_snapshot_hands_the_tree_to_the_engine(
    queue_a: Queue, queue_b: Queue, cohort: Cohort, sim_cluster: Cluster, flavor_h100: object
) -> None:
    # research (queue_a) and biology (queue_b) under org; research may borrow 4 from org
    org = Cohort.objects.create(name="org")
    cohort.parent = org
    cohort.save()
    CohortQuota.objects.create(cohort=cohort, flavor_id=queue_a.quotas.get().flavor_id,
                               nominal=0, borrowing_limit=4)  # fmt: skip
    queue_b.cohort = Cohort.objects.create(name="biology", parent=org)
    queue_b.save()
    snapshot = build_snapshot(datetime(2026, 1, 1, tzinfo=UTC)).snapshot
    tree = {c.name: c for c in snapshot.cohorts}
    assert tree["research"].parent == "org" and tree["biology"].parent == "org"
    assert tree["research"].quotas["h100"] == engine.Quota(0, borrowing_limit=4)
    # team-a asks for 16 single GPUs on 16 idle GPUs: its 8, then 4 borrowed by research from
    # org (team-b's idle 8 are there); flat, in separate cohorts, it would get only its 8
    jobs = tuple(
        engine.PendingJob(f"p{i}", "team-a/main", "standard", 0.0, 1, 1, ("h100",))
        for i in range(16)
    )
    classes = (engine.ServiceClass("standard", 100),)
    snapshot = replace(snapshot, pending=jobs, service_classes=classes)
    assert len(run_cycle(snapshot).admits) == 12
    assert len(run_cycle(replace(snapshot, cohorts=())).admits) == 8


def test_the_admin_site_edits_a_parent_and_a_cohort_quota_and_refuses_a_cycle(
    client: Client, platform_admin: User, flavor_h100: Flavor
) -> None:
    client.force_login(platform_admin)
    org = Cohort.objects.create(name="org")
    physics = Cohort.objects.create(name="physics", parent=org)
    form = {
        "name": "physics", "description": "", "parent": org.pk, "weight": 1,
        "quotas-TOTAL_FORMS": "1", "quotas-INITIAL_FORMS": "0",
        "quotas-0-flavor": flavor_h100.pk, "quotas-0-nominal": "2",
        "quotas-0-borrowing_limit": "4", "quotas-0-lending_limit": "",
    }  # fmt: skip
    response = client.post(f"/admin/queues/cohort/{physics.pk}/change/", form)
    assert response.status_code == 302, response.content[:2000]
    quota = CohortQuota.objects.get(cohort=physics)
    assert (quota.nominal, quota.borrowing_limit) == (2, 4)
    assert AuditEntry.objects.filter(object_type="queues.cohortquota", field="nominal").exists()

    cycle = {"name": "org", "description": "", "parent": physics.pk, "weight": 1,
             "quotas-TOTAL_FORMS": "0", "quotas-INITIAL_FORMS": "0"}  # fmt: skip
    response = client.post(f"/admin/queues/cohort/{org.pk}/change/", cycle)
    assert response.status_code == 200  # the form again, with the error
    assert b"the parents would form a cycle" in response.content
    org.refresh_from_db()
    assert org.parent is None


def test_a_cohorts_weight_is_edited_checked_and_ranks_its_subtree(
    api: Api, platform_admin: User, queue_a: Queue, queue_b: Queue, cohort: Cohort,
    sim_cluster: Cluster, flavor_h100: object,
) -> None:  # fmt: skip
    """Fair Tree across departments: research (team-a) and biology (team-b) under org, the same
    usage; with research's weight 3 its job ranks first (each 1: the older, biology's, would)."""
    client = api(platform_admin)
    org = Cohort.objects.create(name="org")
    cohort.parent = org
    cohort.save()
    queue_b.cohort = Cohort.objects.create(name="biology", parent=org)
    queue_b.save()
    Queue.objects.filter(pk__in=[queue_a.pk, queue_b.pk]).update(decayed_usage=3600.0)
    bad = client.patch(f"/api/v1/cohorts/{cohort.pk}/", {"weight": 0}, format="json")
    assert bad.status_code == 400 and "weight" in bad.json()
    response = client.patch(f"/api/v1/cohorts/{cohort.pk}/", {"weight": 3}, format="json")
    assert response.status_code == 200 and response.json()["weight"] == 3
    assert list(AuditEntry.objects.filter(field="weight").values_list("old", "new")) == [(1.0, 3.0)]

    snapshot = build_snapshot(datetime(2026, 1, 1, tzinfo=UTC)).snapshot
    assert {c.name: c.weight for c in snapshot.cohorts}["research"] == 3
    # submitted a minute before the snapshot: neither has waited long enough to age
    # (docs/SCHEDULING.md section 4, "Aging"), so only the ranking decides
    submitted = snapshot.now - 60.0
    jobs = (
        engine.PendingJob("older", "team-b/main", "standard", submitted, 2, 8, ("h100",)),
        engine.PendingJob("newer", "team-a/main", "standard", submitted + 1.0, 2, 8, ("h100",)),
    )
    snapshot = replace(
        snapshot, pending=jobs, service_classes=(engine.ServiceClass("standard", 100),)
    )
    assert [a.job for a in run_cycle(snapshot).admits] == ["newer"]
    flat_weights = replace(
        snapshot, cohorts=tuple(replace(c, weight=1.0) for c in snapshot.cohorts)
    )
    assert [a.job for a in run_cycle(flat_weights).admits] == ["older"]
