"""Issue 24 in Debian's Chromium (Playwright): the job page and the jobs list follow the
scheduler without a reload (static/js/live.js)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from queues.models import Cluster, Job
from queues.services import run_cycle
from queues.views import jobs as job_views
from tests.queues.views.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_job_page_and_list_update_themselves(
    live_server: Any, page: Any, researcher_a: User, persona_password: str,
    sim_cluster: Cluster, submit: Callable[..., Job], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(job_views, "LIVE_SECONDS", 1)
    now = timezone.now()
    job = submit(gpus=8, name="watched", at=now, duration_hint=10**7)
    log_in(page, live_server.url, researcher_a, persona_password)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    assert page.locator("#job-state").inner_text() == "Pending"
    run_cycle(now=now + timedelta(seconds=1))
    run_cycle(now=now + timedelta(seconds=2))
    page.locator("#job-state", has_text="Running").wait_for(timeout=8000)  # no reload
    assert "Cluster sim" in page.locator("#placement").inner_text()

    page.goto(f"{live_server.url}/jobs/")
    state = page.locator("table.jobs .state").first
    assert state.inner_text() == "Running"
    Job.objects.filter(pk=job.pk).update(state=Job.State.SUCCEEDED, finished_at=timezone.now())
    page.locator("table.jobs .state", has_text="Succeeded").wait_for(timeout=8000)
