"""The cohort tree table on the quotas dashboard in Debian's Chromium, for a platform admin."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.usefixtures("three_levels")
def test_the_cohort_tree_table_is_visible_with_every_level(
    live_server: Any, platform_admin: User, persona_password: str, page: Any
) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", platform_admin.username)
    page.fill("input[name=password]", persona_password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/dashboards/quotas/")
    table = page.locator('table[data-table-id="cohort-tree"]')
    table.wait_for(state="visible", timeout=20_000)
    assert "Cohort tree now" in table.locator("caption").inner_text()
    heads = table.locator("tbody th[scope=row]").all_inner_texts()
    assert [h.strip() for h in heads] == [
        "org", "biology", "team-b/bio", "research", "team-a/main", "team-b/main",
    ]  # fmt: skip
    research = table.locator("tbody tr", has_text="cohort, level 2").nth(1)
    assert research.locator("td").all_inner_texts()[2:] == ["h100", "16", "12", "0", "2", "12"]
    screenshot(page, "dashboard-cohort-tree")
