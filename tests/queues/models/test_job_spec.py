"""The job spec's rules and the pod template's conversion (queues/models/job_spec.py,
pod_template.py) on their own: what the three-way table of test_job_rules.py cannot write in
every path, and that no input at all makes them raise (a 500) instead of naming the field."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from queues.clusters import k8s_rules
from queues.models import job_spec
from queues.models.pod_template import resolve

CLASS_WITH_HOST_NETWORK = SimpleNamespace(name="rdma", allow_host_network=True)
CLASS_WITHOUT = SimpleNamespace(name="standard", allow_host_network=False)


def pod(container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"image": "img:1", **(container or {})}], **spec}}


def problems(spec: dict[str, Any] | None = None, template: Any = None, cls: Any = None) -> list:
    return resolve("", [], spec, template, cls).problems


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", Decimal("0.5")), ("16Gi", Decimal(16 * 2**30)), ("1e3", Decimal(1000)),
     ("2k", Decimal(2000)), ("8", Decimal(8)), (".5", Decimal("0.5")), ("1.5G", Decimal("1.5e9"))],
)  # fmt: skip
def test_quantities_are_read_as_kubernetes_reads_them(text: str, value: Decimal) -> None:
    assert k8s_rules.quantity(text) == value


@pytest.mark.parametrize("text", ["", "Gi", "16 Gi", "16GB", "1/2", "0x10", "1e", "--1"])
def test_what_is_not_a_quantity(text: str) -> None:
    assert k8s_rules.quantity(text) is None


@pytest.mark.parametrize(
    ("toleration", "says"),
    [
        ({"key": "a", "operator": "Exists", "value": "x"}, "value: must be empty"),
        ({"operator": "Equal", "value": "x"}, "must be Exists when the key is empty"),
        ({"key": "a", "value": "b", "effect": "NoSchedule", "tolerationSeconds": 5}, "NoExecute"),
        ({"key": "a", "tolerationSeconds": "5"}, "whole number"),
        ({"key": "a", "value": "not valid!"}, "label value"),
    ],
)
def test_tolerations_are_checked_as_kubernetes_checks_them(toleration: dict, says: str) -> None:
    found = problems({"tolerations": [toleration]})
    assert [name for name, _ in found] == ["tolerations"]
    assert says in found[0][1] and found[0][1].startswith("tolerations[0]")


def test_an_everything_toleration_and_the_defaults_are_kept() -> None:
    spec = resolve("", [], {"tolerations": [{"operator": "Exists"}, {"key": "k", "value": "v"}]},
                   None).spec  # fmt: skip
    assert spec == {
        "tolerations": [{"operator": "Exists"}, {"key": "k", "operator": "Equal", "value": "v"}]
    }


def test_host_network_follows_the_service_class() -> None:
    assert problems({"host_network": True}, cls=CLASS_WITH_HOST_NETWORK) == []
    assert problems(template=pod(hostNetwork=True), cls=CLASS_WITH_HOST_NETWORK) == []
    assert problems({"host_network": True}, cls=CLASS_WITHOUT) == [
        ("host_network", "host_network: not allowed: class standard does not allow host networking")
    ]
    assert resolve("", [], None, pod(hostNetwork=True), CLASS_WITH_HOST_NETWORK).spec == {
        "host_network": True
    }


def test_host_pid_and_ipc_are_never_allowed_even_where_host_network_is() -> None:
    found = problems(template=pod(hostPID=True, hostIPC=True), cls=CLASS_WITH_HOST_NETWORK)
    assert found == [
        ("pod_template", "pod_template.spec.hostPID: not allowed"),
        ("pod_template", "pod_template.spec.hostIPC: not allowed"),
    ]


def test_a_bare_pod_spec_is_a_template_too_and_its_paths_say_so() -> None:
    template = {"containers": [{"image": "img:1", "env": [{"name": "RANK", "value": "0"}]}]}
    assert problems(template=template) == [
        ("pod_template", "pod_template.containers[0].env[0].name: RANK is set by the platform "
         "(for distributed training)")
    ]  # fmt: skip


def test_volumes_and_mounts_are_joined_by_name_each_mounted_once() -> None:
    template = pod(
        {"volumeMounts": [{"name": "a", "mountPath": "/a"}, {"name": "nope", "mountPath": "/n"},
                          {"name": "a", "mountPath": "/a2"}]},
        volumes=[{"name": "a", "emptyDir": {}}, {"name": "b", "configMap": {"name": "cm"}}],
    )  # fmt: skip
    assert problems(template=template) == [
        ("pod_template", "pod_template.spec.containers[0].volumeMounts[1].name: no volume named "
         "'nope' in pod_template.spec.volumes"),
        ("pod_template", "pod_template.spec.containers[0].volumeMounts[2]: a is mounted twice; "
         "mount each volume once"),
        ("pod_template", "pod_template.spec.volumes[1]: not mounted by the container: remove it"),
    ]  # fmt: skip


def test_a_mount_error_names_the_mount_and_a_source_error_the_volume() -> None:
    template = pod(
        {"volumeMounts": [{"name": "a", "mountPath": "rel"}, {"name": "b", "mountPath": "/b"}]},
        volumes=[{"name": "a", "emptyDir": {}},
                 {"name": "b", "persistentVolumeClaim": {"claimName": "Bad_Claim"}}],
    )  # fmt: skip
    found = [message for _, message in problems(template=template)]
    assert found[0].startswith("pod_template.spec.containers[0].volumeMounts[0].mountPath: ")
    assert found[1].startswith("pod_template.spec.volumes[1].persistentVolumeClaim.claimName: ")


def test_a_template_and_the_same_field_given_beside_it_is_refused() -> None:
    assert problems({"cpu": "2"}, pod({"resources": {"requests": {"cpu": "4"}}})) == [
        ("pod_template", "pod_template.spec.containers[0].resources.requests.cpu: cpu is given "
         "twice (also as cpu)")
    ]  # fmt: skip
    # a field the template does not speak of may stand beside it
    assert resolve("", [], {"shm_size": "8Gi"}, pod()).spec == {"shm_size": "8Gi"}


def test_a_template_too_long_or_not_an_object_is_refused() -> None:
    assert problems(template="x" * (64 * 1024 + 1))[0][1].startswith("pod_template: at most")
    assert problems(template="- a\n- b")[0][1].startswith("pod_template: give a pod template")
    assert problems(template=5)[0][1].startswith("pod_template: give a pod template")
    ((name, message),) = problems(template="[" * 20_000)  # libyaml's words, or ours
    assert name == "pod_template" and message.startswith("pod_template: ") and "nest" in message


def test_limits_default_to_nothing_and_explicit_limits_may_exceed_requests() -> None:
    spec = resolve("", [], {"cpu": 8, "memory": "1Gi", "memory_limit": "2Gi"}, None).spec
    assert spec == {"cpu": "8", "memory": "1Gi", "memory_limit": "2Gi"}
    fields = job_spec.launch_fields(spec)["resources"]
    assert (fields.requests, fields.limits) == (
        {"cpu": "8", "memory": "1Gi"},
        {"cpu": "8", "memory": "2Gi"},
    )


SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
)
YAML_KEYS = st.text(max_size=8) | st.integers() | st.none() | st.booleans()  # YAML: any scalar
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(YAML_KEYS, inner, max_size=3),
    max_leaves=12,
)  # fmt: skip
KEYS = st.sampled_from(
    [*job_spec.SPEC_FIELDS, "name", "value", "valueFrom", "secretKeyRef", "key", "mountPath",
     "readOnly", "emptyDir", "persistentVolumeClaim", "claimName", "spec", "containers",
     "volumes", "volumeMounts", "resources", "requests", "limits", "securityContext", "env",
     "metadata", "labels", "image", "command", "hostPath", "tolerations", "operator", "effect"]
)  # fmt: skip
SHAPED = st.recursive(
    JSON,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(KEYS | YAML_KEYS, inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@example(spec={"labels": {1: "a"}})  # YAML keys need not be text
@example(spec={"annotations": {"a": None}, "env": [{"name": "A", "value": 1}]})
@given(spec=st.dictionaries(st.sampled_from(job_spec.SPEC_FIELDS), SHAPED, max_size=5))
def test_no_spec_makes_the_rules_raise_and_every_problem_names_a_given_field(spec: dict) -> None:
    found = resolve("", [], spec, None, CLASS_WITHOUT)
    assert {name for name, _ in found.problems} <= set(spec)
    if not found.problems:  # what passed, the driver takes
        job_spec.launch_fields(found.spec)


@settings(max_examples=300, deadline=None)
@example(template=pod({"volumeMounts": [{"name": ["x"], "mountPath": "/a"}]}))
@example(template={"metadata": {"labels": {True: "x"}}, "spec": {"containers": [{}]}})
@given(template=st.dictionaries(KEYS, SHAPED, max_size=4) | SHAPED)
def test_no_template_makes_the_rules_raise(template: Any) -> None:
    found = resolve("", [], None, template, CLASS_WITHOUT)
    assert {name for name, _ in found.problems} <= {"pod_template"}
    if not found.problems:
        job_spec.launch_fields(found.spec)
