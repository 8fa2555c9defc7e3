"""Issue 19 in Debian's Chromium (Playwright): a researcher opens their running job's page and
reads its workers' status and their log lines, picks another worker and fewer lines, and the
log follows the run without a reload."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from queues.models import Cluster, Job, SimulatedWorkload
from queues.services import run_cycle
from queues.views import jobs as job_views
from tests.browser import screenshot
from tests.queues.views.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_researcher_reads_the_workers_and_logs_of_a_running_job(
    live_server: Any, page: Any, researcher_a: User, persona_password: str,
    sim_cluster: Cluster, submit: Callable[..., Job], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(job_views, "LIVE_SECONDS", 1)
    now = timezone.now()
    job = submit(gpus=4, workers=2, name="llama-logs", at=now, duration_hint=10**7)
    run_cycle(now=now)
    run_cycle(now=now + timedelta(seconds=1))
    SimulatedWorkload.objects.filter(job_id=str(job.pk)).update(
        launched_at=timezone.now() - timedelta(seconds=30)
    )

    log_in(page, live_server.url, researcher_a, persona_password)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    assert page.locator("#job-state").inner_text() == "Running"
    status = page.locator("#worker-status tbody tr")
    assert status.count() == 2
    for index in (0, 1):
        cells = status.nth(index).locator("td").all_inner_texts()
        assert cells[0] == str(index) and cells[1] == f"job-{job.pk}-{index}"
        assert cells[2] in ("n1", "n2") and cells[3] == "running" and cells[5] == "0"
    log = page.locator("#worker-log")
    first = log.inner_text().splitlines()
    assert f"rank 0 of 2: job {job.pk} starting on" in first[0]
    assert " loss " in first[-1] and len(first) >= 31
    screenshot(page, "job-workers-and-logs")

    page.get_by_label("Worker", exact=True).select_option("1")
    page.get_by_label("Lines", exact=True).fill("5")
    page.get_by_role("button", name="Refresh").click()
    page.locator("#log-heading", has_text="Log of worker 1 (last 5 lines)").wait_for()
    assert len(log.inner_text().splitlines()) == 5
    before = log.inner_text().splitlines()[-1]
    page.locator("body").click()  # the live refresh waits while a field has the focus
    # A step line a second at 60x: the log follows the run without a reload (polled from
    # here: wait_for_function evaluates a string, which the site's CSP forbids).
    for _ in range(40):
        page.wait_for_timeout(200)
        if log.inner_text().splitlines()[-1] != before:
            break
    latest = log.inner_text().splitlines()
    assert latest[-1] != before and len(latest) == 5
