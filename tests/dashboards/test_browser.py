"""Every dashboard in Debian's Chromium: logs in, waits for Plotly to draw, saves a screenshot
to artifacts/screenshots/dashboard-<name>.png."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from dashboards.views import DASHBOARDS
from queues.models import Queue
from tests.browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_every_dashboard_draws_its_plots(
    live_server: Any,
    platform_admin: User,
    persona_password: str,
    queue_a: Queue,
    queue_b: Queue,
    grow: Callable[[int], None],
    page: Any,
) -> None:
    grow(3)
    _visit_every_dashboard(page, live_server.url, platform_admin.username, persona_password)


def _visit_every_dashboard(page: Any, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    for slug in DASHBOARDS:
        page.goto(f"{base}/dashboards/{slug}/")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
        plots = page.locator(".js-plotly-plot")
        assert plots.count() >= 1, slug
        assert page.locator(".js-plotly-plot svg").count() >= 1, slug
        assert page.locator("details table").count() == plots.count(), slug
        screenshot(page, f"dashboard-{slug}")


def test_a_dashboard_refreshes_itself_from_its_json_endpoint(
    live_server: Any,
    platform_admin: User,
    persona_password: str,
    queue_a: Queue,
    queue_b: Queue,
    grow: Callable[[int], None],
    page: Any,
) -> None:
    grow(1)
    username = platform_admin.username
    page.clock.install()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", persona_password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/dashboards/quotas/?range=day")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
    with page.expect_response(lambda r: "/dashboards/quotas/data/" in r.url) as answer:
        page.clock.run_for(16_000)  # past the 15 s refresh period
    assert answer.value.status == 200
    assert "range=day" in answer.value.url
    # a locator, not wait_for_function: its polling evaluates a string, which the CSP forbids
    page.locator(".dashboard-status", has_text="Updated").wait_for()
