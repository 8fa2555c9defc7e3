"""Issue 22 in Debian's Chromium (Playwright): an admin lowers a quota on the quota editor, reads
the what-if comparison of the last day replayed under both quotas, then saves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from queues import tasks
from queues.models import Cluster, Job, Queue
from queues.services.whatif import runs
from tests.browser import screenshot
from tests.queues.views.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Celery worker, in process: a queued what-if run is replayed at once."""
    monkeypatch.setattr(tasks.run_what_if, "delay", runs.execute)


@pytest.fixture
def history(
    make_job: Callable[..., Job], researcher_a: User, researcher_b: User, queue_a: Queue,
    queue_b: Queue, sim_cluster: Cluster,
) -> None:  # fmt: skip
    """Team B ran 8 GPUs for 10 h; team A two 8-GPU jobs of 4 h, one after the other."""
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


def open_editor(page: Any, url: str) -> None:
    """The quota editor, once its scripts ran (Plotly is 3.5 MB: slow on a loaded machine)."""
    page.goto(url, wait_until="domcontentloaded", timeout=60_000)


def test_admin_reads_the_what_if_then_saves(
    live_server: Any, page: Any, platform_admin: User, persona_password: str, queue_a: Queue,
    history: None,
) -> None:  # fmt: skip
    base = live_server.url
    log_in(page, base, platform_admin, persona_password)
    open_editor(page, f"{base}/manage/queues/{queue_a.pk}/")
    page.locator("#id_quotas-0-nominal").fill("4")
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
    unchanged = page.locator("#what-if-queues tbody tr", has_text="team-b/main")
    assert unchanged.locator('td[data-key="mean_wait_s"]').inner_text() == "0.0"
    assert page.locator("#what-if-cohorts tbody tr", has_text="research").count() == 1
    for chart in ("#plot-what-if-today", "#plot-what-if-proposed"):
        page.locator(f"{chart} .main-svg").first.wait_for(timeout=30_000)
    screenshot(page, "manage-quota-what-if")
    assert queue_a.quotas.get().nominal == 8  # the what-if saved nothing

    page.get_by_role("button", name="Save queue and quotas").click(no_wait_after=True)
    confirm = page.get_by_role("button", name="Save anyway")  # GPUs no quota covers: confirm
    confirm.click(timeout=60_000, no_wait_after=True)
    page.locator(".messages").wait_for(timeout=60_000)
    assert "8 → 4" in page.locator("#history").inner_text()
    assert queue_a.quotas.get().nominal == 4


def test_a_bad_field_is_named_on_the_page(
    live_server: Any, page: Any, platform_admin: User, persona_password: str, queue_a: Queue
) -> None:
    log_in(page, live_server.url, platform_admin, persona_password)
    open_editor(page, f"{live_server.url}/manage/queues/{queue_a.pk}/")
    page.get_by_label("Days to replay").fill("120")
    page.get_by_role("button", name="Compare with today").click()
    status = page.locator("#what-if-status")
    status.filter(has_text="Cannot replay").wait_for()
    assert "days: Ensure this value is less than or equal to 90." in status.inner_text()
