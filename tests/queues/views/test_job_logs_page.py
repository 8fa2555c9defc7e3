"""The job page's "Workers and logs" panel (issue 19): a running job's workers as the cluster
reports them and one worker's last log lines; a pending job has nothing to show and says so; a
bad worker or tail is shown beside its field; an unreachable cluster is said on the page (not
a server error); finance never gets the page."""

from __future__ import annotations

import html
import re
import socket
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from queues.models import Cluster, Job, SimulatedWorkload

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(submit: Callable[..., Job], sim_cluster: Cluster, cycle: Callable[..., Any]) -> Job:
    """Team A's 2-worker job, launched on the simulated cluster 30 s ago (30 step lines)."""
    now = timezone.now()
    job = submit(gpus=4, workers=2, name="llama", at=now, duration_hint=10**6)
    cycle(now)
    cycle(now + timedelta(seconds=1))
    SimulatedWorkload.objects.filter(job_id=str(job.pk)).update(
        launched_at=timezone.now() - timedelta(seconds=30)
    )
    job.refresh_from_db()
    assert job.state == "running"
    return job


def panel(client: Client, job: Job, **query: Any) -> str:
    """The page's "Workers and logs" section, as HTML."""
    response = client.get(f"/jobs/{job.pk}/", query)
    assert response.status_code == 200
    found = re.search(r'<section [^>]*id="workers">.*?</section>', response.content.decode(), re.S)
    assert found is not None
    return found.group(0)


def log_lines(section: str) -> list[str]:
    found = re.search(r'<pre id="worker-log"[^>]*>(.*?)</pre>', section, re.S)
    return html.unescape(found.group(1)).splitlines() if found else []


def rows(section: str) -> list[list[str]]:
    body = re.search(r'<table id="worker-status">.*?<tbody>(.*?)</tbody>', section, re.S)
    assert body is not None
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)
    ]


def test_a_running_jobs_workers_and_the_first_workers_log(
    client: Client, researcher_a: User, running: Job
) -> None:
    client.force_login(researcher_a)
    section = panel(client, running)
    assert [(row[0], row[1], row[3], row[5]) for row in rows(section)] == [
        ("0", f"job-{running.pk}-0", "running", "0"),
        ("1", f"job-{running.pk}-1", "running", "0"),
    ]
    log = log_lines(section)
    assert "rank 0 of 2" in log[0] and " loss " in log[-1] and len(log) >= 31
    assert '<h3 id="log-heading">Log of worker 0 (last ' in section


def test_another_worker_and_a_shorter_tail(
    client: Client, researcher_a: User, running: Job
) -> None:
    client.force_login(researcher_a)
    section = panel(client, running, worker=1, tail=4)
    log = log_lines(section)
    assert len(log) == 4 and all(" step " in line for line in log)
    assert '<option value="1" selected>1</option>' in section
    assert 'name="tail" id="log-tail" min="1" max="5000" value="4"' in section


def test_a_bad_tail_is_shown_beside_its_field(
    client: Client, researcher_a: User, running: Job
) -> None:
    client.force_login(researcher_a)
    section = panel(client, running, tail=99999)
    errors = re.search(r'<ul id="log-tail-errors" class="field-errors"><li>(.*?)</li>', section)
    assert errors is not None and "1 to 5000" in errors.group(1)
    assert 'aria-describedby="log-tail-help log-tail-errors" aria-invalid="true"' in section
    assert len(log_lines(section)) >= 31  # the default 100 lines instead


def test_a_pending_job_has_nothing_to_show_and_says_so(
    client: Client, researcher_a: User, submit: Callable[..., Job], sim_cluster: Cluster
) -> None:
    job = submit(gpus=8)
    client.force_login(researcher_a)
    section = panel(client, job)
    assert '<p id="workers-detail">' in section
    assert "is pending: it holds no GPUs on a cluster yet" in section
    assert "worker-status" not in section and "worker-log" not in section


def test_an_unreachable_cluster_is_said_on_the_page(
    client: Client, researcher_a: User, running: Job
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    Cluster.objects.filter(pk=running.cluster_id).update(
        driver="kubernetes", api_url=f"http://127.0.0.1:{port}", token="t"
    )
    client.force_login(researcher_a)
    section = panel(client, running)
    assert (
        '<p class="errors" role="alert" id="workers-error">Cluster sim cannot be read now:'
        in section
    )


def test_finance_gets_no_job_page(client: Client, finance_user: User, running: Job) -> None:
    client.force_login(finance_user)
    assert client.get(f"/jobs/{running.pk}/").status_code == 404
