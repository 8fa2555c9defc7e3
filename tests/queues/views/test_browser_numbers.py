"""Issue 24 in Debian's Chromium (Playwright): on the simulated cluster (60x) a researcher
sees one clock: the job page says what a 4 h runtime takes on the wall clock, and the start the
estimate panel and the job page give the job behind it is minutes away, not hours."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from queues.models import Cluster, Job, Queue, ServiceClass
from queues.services import run_cycle
from tests.queues.views.test_browser import fill_job, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STAMP = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?) UTC")


def stamp(text: str) -> datetime:
    found = STAMP.search(text.split("stimated start")[-1])
    assert found, text
    value = found.group(1)
    fmt = "%Y-%m-%d %H:%M:%S" if value.count(":") == 2 else "%Y-%m-%d %H:%M"
    return datetime.strptime(value, fmt).replace(tzinfo=UTC)


def test_estimates_and_runtime_labels_read_the_wall_clock(
    live_server: Any, page: Any, researcher_a: User, persona_password: str, queue_a: Queue,
    queue_b: Queue, sim_cluster: Cluster, service_class_std: ServiceClass,
) -> None:  # fmt: skip
    base = live_server.url
    log_in(page, base, researcher_a, persona_password)
    page.goto(f"{base}/submit/")
    fill_job(page, "four-hours", workers=2, gpus=8)
    page.get_by_label("Estimated runtime (minutes, optional)").fill("240")
    page.locator("#estimate").get_by_text("Would start now").wait_for()
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**/jobs/*/")
    now = timezone.now()
    run_cycle(now=now)
    run_cycle(now=now + timedelta(seconds=1))
    long = Job.objects.get(name="four-hours")
    assert long.state == "running"
    page.reload()
    note = page.locator("#runtime-note").inner_text()
    assert "about 4 min of wall-clock time" in note and "60x faster" in note

    page.goto(f"{base}/submit/")
    fill_job(page, "behind", workers=1, gpus=8)
    waiting = page.locator("#estimate").get_by_text("Would wait (estimated start")
    waiting.wait_for()
    panel = stamp(waiting.inner_text())
    assert panel - now < timedelta(minutes=6)  # 4 wall minutes away, not 4 hours
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**/jobs/*/")
    run_cycle(now=now + timedelta(seconds=2))
    page.reload()
    shown = stamp(page.locator("#why-pending").inner_text())
    assert timedelta(minutes=3) < shown - now < timedelta(minutes=6)
    assert abs(shown - panel) < timedelta(minutes=1)  # the panel and the page agree
