"""The Content-Security-Policy breaks nothing (issue 26): in Chromium, the dashboards (Plotly),
the submit page's live estimate, the admin site and the API docs (Swagger UI) run without a
single CSP violation or script error."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from dashboards.views import DASHBOARDS
from queues.models import Cluster, Queue, ServiceClass
from tests.queues.views.test_browser import fill_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pages_run_under_the_policy_without_violations(
    live_server: Any, platform_admin: User, persona_password: str, queue_a: Queue,
    sim_cluster: Cluster, service_class_std: ServiceClass, page: Any,
) -> None:  # fmt: skip
    problems: list[str] = []
    page.on(  # a refused script, style or connection is a console message
        "console",
        lambda message: (
            problems.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    base = live_server.url
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", platform_admin.username)
    page.fill("input[name=password]", persona_password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    for slug in DASHBOARDS:
        page.goto(f"{base}/dashboards/{slug}/")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
    page.goto(f"{base}/submit/")
    fill_job(page, "csp-check", workers=1, gpus=8)
    page.locator("#estimate").get_by_text("Would start now").wait_for()  # submit.js ran
    page.goto(f"{base}/admin/queues/queue/{queue_a.pk}/change/")
    page.wait_for_selector("#queue_form")
    page.goto(f"{base}/api/v1/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
    assert problems == []
