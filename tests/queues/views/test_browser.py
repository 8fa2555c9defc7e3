"""End to end in Debian's Chromium (Playwright): a researcher submits, watches the job start,
reads why a second job waits, cancels it; an admin changes a quota and sees the history; a
researcher cannot reach the admin pages. Screenshots of the main pages go to
artifacts/screenshots/ (gitignored)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from queues.services import run_cycle, submit_job
from tests.browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page: Any, base: str, user: User, password: str) -> None:
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill(user.get_username())
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")


def fill_job(page: Any, name: str, workers: int, gpus: int) -> None:
    page.get_by_label("Queue").select_option(label="team-a/main")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Image").fill("pytorch/pytorch:2.4.0")
    page.get_by_label("Command").fill("python train.py")
    page.get_by_label("Workers", exact=False).first.fill(str(workers))
    page.get_by_label("GPUs per worker").fill(str(gpus))
    page.get_by_label("GPU type or MIG profile").select_option(label="h100")
    page.get_by_label("Service class").select_option(label="standard")


def test_researcher_submits_sees_it_run_reads_why_the_next_waits_and_cancels(
    live_server: Any, page: Any, researcher_a: User, persona_password: str, queue_a: Queue,
    queue_b: Queue, sim_cluster: Cluster, service_class_std: ServiceClass,
) -> None:  # fmt: skip
    base = live_server.url
    log_in(page, base, researcher_a, persona_password)

    page.goto(f"{base}/submit/")
    fill_job(page, "resnet-train", workers=1, gpus=8)
    estimate = page.locator("#estimate")
    estimate.get_by_text("Would start now within the queue's quota").wait_for()
    screenshot(page, "submit")
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**/jobs/*/")
    assert page.locator("#job-state").inner_text() == "Pending"
    first = Job.objects.get(name="resnet-train")

    now = timezone.now()
    run_cycle(now=now + timedelta(seconds=1))  # admits it on the simulated cluster
    run_cycle(now=now + timedelta(seconds=2))  # the cluster reports it running
    page.reload()
    assert page.locator("#job-state").inner_text() == "Running"
    assert "Cluster sim" in page.locator("#placement").inner_text()
    screenshot(page, "job-running")

    page.goto(f"{base}/submit/")
    fill_job(page, "llm-big", workers=2, gpus=8)
    estimate.get_by_text("Would wait").wait_for()
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**/jobs/*/")
    run_cycle(now=now + timedelta(seconds=3))
    page.reload()
    why = page.locator("#why-pending").inner_text()
    assert why.startswith("#1 in queue team-a/main.")
    assert "uses 8 of 8 h100" in why and "this job needs 16" in why
    assert "Estimated start:" in why
    screenshot(page, "job-pending-why")

    page.goto(f"{base}/queues/{queue_a.pk}/")
    assert "llm-big" in page.locator("#pending").inner_text()
    screenshot(page, "queue")
    page.goto(f"{base}/jobs/")
    screenshot(page, "jobs")

    page.goto(f"{base}/jobs/")
    page.get_by_role("link", name="llm-big").click()
    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel job llm-big (#..)?"
    page.get_by_role("button", name="Cancel job").click()
    page.wait_for_load_state()
    assert page.locator("#job-state").inner_text() == "Cancelled"
    assert "Cancelled llm-big" in page.locator(".messages").inner_text()

    # the simulated job (1 h of simulated time at 60x) finishes a minute later
    run_cycle(now=now + timedelta(seconds=120))
    page.goto(f"{base}/jobs/{first.pk}/")
    assert page.locator("#job-state").inner_text() == "Succeeded"


def test_admin_changes_a_quota_and_sees_the_history_entry(
    live_server: Any, page: Any, platform_admin: User, persona_password: str, queue_a: Queue
) -> None:
    base = live_server.url
    log_in(page, base, platform_admin, persona_password)
    page.goto(f"{base}/manage/queues/{queue_a.pk}/")
    page.locator("#id_quotas-0-nominal").fill("12")
    page.get_by_role("button", name="Save queue and quotas").click()
    page.wait_for_load_state()
    assert "Saved queue team-a/main" in page.locator(".messages").inner_text()
    history = page.locator("#history").inner_text()
    assert "pat-admin" in history and "nominal" in history and "8 → 12" in history
    screenshot(page, "manage-queue")


def test_researcher_cannot_reach_admin_pages(
    live_server: Any, page: Any, researcher_a: User, persona_password: str, queue_a: Queue
) -> None:
    base = live_server.url
    log_in(page, base, researcher_a, persona_password)
    assert "Manage" not in page.locator("nav").inner_text()
    for path in ("/manage/", f"/manage/queues/{queue_a.pk}/", "/manage/clusters/", "/admin/"):
        response = page.goto(f"{base}{path}")
        assert response.status in (403, 404), path


def test_admin_lowering_a_quota_below_usage_confirms_first(
    live_server: Any, page: Any, platform_admin: User, researcher_a: User,
    persona_password: str, queue_a: Queue, queue_b: Queue, sim_cluster: Cluster,
    service_class_std: ServiceClass, flavor_h100: Flavor,
) -> None:  # fmt: skip
    job = submit_job(
        owner=researcher_a, queue=queue_a, service_class=service_class_std, name="holder",
        image="pytorch/pytorch:2.4.0", flavors=[flavor_h100], gpus_per_worker=8,
    )  # fmt: skip
    now = timezone.now()
    run_cycle(now=now + timedelta(seconds=1))
    run_cycle(now=now + timedelta(seconds=2))
    base = live_server.url
    log_in(page, base, platform_admin, persona_password)
    page.goto(f"{base}/manage/queues/{queue_a.pk}/")
    page.locator("#id_quotas-0-nominal").fill("4")
    page.get_by_role("button", name="Save queue and quotas").click()
    warning = page.locator("#quota-impact")
    warning.wait_for()
    assert f"holder (#{job.pk})" in warning.inner_text()
    assert "may be preempted" in warning.inner_text()
    screenshot(page, "manage-quota-confirm")
    assert queue_a.quotas.get().nominal == 8  # not saved yet
    warning.get_by_role("button", name="Save anyway").click()
    page.wait_for_load_state()
    assert "8 → 4" in page.locator("#history").inner_text()
    assert queue_a.quotas.get().nominal == 4
