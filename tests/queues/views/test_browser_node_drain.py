"""Issue 24 in Debian's Chromium (Playwright): a platform admin drains a node from its page; the
drain asks first, names how many jobs it stops, and the page then says the node is draining."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from queues.models import Cluster, Job, Node
from tests.browser import answer_dialogs
from tests.queues.views.conftest import later
from tests.queues.views.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_drain_asks_first_then_the_node_page_says_it_drains(
    live_server: Any, page: Any, platform_admin: User, persona_password: str,
    sim_cluster: Cluster, submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    job = submit(gpus=8, name="on-the-node", duration_hint=10**7)
    cycle(later(1))
    cycle(later(2))
    job.refresh_from_db()
    node = Node.objects.get(cluster=sim_cluster, name=next(iter(job.placement)))
    log_in(page, live_server.url, platform_admin, persona_password)
    page.goto(f"{live_server.url}/nodes/{node.pk}/")
    asked = answer_dialogs(page, accept=False)
    page.get_by_role("button", name="Drain").click()
    page.wait_for_timeout(300)
    assert asked == [f"Drain {node.name}? Its 1 job will be stopped through their grace period "
                     "and requeued."]  # fmt: skip
    node.refresh_from_db()
    assert not node.draining

    answer_dialogs(page, accept=True)
    page.get_by_role("button", name="Drain").click()
    page.wait_for_load_state()
    state = page.locator("#node-state").inner_text()
    assert "draining: its jobs are being stopped and requeued" in state
    assert page.get_by_role("button", name="Drain").is_disabled()
    assert page.get_by_role("button", name="Uncordon").is_enabled()
    node.refresh_from_db()
    assert node.draining and node.cordoned
    assert AuditEntry.objects.filter(object_id=str(node.pk), field="draining").exists()
