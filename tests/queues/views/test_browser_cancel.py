"""Issue 24 in Debian's Chromium (Playwright): cancelling a job asks first; saying no leaves it
in the queue."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from queues.models import Cluster, Job
from tests.browser import answer_dialogs
from tests.queues.views.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_cancel_asks_before_it_cancels(
    live_server: Any, page: Any, researcher_a: User, persona_password: str,
    sim_cluster: Cluster, submit: Callable[..., Job],
) -> None:  # fmt: skip
    job = submit(gpus=8, name="keep-me")
    log_in(page, live_server.url, researcher_a, persona_password)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    asked = answer_dialogs(page, accept=False)
    page.get_by_role("button", name="Cancel job").click()
    page.wait_for_timeout(300)
    assert asked == [f"Cancel job keep-me (#{job.pk})? Its workers are stopped and it does not "
                     "come back."]  # fmt: skip
    job.refresh_from_db()
    assert job.state == "pending"

    answer_dialogs(page, accept=True)
    page.get_by_role("button", name="Cancel job").click()
    page.wait_for_load_state()
    assert page.locator("#job-state").inner_text() == "Cancelled"
