"""The cohort editor (issue 22): a cohort's parent and own quotas on one page, validated by the
models' rules as over REST, every change in the history, and lowering a cohort's nominal below
what its subtree uses asks first, naming what becomes borrowing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from audit.models import AuditEntry
from queues.models import Cluster, Cohort, CohortQuota, Flavor, Job, Queue, Quota
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def cohort_post(
    cohort: Cohort | None = None,
    quotas: list[dict[str, Any]] = (),  # type: ignore[assignment]
    **fields: Any,
) -> dict[str, Any]:
    """The cohort page's POST: the cohort's fields and one formset row per quota."""
    data: dict[str, Any] = {
        "name": cohort.name if cohort else "",
        "description": cohort.description if cohort else "",
        "parent": (cohort.parent_id or "") if cohort else "",
        "weight": cohort.weight if cohort else 1,
        "quotas-TOTAL_FORMS": len(quotas),
        "quotas-INITIAL_FORMS": sum(1 for q in quotas if q.get("id")),
        "quotas-MIN_NUM_FORMS": 0,
        "quotas-MAX_NUM_FORMS": 1000,
    }
    data.update(fields)
    for i, row in enumerate(quotas):
        for key, value in row.items():
            data[f"quotas-{i}-{key}"] = "" if value is None else value
    return data


def quota_row(quota: CohortQuota, **changes: Any) -> dict[str, Any]:
    row = {
        "id": quota.pk,
        "cohort": quota.cohort_id,
        "flavor": quota.flavor_id,
        "nominal": quota.nominal,
        "borrowing_limit": quota.borrowing_limit,
        "lending_limit": quota.lending_limit,
    }
    row.update(changes)
    return row


@pytest.fixture
def department(cohort: Cohort, queue_a: Queue, queue_b: Queue, flavor_h100: Flavor) -> CohortQuota:
    """``research`` is a department under ``org`` with 8 H100 of its own; its queue team-a/main
    (nominal 8) and team-b/main (nominal 8, in ``biology``, under ``org`` too)."""
    org = Cohort.objects.create(name="org")
    cohort.parent = org
    cohort.save()
    queue_b.cohort = Cohort.objects.create(name="biology", parent=org)
    queue_b.save()
    return CohortQuota.objects.create(cohort=cohort, flavor=flavor_h100, nominal=8)


def run_on_the_departments_quota(submit: Callable[..., Job], cycle: Callable[..., Any]) -> Job:
    """An 8-GPU job of team-a/main, then its queue's nominal goes to 0: it runs on research's
    own 8 H100 (the submit form's check reads cohorts as flat, so the quota goes after)."""
    job = submit(gpus=8, name="big")
    cycle(later(1))
    cycle(later(2))
    Quota.objects.filter(queue=job.queue).update(nominal=0)
    return job


def test_admin_creates_a_cohort_and_its_history_starts(
    client: Client, platform_admin: User
) -> None:
    client.force_login(platform_admin)
    response = client.post(reverse("manage-cohort-new"), cohort_post(name="vision"))
    assert response.status_code == 302
    html = client.get(response.url).content.decode()
    assert "Cohort vision" in html and "pat-admin" in html and "— → vision" in html


def test_admin_puts_a_cohort_under_a_parent_with_quotas_and_the_history_says_so(
    client: Client, platform_admin: User, cohort: Cohort, flavor_h100: Flavor
) -> None:
    org = Cohort.objects.create(name="org")
    client.force_login(platform_admin)
    url = reverse("manage-cohort-edit", args=[cohort.pk])
    row = {"flavor": flavor_h100.pk, "nominal": 4, "borrowing_limit": 2, "lending_limit": 6}
    response = client.post(url, cohort_post(cohort, [row], parent=org.pk))
    assert response.status_code == 302
    cohort.refresh_from_db()
    assert cohort.parent == org
    quota = CohortQuota.objects.get(cohort=cohort)
    # a cohort may lend more than its own nominal (what its subtree lends it), as over REST
    assert (quota.nominal, quota.borrowing_limit, quota.lending_limit) == (4, 2, 6)
    changes = {(e.object_label, e.field, e.old, e.new): e.actor for e in AuditEntry.objects.all()}
    assert changes[("research", "parent", None, "org")] == platform_admin
    assert changes[("research quota h100", "nominal", None, 4)] == platform_admin
    html = client.get(url).content.decode()
    assert "research quota h100" in html and "— → org" in html

    response = client.post(url, cohort_post(cohort, [quota_row(quota, nominal=6)]))
    assert response.status_code == 302  # raised: nothing to ask
    assert AuditEntry.objects.filter(object_label="research quota h100", old=4, new=6).exists()


@pytest.mark.parametrize("own", [True, False], ids=["itself", "its-child"])
def test_a_parent_closing_a_cycle_is_a_form_error_on_parent(
    client: Client, platform_admin: User, own: bool
) -> None:
    org = Cohort.objects.create(name="org")
    physics = Cohort.objects.create(name="physics", parent=org)
    client.force_login(platform_admin)
    response = client.post(
        reverse("manage-cohort-edit", args=[org.pk]),
        cohort_post(org, parent=(org if own else physics).pk),
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == ["parent"] and "cycle" in str(errors["parent"])
    assert 'id="id_parent_errors"' in response.content.decode() or "cycle" in (
        response.content.decode()
    )
    org.refresh_from_db()
    assert org.parent is None
    assert not AuditEntry.objects.exists()


def test_bad_quota_values_are_named_and_nothing_is_saved(
    client: Client, platform_admin: User, department: CohortQuota
) -> None:
    cohort = department.cohort
    client.force_login(platform_admin)
    url = reverse("manage-cohort-edit", args=[cohort.pk])
    data = cohort_post(cohort, [quota_row(department, nominal=-1, borrowing_limit="many")])
    response = client.post(url, data)
    assert response.status_code == 200
    errors = response.context["formset"].forms[0].errors
    assert {"nominal", "borrowing_limit"} <= set(errors)
    extra = {"flavor": department.flavor_id, "nominal": 1}  # a second h100 row
    response = client.post(url, cohort_post(cohort, [quota_row(department), extra]))
    assert "duplicate data for flavor" in str(response.context["formset"].non_form_errors())
    department.refresh_from_db()
    assert department.nominal == 8
    assert not AuditEntry.objects.exists()


def test_lowering_a_departments_nominal_below_its_use_names_the_borrowing_jobs_first(
    client: Client, platform_admin: User, department: CohortQuota, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    job = run_on_the_departments_quota(submit, cycle)
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING
    cohort = department.cohort
    client.force_login(platform_admin)
    url = reverse("manage-cohort-edit", args=[cohort.pk])
    data = cohort_post(cohort, [quota_row(department, nominal=2)])
    response = client.post(url, data)
    assert response.status_code == 200  # asks first
    department.refresh_from_db()
    assert department.nominal == 8
    (impact,) = response.context["impacts"]
    assert (impact.cohort, impact.used, impact.old_capacity, impact.new_capacity) == (
        "research", 8, 8, 2,
    )  # fmt: skip
    assert [j.job_id for q in impact.queues for j in q.jobs] == [job.pk]
    html = response.content.decode()
    assert "It borrows 6 from its parent org" in html
    assert f"may be preempted to give GPUs back to other cohorts under org: big (#{job.pk}" in html

    response = client.post(url, {**data, "confirm": "yes"})
    assert response.status_code == 302
    department.refresh_from_db()
    assert department.nominal == 2
    assert AuditEntry.objects.filter(object_label="research quota h100", old=8, new=2).exists()


def test_lowering_a_root_cohorts_nominal_says_nothing_stops(
    client: Client, platform_admin: User, department: CohortQuota, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    cohort = department.cohort
    cohort.parent = None
    cohort.save()
    run_on_the_departments_quota(submit, cycle)
    client.force_login(platform_admin)
    url = reverse("manage-cohort-edit", args=[cohort.pk])
    response = client.post(url, cohort_post(cohort, [quota_row(department, nominal=2)]))
    (impact,) = response.context["impacts"]
    assert impact.over_limit
    assert "Nothing is stopped (research is a root cohort)" in impact.message
    assert "until the subtree&#x27;s usage drops under 2" in response.content.decode()
    # without anything running nothing becomes borrowing, but with team-a's nominal at 0 the
    # 16 H100s would be covered by 10 of quota: it still asks, for the GPUs in no quota
    Job.objects.update(state=Job.State.SUCCEEDED)
    data = cohort_post(cohort, [quota_row(department, nominal=2)])
    response = client.post(url, data)
    assert response.context["impacts"] == [] and len(response.context["stranded"]) == 1
    assert client.post(url, {**data, "confirm": "yes"}).status_code == 302


def test_cohort_pages_are_for_platform_admins_only(
    client: Client, researcher_a: User, team_admin_a: User, cohort: Cohort
) -> None:
    for user in (researcher_a, team_admin_a):
        client.force_login(user)
        for url in (
            reverse("manage-cohorts"),
            reverse("manage-cohort-new"),
            reverse("manage-cohort-edit", args=[cohort.pk]),
        ):
            assert client.get(url).status_code == 403


def test_the_cohort_page_has_the_what_if_section_for_its_quotas(
    client: Client, platform_admin: User, department: CohortQuota
) -> None:
    client.force_login(platform_admin)
    html = client.get(reverse("manage-cohort-edit", args=[department.cohort_id])).content.decode()
    assert 'id="what-if"' in html and 'data-cohort="research"' in html
    assert 'id="cohort-form"' in html and "js/whatif.js" in html


def test_lowering_a_department_shrinks_its_parent_too_and_both_are_said(
    department: CohortQuota, sim_cluster: Cluster, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    from gpusched.engine.model import Quota as EngineQuota
    from queues.services.cohort_impact import cohort_impact

    submit(team="b", gpus=8, name="bio")  # biology's own 8, lent to org while idle
    run_on_the_departments_quota(submit, cycle)
    impacts = cohort_impact(department.cohort, {"h100": EngineQuota(4)}, now=later(3))
    # research keeps 4 of the 8 its queue uses; org (a root) then owns 4 + 8 for 16 in use
    assert [(i.cohort, i.used, i.new_capacity, i.over_limit) for i in impacts] == [
        ("research", 8, 4, False), ("org", 16, 12, True),
    ]  # fmt: skip
    assert "It borrows 4 from its parent org" in impacts[0].message
    assert "Nothing is stopped (org is a root cohort)" in impacts[1].message
    # raising it, or leaving it, says nothing
    assert cohort_impact(department.cohort, {"h100": EngineQuota(8)}, now=later(3)) == []


def test_a_huge_nominal_is_a_form_error_not_a_crash(
    client: Client, platform_admin: User, department: CohortQuota
) -> None:
    client.force_login(platform_admin)
    url = reverse("manage-cohort-edit", args=[department.cohort_id])
    response = client.post(
        url, cohort_post(department.cohort, [quota_row(department, nominal=2**40)])
    )
    assert response.status_code == 200
    assert "nominal" in response.context["formset"].forms[0].errors


def test_a_cohorts_own_nominal_counts_as_quota_when_gpus_would_be_left_in_none(
    client: Client, platform_admin: User, department: CohortQuota, queue_a: Queue,
    queue_b: Queue, sim_cluster: Cluster,
) -> None:  # fmt: skip
    """16 ready H100s; team-a 8, team-b 8 and research's own 8 cover 24. Lowering team-a to 2
    still covers 18: no warning (before, only queues counted: 10, "6 in no quota"). With team-b
    at 0, lowering research's own nominal to 2 leaves 6 in no quota: the cohort editor asks."""
    from tests.queues.views.test_manage import queue_post
    from tests.queues.views.test_manage import quota_row as queue_quota_row

    client.force_login(platform_admin)
    quota_a = queue_a.quotas.get()
    url = reverse("manage-queue-edit", args=[queue_a.pk])
    response = client.post(url, queue_post(queue_a, [queue_quota_row(quota_a, nominal=2)]))
    assert response.status_code == 302  # saved at once
    quota_a.refresh_from_db()
    assert quota_a.nominal == 2

    Quota.objects.filter(queue=queue_a).update(nominal=8)
    Quota.objects.filter(queue=queue_b).update(nominal=0)
    cohort = department.cohort
    url = reverse("manage-cohort-edit", args=[cohort.pk])
    data = cohort_post(cohort, [quota_row(department, nominal=2)])
    response = client.post(url, data)
    assert response.status_code == 200  # asks first
    (item,) = response.context["stranded"]
    assert (item.capacity, item.covered_before, item.covered_after, item.idle) == (16, 16, 10, 6)
    assert "so 6 h100 would be in no queue&#x27;s quota" in response.content.decode()
    department.refresh_from_db()
    assert department.nominal == 8
    assert client.post(url, {**data, "confirm": "yes"}).status_code == 302
    department.refresh_from_db()
    assert department.nominal == 2
