"""Issue 24 in Debian's Chromium (Playwright): the budget banner a team member sees says the
spend now (85 % when 85 % is used, 90 % after the next accrual), with no list bullet."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User

from accounting.ledger import accrue_usage
from accounting.models import Budget
from tests.accounting.helpers import at
from tests.queues.views.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_budget_banner_reads_the_spend_now_without_a_bullet(
    live_server: Any, page: Any, script: Any, queue_a: Any, researcher_a: User,
    persona_password: str, h100_price: Any, team_a: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    Budget.objects.create(team=team_a, month=date(2026, 3, 1), amount=Decimal("10.00"))
    script(queue=queue_a, owner=researcher_a).run(at(0))  # one H100: 2.00 an hour
    accrue_usage(at(4))  # 8.00: the 80 % alert
    accrue_usage(at(4.25))  # 8.50
    monkeypatch.setattr("accounting.context_processors.current_time", lambda: at(4.25))
    log_in(page, live_server.url, researcher_a, persona_password)
    banner = page.locator(".budget-alerts")
    assert "has used 85% of its March 2026 GPU budget: 8.50 of 10.00" in banner.inner_text()
    assert banner.locator("li").count() == 0
    marker = banner.locator("p").first.evaluate("e => getComputedStyle(e).display")
    assert marker != "list-item"  # no bullet

    accrue_usage(at(4.5))
    monkeypatch.setattr("accounting.context_processors.current_time", lambda: at(4.5))
    page.reload()
    assert "has used 90% of its March 2026 GPU budget: 9.00 of 10.00" in banner.inner_text()
