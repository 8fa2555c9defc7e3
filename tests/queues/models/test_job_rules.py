"""The three-way test of queues/models/job_rules.py: one table of bad submissions, each sent to
the submit form (through its view, Submit and Check), the form's live estimate, ``POST
/api/v1/jobs/`` and ``POST /api/v1/jobs/estimate/``. Every path names the same fields; where the
error is a rule's (not a parse error of the path's own input) the messages are the same too.
Nothing is created, nothing is a server error; the good rows are accepted by every path.

The world: team A's queue ``main`` (8 H100, in a cohort with team B's), its closed queue, its
queue that accepts only the spot class, its queue capped at 4 + 4 H100; a class that may not
borrow; an A100 flavor no queue has a quota for; one cluster of two 8-H100 nodes.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from queues.forms.submit import LINES
from queues.models import Cluster, Cohort, Flavor, Job, Queue, Quota, ServiceClass, Team
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db

RULE, PARSE = "rule", "parse"  # a rule of job_rules (same message everywhere), a parse error
FORM_PATHS = ("form", "form-check", "form-estimate")
API_PATHS = ("api", "api-estimate")
PATHS = FORM_PATHS + API_PATHS
FLAVOR_FIELDS = ("flavor", "fallback_1", "fallback_2")  # the form's names for "flavors"


@dataclass(frozen=True)
class Row:
    changes: dict[str, Any]  # to the good body, in the API's terms (names for objects)
    field: str  # the one field every path names
    kind: str = RULE
    says: str = ""  # part of the message, where it matters which rule spoke
    paths: tuple[str, ...] = field(default=PATHS)


def template(
    container: dict[str, Any] | None = None, spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Changes that submit a pod template (image and command in it) instead."""
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"project": "llm"}},
        "spec": {"containers": [{"name": "main", "image": "pytorch/pytorch:2.4.0",
                                 "command": ["python", "train.py"], **(container or {})}],
                 **(spec or {})},
    }  # fmt: skip
    return {"image": "", "command": [], "pod_template": pod}


SPEC = {
    "env": [{"name": "HF_HOME", "value": "/cache"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
    "volumes": [{"name": "datasets", "mountPath": "/data", "readOnly": True,
                 "persistentVolumeClaim": {"claimName": "datasets"}},
                {"name": "train-config", "mountPath": "/etc/train", "readOnly": False,
                 "configMap": {"name": "train-config"}}],
    "shm_size": "16Gi", "cpu": "8", "memory": "64Gi", "memory_limit": "80Gi",
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],  # noqa: E501
    "labels": {"example.com/project": "llm"}, "working_dir": "/workspace", "args": ["--epochs", "3"],  # noqa: E501
}  # fmt: skip


BAD = {
    "queue of another team": Row({"queue": "team-b/main"}, "queue", PARSE),
    "closed queue": Row({"queue": "team-a/closed"}, "queue", says="closed to new jobs"),
    "class the queue refuses": Row(
        {"queue": "team-a/spot-only"}, "service_class", says="does not accept the 'standard'"
    ),
    "unknown flavor": Row({"flavors": ["tpu-v5"]}, "flavors", PARSE),
    "flavor without quota": Row({"flavors": ["a100"]}, "flavors", says="no quota for a100"),
    "fallback without quota": Row({"flavors": ["h100", "a100"]}, "flavors", says="no quota"),
    "repeated flavor": Row({"flavors": ["h100", "h100"]}, "flavors", says="repeated: h100"),
    "name not a DNS label": Row({"name": "Not A DNS Label"}, "name"),
    "name too long": Row({"name": "x" * 64}, "name"),
    "image too long": Row({"image": "x" * 501}, "image"),
    "command too long": Row({"command": ["x"] * 257}, "command"),
    "no worker": Row({"workers": 0}, "workers"),
    "negative workers": Row({"workers": -3}, "workers"),
    "too many workers": Row({"workers": 100_001}, "workers"),
    "workers not a number": Row({"workers": "many"}, "workers", PARSE),
    "no GPU": Row({"gpus_per_worker": 0}, "gpus_per_worker"),
    "too many GPUs per worker": Row({"gpus_per_worker": 10_001}, "gpus_per_worker"),
    "elastic minimum above workers": Row({"workers": 2, "min_workers": 3}, "min_workers"),
    "elastic minimum of 0": Row({"workers": 2, "min_workers": 0}, "min_workers"),
    # issue 24: jobs that can never run
    "worker larger than any node": Row(
        {"gpus_per_worker": 9}, "gpus_per_worker", says="No node can hold"
    ),
    "1024 workers x 64 GPUs": Row(
        {"workers": 1024, "gpus_per_worker": 64}, "gpus_per_worker", says="No node can hold"
    ),
    "gang larger than the cluster": Row(
        {"workers": 3, "gpus_per_worker": 8}, "workers", says="more than any cluster holds"
    ),
    "elastic minimum larger than the cluster": Row(
        {"workers": 4, "min_workers": 3, "gpus_per_worker": 8}, "min_workers", says="any cluster"
    ),
    "above nominal, class may not borrow": Row(
        {"service_class": "guaranteed", "workers": 2, "gpus_per_worker": 8},
        "workers",
        says="class guaranteed may not borrow",
    ),
    "above nominal + borrowing limit": Row(
        {"queue": "team-a/capped", "workers": 3, "gpus_per_worker": 4},
        "workers",
        says="(at most 8)",
    ),
    "topology level without mode": Row({"topology_level": "rack"}, "topology_mode"),
    "topology mode without level": Row({"topology_mode": "required"}, "topology_level"),
    "unknown topology mode": Row(
        {"topology_level": "rack", "topology_mode": "sometimes"}, "topology_mode", PARSE
    ),
    "runtime of 0": Row({"estimated_runtime": 0}, "estimated_runtime"),
    "negative runtime": Row({"estimated_runtime": -60}, "estimated_runtime"),
    # the form has no such fields
    "checkpoint interval of 0": Row({"checkpoint_interval": 0}, "checkpoint_interval", paths=API_PATHS),  # noqa: E501
    "duration hint too long": Row({"duration_hint": 2**31}, "duration_hint", paths=API_PATHS),
    # issue 19: the job's spec (queues/models/job_spec.py)
    "env name not valid": Row({"env": [{"name": "1BAD", "value": "x"}]}, "env", says="env[0].name"),
    "env of the platform": Row({"env": [{"name": "RANK", "value": "1"}]}, "env", says="set by the platform"),  # noqa: E501
    "env set twice": Row({"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}, "env", says="env[1].name"),  # noqa: E501
    "env from a badly named secret": Row(
        {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "Bad_Secret", "key": "k"}}}]},
        "env", says="env[0].valueFrom.secretKeyRef.name",
    ),
    "env not a list": Row({"env": "A=b"}, "env", says="must be a list", paths=API_PATHS),
    "env from a field": Row(
        {"env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]},
        "env", says="only secretKeyRef", paths=API_PATHS,
    ),
    "relative mount path": Row(
        {"volumes": [{"name": "data", "mountPath": "data", "persistentVolumeClaim": {"claimName": "data"}}]},  # noqa: E501
        "volumes", says="volumes[0].mountPath",
    ),
    "mount path twice": Row(
        {"volumes": [{"name": "data", "mountPath": "/d", "persistentVolumeClaim": {"claimName": "data"}},  # noqa: E501
                     {"name": "cfg", "mountPath": "/d", "configMap": {"name": "cfg"}}]},
        "volumes", says="/d is mounted twice",
    ),
    "volume over /dev/shm with shm_size": Row(
        {"shm_size": "1Gi", "volumes": [{"name": "emptydir-1", "mountPath": "/dev/shm", "emptyDir": {}}]},  # noqa: E501
        "volumes", says="shm_size mounts /dev/shm",
    ),
    "claim name not valid": Row(
        {"volumes": [{"name": "pvc-1", "mountPath": "/d", "persistentVolumeClaim": {"claimName": "Bad_Claim"}}]},  # noqa: E501
        "volumes", says="volumes[0].persistentVolumeClaim.claimName",
    ),
    "hostPath volume": Row(
        {"volumes": [{"name": "h", "mountPath": "/h", "hostPath": {"path": "/"}}]},
        "volumes", says="volumes[0].hostPath: not allowed", paths=API_PATHS,
    ),
    "volume with two sources": Row(
        {"volumes": [{"name": "v", "mountPath": "/v", "emptyDir": {}, "secret": {"secretName": "s"}}]},  # noqa: E501
        "volumes", says="exactly one source", paths=API_PATHS,
    ),
    "shm size not a quantity": Row({"shm_size": "lots"}, "shm_size", says="not a Kubernetes quantity"),  # noqa: E501
    "shm size of 0": Row({"shm_size": "0"}, "shm_size", says="greater than 0"),
    "shm above the memory limit": Row({"memory": "1Gi", "shm_size": "2Gi"}, "shm_size", says="memory limit"),  # noqa: E501
    "cpu not a quantity": Row({"cpu": "eight"}, "cpu"),
    "negative memory": Row({"memory": "-1Gi"}, "memory"),
    "cpu limit below the request": Row({"cpu": "8", "cpu_limit": "4"}, "cpu_limit", says="below the request"),  # noqa: E501
    "memory limit not a quantity": Row({"memory_limit": "64 GB"}, "memory_limit"),
    "image pull secret not a name": Row({"image_pull_secret": "Bad_Secret"}, "image_pull_secret"),
    "toleration effect unknown": Row(
        {"tolerations": [{"key": "a", "operator": "Equal", "value": "b", "effect": "Sometimes"}]},
        "tolerations", says="tolerations[0]: effect",
    ),
    "toleration key not valid": Row(
        {"tolerations": [{"key": "a/b/c", "operator": "Equal", "value": "v"}]}, "tolerations", says="key"  # noqa: E501
    ),
    "toleration operator unknown": Row(
        {"tolerations": [{"key": "a", "operator": "Maybe"}]}, "tolerations", says="operator", paths=API_PATHS  # noqa: E501
    ),
    "working directory relative": Row({"working_dir": "work"}, "working_dir", says="absolute"),
    "label of the platform": Row({"labels": {"gpuplatform/team": "x"}}, "labels", says="set by the platform"),  # noqa: E501
    "label of Kueue": Row({"labels": {"kueue.x-k8s.io/queue-name": "q"}}, "labels", says="set by the platform"),  # noqa: E501
    "label managed-by": Row({"labels": {"app.kubernetes.io/managed-by": "me"}}, "labels", says="set by the platform"),  # noqa: E501
    "label value not valid": Row({"labels": {"project": "not valid!"}}, "labels", says="label value"),  # noqa: E501
    "annotation of Kueue": Row({"annotations": {"kueue.x-k8s.io/x": "y"}}, "annotations", says="set by the platform"),  # noqa: E501
    "host network in a class without it": Row({"host_network": True}, "host_network", says="does not allow host networking"),  # noqa: E501
    "args not a list": Row({"args": "--epochs 3"}, "args", paths=API_PATHS),
    # issue 19: submit from YAML (queues/models/pod_template.py)
    "template: privileged": Row(
        template(container={"securityContext": {"privileged": True}}),
        "pod_template", says="pod_template.spec.containers[0].securityContext.privileged: not allowed",  # noqa: E501
    ),
    "template: hostPath volume": Row(
        template(container={"volumeMounts": [{"name": "h", "mountPath": "/h"}]},
                 spec={"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}),
        "pod_template", says="pod_template.spec.volumes[0].hostPath: not allowed",
    ),
    "template: privilege escalation": Row(
        template(container={"securityContext": {"allowPrivilegeEscalation": True}}),
        "pod_template", says="allowPrivilegeEscalation: not allowed",
    ),
    "template: capabilities added": Row(
        template(container={"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
        "pod_template", says="securityContext.capabilities.add: not allowed",
    ),
    "template: host network in a class without it": Row(
        template(spec={"hostNetwork": True}), "pod_template", says="pod_template.spec.hostNetwork"
    ),
    "template: host PID": Row(template(spec={"hostPID": True}), "pod_template", says="hostPID: not allowed"),  # noqa: E501
    "template: node selector": Row(template(spec={"nodeSelector": {"a": "b"}}), "pod_template", says="nodeSelector: not allowed"),  # noqa: E501
    "template: a sidecar": Row(
        template(spec={"containers": [{"image": "a"}, {"image": "b"}]}),
        "pod_template", says="pod_template.spec.containers[1]: not supported",
    ),
    "template: GPUs of its own": Row(
        template(container={"resources": {"limits": {"nvidia.com/gpu": 8}}}),
        "pod_template", says="limits.nvidia.com/gpu: not allowed",
    ),
    "template: unknown field": Row(template(spec={"dnsConfig": {}}), "pod_template", says="pod_template.spec.dnsConfig: not supported"),  # noqa: E501
    "template: platform env": Row(
        template(container={"env": [{"name": "MASTER_ADDR", "value": "x"}]}),
        "pod_template", says="pod_template.spec.containers[0].env[0].name",
    ),
    "template: not YAML": Row(
        {"image": "", "command": [], "pod_template": "spec: [unclosed"}, "pod_template", says="not valid YAML"  # noqa: E501
    ),
    "template: image also given": Row(
        {**template(), "image": "other:1"}, "pod_template", says="image is given twice"
    ),
}  # fmt: skip

GOOD = {
    "one GPU": {},
    "env, volumes, shm, cpu and memory": SPEC,
    "a pod template": template(
        container={"env": [{"name": "A", "value": "1"}], "resources": {"requests": {"cpu": 4}},
                   "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}]},
        spec={"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}}],
              "restartPolicy": "Never"},
    ),
    "elastic, with a fallback, topology and runtime": {
        "workers": 4, "min_workers": 2, "gpus_per_worker": 2, "flavors": ["h100", "h100-mig"],
        "topology_level": "rack", "topology_mode": "preferred", "estimated_runtime": 3600,
        "command": ["python", "train.py", "--name", "a b"],
    },
}  # fmt: skip


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """No broker (submissions queue a cycle) and fresh submission-rate counts."""
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)
    cache.clear()


@pytest.fixture
def world(
    queue_a: Queue, queue_b: Queue, team_a: Team, cohort: Cohort, flavor_h100: Flavor,
    service_class_std: ServiceClass, sim_cluster: Cluster,
) -> None:  # fmt: skip
    Flavor.objects.create(name="a100", resource="nvidia.com/gpu")
    mig = Flavor.objects.create(name="h100-mig", resource="nvidia.com/mig-1g.10gb")
    Quota.objects.create(queue=queue_a, flavor=mig, nominal=7)
    spot = ServiceClass.objects.create(name="spot", priority=10)
    ServiceClass.objects.create(name="guaranteed", priority=200, can_borrow=False)
    closed = Queue.objects.create(team=team_a, name="closed", is_open=False)
    spot_only = Queue.objects.create(team=team_a, name="spot-only")
    spot_only.allowed_service_classes.set([spot])
    capped = Queue.objects.create(team=team_a, name="capped", cohort=cohort)
    for queue in (closed, spot_only):
        Quota.objects.create(queue=queue, flavor=flavor_h100, nominal=8)
    Quota.objects.create(queue=capped, flavor=flavor_h100, nominal=4, borrowing_limit=4)


def body(**changes: Any) -> dict[str, Any]:
    """A good submission in the API's terms, with ``changes``; objects by name."""
    data: dict[str, Any] = {
        "queue": "team-a/main", "service_class": "standard", "flavors": ["h100"],
        "name": "train", "image": "pytorch/pytorch:2.4.0", "command": ["python", "train.py"],
        "workers": 1, "gpus_per_worker": 1,
    }  # fmt: skip
    data.update(changes)
    return data


def queue_id(name: str) -> int:
    team, queue = name.split("/")
    return Queue.objects.get(team__name=team, name=queue).pk


def api_body(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "queue": queue_id(data["queue"])}


def form_data(data: dict[str, Any]) -> dict[str, Any]:
    """The same submission as the submit form sends it."""
    flavors = {f.name: f.pk for f in Flavor.objects.all()}
    classes = {c.name: c.pk for c in ServiceClass.objects.all()}
    out = {
        key: value
        for key, value in data.items()
        if key not in ("queue", "service_class", "flavors", "command", "estimated_runtime")
    }
    out["queue"] = queue_id(data["queue"])
    out["service_class"] = classes[data["service_class"]]
    out["command"] = shlex.join(data["command"])
    for name, flavor in zip(FLAVOR_FIELDS, data["flavors"], strict=False):
        out[name] = flavors.get(flavor, 999_999)
    if "estimated_runtime" in data:  # the form asks for minutes
        out["estimated_runtime"] = data["estimated_runtime"] // 60
    for name, (_, write) in LINES.items():  # the Advanced section's lines
        if name in data:
            out[name] = write(data[name])
    if "args" in data:
        out["args"] = shlex.join(data["args"])
    if out.pop("host_network", False):
        out["host_network"] = "on"
    if isinstance(data.get("pod_template"), dict):
        out["pod_template"] = yaml.safe_dump(data["pod_template"])
    return out


def by_field(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    """Errors by the rules' field names (the form's flavor fields are ``flavors``)."""
    out: dict[str, list[str]] = {}
    for name, messages in errors.items():
        out.setdefault("flavors" if name in FLAVOR_FIELDS else name, []).extend(messages)
    return out


def send(path: str, user: User, data: dict[str, Any]) -> tuple[int, Any]:
    """POST/GET ``data`` on ``path``: (status, the errors by field or the answer)."""
    if path in API_PATHS:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(user=user, name='t')[1]}")
        url = "/api/v1/jobs/" if path == "api" else "/api/v1/jobs/estimate/"
        response = client.post(url, api_body(data), format="json")
        answer = response.json()
        return response.status_code, by_field(answer) if response.status_code == 400 else answer
    client = Client()
    client.force_login(user)
    if path == "form-estimate":
        response = client.get(reverse("submit-estimate"), form_data(data))
        answer = response.json()
        if "errors" in answer:
            errors = {k: [e["message"] for e in v] for k, v in answer["errors"].items()}
            return response.status_code, by_field(errors)
        return response.status_code, answer
    action = "check" if path == "form-check" else "submit"
    response = client.post(reverse("submit"), {**form_data(data), "action": action})
    if response.status_code != 200:
        return response.status_code, None
    form = response.context["form"]
    if form.errors:
        return 400, by_field({k: list(v) for k, v in form.errors.items()})
    return 200, response.context["estimate"]


@pytest.mark.parametrize("row", BAD.values(), ids=BAD.keys())
def test_every_path_refuses_a_bad_submission_naming_the_same_field(
    world: None, researcher_a: User, row: Row
) -> None:
    answers = {path: send(path, researcher_a, body(**row.changes)) for path in row.paths}

    for path, (status, errors) in answers.items():
        assert status == 400, (path, errors)
        assert set(errors) == {row.field}, (path, errors)
        assert row.says in " ".join(errors[row.field]), (path, errors)
    if row.kind == RULE:  # the rule's own words, whatever the path
        messages = {path: errors[row.field] for path, (_, errors) in answers.items()}
        assert len({tuple(m) for m in messages.values()}) == 1, messages
    assert not Job.objects.exists()


@pytest.mark.parametrize("changes", GOOD.values(), ids=GOOD.keys())
def test_every_path_accepts_a_good_submission(
    world: None, researcher_a: User, changes: dict[str, Any]
) -> None:
    order = ("form-check", "form-estimate", "api-estimate", "form", "api")  # estimates first
    answers = {path: send(path, researcher_a, body(**changes)) for path in order}

    assert answers["form"][0] == 302  # on to the new job's page
    assert answers["api"][0] == 201
    assert answers["form-check"][0] == 200 and answers["form-check"][1].outcome == "start"
    assert answers["form-estimate"][1]["estimate"]["outcome"] == "start"
    assert answers["api-estimate"][0] == 200 and answers["api-estimate"][1]["outcome"] == "start"
    assert Job.objects.count() == 2
    by_form, by_api = Job.objects.order_by("pk")  # the same job, whichever the path
    assert (by_form.image, by_form.command, by_form.spec) == (
        by_api.image,
        by_api.command,
        by_api.spec,
    )
    if "pod_template" not in changes:
        assert by_api.spec == {k: v for k, v in changes.items() if k in SPEC}
