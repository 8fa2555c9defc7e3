"""Issue 22 in Debian's Chromium (Playwright): an admin lowers a department's own quota (a
cohort with a parent) on the cohort editor, reads the what-if comparison of the last day
replayed under both, then saves, and the change history has it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from audit.models import AuditEntry
from queues import tasks
from queues.models import Cluster, Cohort, CohortQuota, Flavor, Job, Queue, Quota
from queues.services.whatif import runs
from tests.browser import screenshot
from tests.queues.views.test_browser import log_in
from tests.queues.views.test_browser_whatif import open_editor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Celery worker, in process: a queued what-if run is replayed at once."""
    monkeypatch.setattr(tasks.run_what_if, "delay", runs.execute)


@pytest.fixture
def department(
    make_job: Callable[..., Job], researcher_a: User, researcher_b: User, cohort: Cohort,
    queue_a: Queue, queue_b: Queue, sim_cluster: Cluster, flavor_h100: Flavor,
) -> Cohort:  # fmt: skip
    """``org`` over ``research`` (8 H100 of its own; team-a/main, nominal 0) and ``biology``
    (team-b/main, nominal 8). Team B ran 8 GPUs for 10 h; team A two 8-GPU jobs of 4 h, one
    after the other on research's 8."""
    org = Cohort.objects.create(name="org")
    Cohort.objects.filter(pk=cohort.pk).update(parent=org)
    CohortQuota.objects.create(cohort=cohort, flavor=flavor_h100, nominal=8)
    queue_b.cohort = Cohort.objects.create(name="biology", parent=org)
    queue_b.save()
    Quota.objects.filter(queue=queue_a).update(nominal=0)
    now = timezone.now()

    def ran(queue: Queue, owner: User, submitted: float, started: float, hours: float) -> None:
        make_job(
            queue=queue, owner=owner, state=Job.State.SUCCEEDED, gpus_per_worker=8,
            cluster=sim_cluster, submitted_at=now - timedelta(hours=submitted),
            started_at=now - timedelta(hours=started),
            finished_at=now - timedelta(hours=started - hours),
        )  # fmt: skip

    ran(queue_b, researcher_b, 20, 20, 10)
    ran(queue_a, researcher_a, 19.9, 19.9, 4)
    ran(queue_a, researcher_a, 19.9, 15.9, 4)
    return cohort


def test_admin_reads_a_departments_what_if_then_saves(
    live_server: Any, page: Any, platform_admin: User, persona_password: str, department: Cohort
) -> None:
    base = live_server.url
    log_in(page, base, platform_admin, persona_password)
    open_editor(page, f"{base}/manage/cohorts/{department.pk}/")
    org_pk = Cohort.objects.get(name="org").pk
    assert page.get_by_label("Parent").input_value() == str(org_pk)
    page.locator("#id_quotas-0-nominal").fill("0")
    page.get_by_label("Days to replay").fill("1")
    page.get_by_role("button", name="Compare with today").click()

    result = page.locator("#what-if-result")
    result.wait_for(state="visible", timeout=60_000)
    status = page.locator("#what-if-status").inner_text()
    assert "Replayed 3 jobs submitted in the last day, twice" in status
    row = page.locator("#what-if-queues tbody tr", has_text="team-a/main")
    mean_wait = row.locator('td[data-key="mean_wait_s"]')
    assert mean_wait.inner_text().startswith("2.0 → ")  # hours: today 2.0, then longer
    assert mean_wait.get_attribute("class") == "worse"
    cohorts = page.locator("#what-if-cohorts tbody tr")
    assert cohorts.filter(has_text="research").count() == 1
    org = cohorts.filter(has_text="org").locator('td[data-key="jobs"]')
    assert org.inner_text() == "3"  # the parent's row adds up both departments
    screenshot(page, "manage-cohort-what-if")
    assert CohortQuota.objects.get().nominal == 8  # the what-if saved nothing

    page.get_by_role("button", name="Save cohort and quotas").click()
    # team-a's nominal is 0: without research's own 8, 8 of the 16 H100s are in no quota
    warning = page.locator("#stranded-gpus")
    warning.wait_for(timeout=60_000)
    assert "so 8 h100 would be in no queue's quota" in warning.inner_text()
    assert CohortQuota.objects.get().nominal == 8  # it asks first
    page.get_by_role("button", name="Save anyway").click()
    page.locator(".messages").wait_for(timeout=60_000)
    assert "8 → 0" in page.locator("#history").inner_text()
    assert CohortQuota.objects.get().nominal == 0
    entry = AuditEntry.objects.get(object_label="research quota h100", field="nominal")
    assert (entry.actor, entry.old, entry.new) == (platform_admin, 8, 0)
