"""Every dashboard in Debian's Chromium: logs in, waits for Plotly to draw, saves a screenshot
to artifacts/screenshots/dashboard-<name>.png."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from dashboards.views import DASHBOARDS
from queues.models import Queue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A page in Debian's Chromium. Started after the test's data is in the database: Playwright
    runs an event loop that makes Django refuse ORM calls from this thread."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900})
        finally:
            browser.close()


def test_every_dashboard_draws_its_plots(
    live_server: Any,
    platform_admin: User,
    persona_password: str,
    queue_a: Queue,
    queue_b: Queue,
    grow: Callable[[int], None],
) -> None:
    grow(3)
    username = platform_admin.username
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with chromium_page() as page:
        _visit_every_dashboard(page, live_server.url, username, persona_password)


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
        page.screenshot(path=str(SCREENSHOTS / f"dashboard-{slug}.png"), full_page=True)


def test_a_dashboard_refreshes_itself_from_its_json_endpoint(
    live_server: Any,
    platform_admin: User,
    persona_password: str,
    queue_a: Queue,
    queue_b: Queue,
    grow: Callable[[int], None],
) -> None:
    grow(1)
    username = platform_admin.username
    with chromium_page() as page:
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
        page.wait_for_function(
            "document.querySelector('.dashboard-status').textContent.startsWith('Updated')"
        )
