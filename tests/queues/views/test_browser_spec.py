"""Issue 19 in Debian's Chromium (Playwright): a researcher opens the submit form's Advanced
section and submits a job with env, a PVC and shared memory; submits another from a pasted pod
template; and a template asking for privileges and a host path is refused with the fields named
on the page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from queues.models import Cluster, Job, Queue, ServiceClass
from tests.browser import screenshot
from tests.queues.views.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD_TEMPLATE = """\
apiVersion: v1
kind: Pod
spec:
  containers:
  - name: trainer
    image: registry.example.com/llm/train:7
    command: [torchrun, train.py]
    env: [{name: NCCL_DEBUG, value: INFO}]
    resources: {requests: {cpu: 4, memory: 32Gi}}
"""
BAD_TEMPLATE = """\
apiVersion: v1
kind: Pod
spec:
  containers:
  - name: trainer
    image: registry.example.com/llm/train:7
    securityContext: {privileged: true}
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - {name: host, hostPath: {path: /}}
"""


def where_and_size(page: Any, name: str) -> None:
    """The form's first fields: queue, class, name, size and GPU type (no image)."""
    page.get_by_label("Queue").select_option(label="team-a/main")
    page.get_by_label("Service class").select_option(label="standard")
    page.get_by_label("Name").fill(name)
    page.get_by_label("GPUs per worker").fill("2")
    page.get_by_label("GPU type or MIG profile").select_option(label="h100")


def test_researcher_submits_with_the_advanced_section_and_from_yaml(
    live_server: Any, page: Any, researcher_a: User, persona_password: str, queue_a: Queue,
    sim_cluster: Cluster, service_class_std: ServiceClass,
) -> None:  # fmt: skip
    base = live_server.url
    log_in(page, base, researcher_a, persona_password)

    # the Advanced section: closed at first, then env, a PVC and shared memory
    page.goto(f"{base}/submit/")
    assert not page.get_by_label("Environment").is_visible()
    where_and_size(page, "ddp-advanced")
    page.get_by_label("Image", exact=True).fill("pytorch/pytorch:2.4.0")
    page.get_by_label("Command").fill("torchrun train.py")
    page.get_by_text("Advanced: environment, volumes").click()
    page.get_by_label("Environment").fill("HF_HOME=/cache\nHF_TOKEN from secret hf/token")
    page.get_by_label("Volumes", exact=True).fill("pvc:datasets /data ro")
    page.get_by_label("Shared memory (/dev/shm)").fill("16Gi")
    screenshot(page, "submit-advanced")
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**/jobs/*/")

    spec = page.locator("#container-spec").inner_text()
    assert "HF_HOME" in spec and "HF_TOKEN (from secret hf, key token)" in spec
    assert "/data: persistentVolumeClaim datasets (read-only)" in spec
    assert "16Gi" in spec
    assert "/cache" not in spec  # env values are not shown
    screenshot(page, "job-spec")
    job = Job.objects.get(name="ddp-advanced")
    assert job.spec["shm_size"] == "16Gi"
    assert job.spec["env"][1]["valueFrom"] == {"secretKeyRef": {"name": "hf", "key": "token"}}

    # submit from YAML: the template gives the image, command, env and resources
    page.goto(f"{base}/submit/")
    where_and_size(page, "ddp-yaml")
    page.get_by_text("Submit from YAML").click()
    page.get_by_label("Pod template (YAML)").fill(GOOD_TEMPLATE)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**/jobs/*/")
    assert "registry.example.com/llm/train:7" in page.locator("main").inner_text()
    assert "4 requested, limit 4" in page.locator("#container-spec").inner_text()
    job = Job.objects.get(name="ddp-yaml")
    assert (job.image, job.command) == (
        "registry.example.com/llm/train:7",
        ["torchrun", "train.py"],
    )

    # a template with privileges and a host path is refused, the fields named on the page
    page.goto(f"{base}/submit/")
    where_and_size(page, "ddp-bad")
    page.get_by_text("Submit from YAML").click()
    page.get_by_label("Pod template (YAML)").fill(BAD_TEMPLATE)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_load_state()
    errors = page.locator("#id_pod_template_errors").inner_text()
    assert "pod_template.spec.containers[0].securityContext.privileged: not allowed" in errors
    assert "pod_template.spec.volumes[0].hostPath: not allowed" in errors
    assert page.get_by_label("Pod template (YAML)").is_visible()  # its section open again
    screenshot(page, "submit-yaml-refused")
    assert not Job.objects.filter(name="ddp-bad").exists()
