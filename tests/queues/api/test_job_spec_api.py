"""A job's spec through the REST API (issue 19): what a submission gives comes back on the job,
key by key, so a client can read a job and submit it again; a pod template (an object or YAML
text) is folded into the same keys; odd JSON answers 400 naming the field, never 500."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from queues.models import Job
from queues.models.job_spec import SPEC_FIELDS

Api = Callable[[User | None], APIClient]
Body = Callable[..., dict[str, Any]]

pytestmark = pytest.mark.django_db

SPEC = {
    "args": ["--epochs", "3"],
    "env": [
        {"name": "HF_HOME", "value": "/cache"},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
    ],
    "volumes": [
        {
            "name": "data",
            "mountPath": "/data",
            "readOnly": True,
            "persistentVolumeClaim": {"claimName": "datasets"},
        },
    ],
    "shm_size": "16Gi",
    "cpu": "8",
    "memory": "64Gi",
    "cpu_limit": "",
    "memory_limit": "",
    "image_pull_secret": "regcred",
    "working_dir": "/workspace",
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml"}],
    "labels": {"example.com/project": "llm"},
    "annotations": {"example.com/note": "x"},
    "host_network": False,
}


def test_the_job_answers_with_the_spec_it_was_given_and_it_submits_again(
    api: Api, job_body: Body, researcher_a: User
) -> None:
    client = api(researcher_a)

    created = client.post("/api/v1/jobs/", job_body(**SPEC), format="json")

    assert created.status_code == 201, created.json()
    job = client.get(f"/api/v1/jobs/{created.json()['id']}/").json()
    assert {k: job[k] for k in SPEC_FIELDS} == SPEC
    again = {k: job[k] for k in ("name", "image", "command", "flavors", "workers", *SPEC_FIELDS)}
    resubmitted = client.post("/api/v1/jobs/", job_body(**again), format="json")
    assert resubmitted.status_code == 201, resubmitted.json()
    first, second = Job.objects.order_by("pk")
    assert first.spec == second.spec


def test_a_job_without_a_spec_answers_with_the_defaults(
    api: Api, job_body: Body, researcher_a: User
) -> None:
    job = api(researcher_a).post("/api/v1/jobs/", job_body(), format="json").json()
    assert {k: job[k] for k in ("env", "volumes", "shm_size", "labels", "host_network")} == {
        "env": [], "volumes": [], "shm_size": "", "labels": {}, "host_network": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    "template",
    [
        {"spec": {"containers": [{"image": "img:1", "command": ["python"], "args": ["t.py"]}]}},
        "spec:\n  containers:\n  - {image: 'img:1', command: [python], args: [t.py]}\n",
    ],
    ids=["object", "YAML text"],
)
def test_a_pod_template_as_an_object_or_yaml_text(
    api: Api, job_body: Body, researcher_a: User, template: Any
) -> None:
    body = job_body(image="", command=[], pod_template=template)
    job = api(researcher_a).post("/api/v1/jobs/", body, format="json").json()
    assert (job["image"], job["command"], job["args"]) == ("img:1", ["python"], ["t.py"])


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"env": [None, 3]}, "env"),
        ({"env": {"A": "b"}}, "env"),
        ({"volumes": [{"name": ["x"], "mountPath": {}, "emptyDir": 1}]}, "volumes"),
        ({"labels": ["a=b"]}, "labels"),
        ({"annotations": {"a": 1}}, "annotations"),
        ({"cpu": [8]}, "cpu"),
        ({"cpu": True}, "cpu"),
        ({"shm_size": {"size": "1Gi"}}, "shm_size"),
        ({"working_dir": 5}, "working_dir"),
        ({"host_network": "yes"}, "host_network"),
        ({"tolerations": [{"key": None, "tolerationSeconds": 1.5}]}, "tolerations"),
        ({"image": "", "command": [], "pod_template": [1, 2]}, "pod_template"),
        ({"image": "", "command": [], "pod_template": {"spec": None}}, "pod_template"),
        ({"env": [{"name": "A", "value": "nul\u0000"}]}, "env"),
    ],
)
def test_odd_json_answers_400_naming_the_field(
    api: Api, job_body: Body, researcher_a: User, changes: dict[str, Any], field: str
) -> None:
    response = api(researcher_a).post("/api/v1/jobs/", job_body(**changes), format="json")
    assert response.status_code == 400
    assert set(response.json()) == {field}, response.json()
    assert not Job.objects.exists()
