"""A job's own spec in its worker pods (issue 19): every option rendered exactly where
Kubernetes reads it, next to the platform's own parts, and every such pod strictly valid for
each Kubernetes version the deployment supports (tests/deploy/test_kubernetes.py VERSIONS)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import kubernetes_validate
import pytest

from queues.clusters import manifests
from queues.clusters.base import (
    EnvVar,
    InvalidSpec,
    Resources,
    Toleration,
    Volume,
    VolumeKind,
    WorkerPlacement,
)
from tests.deploy.test_kubernetes import VERSIONS
from tests.queues.clusters.test_manifests import spec

FULL = spec(
    command=("torchrun",),
    args=("--nproc-per-node=8", "train.py"),
    env={"NCCL_DEBUG": "INFO"},
    env_vars=(
        EnvVar("HF_HOME", "/cache"),
        EnvVar("WANDB_API_KEY", secret_name="wandb", secret_key="api-key"),
    ),
    volumes=(
        Volume("datasets", VolumeKind.PVC, "/data", source="imagenet", read_only=True),
        Volume("config", VolumeKind.CONFIG_MAP, "/etc/train", source="train-config"),
        Volume("creds", VolumeKind.SECRET, "/secrets", source="s3-creds", read_only=True),
        Volume("scratch", VolumeKind.EMPTY_DIR, "/scratch", medium="Memory", size_limit="10Gi"),
        Volume("cache", VolumeKind.EMPTY_DIR, "/cache"),
    ),
    shm_size="16Gi",
    resources=Resources(cpu="8", memory="64Gi", memory_limit="80Gi"),
    image_pull_secret="regcred",
    tolerations=(
        Toleration("dedicated", "Equal", "ml", "NoSchedule"),
        Toleration("node.kubernetes.io/unreachable", "Exists", effect="NoExecute", seconds=300),
    ),
    working_dir="/workspace",
    labels={"example.com/project": "atlas"},
    annotations={"example.com/owner": "vision team"},
    host_network=True,
    allow_privilege_escalation=False,
)


def test_every_option_of_the_spec_is_rendered_exactly() -> None:
    pod = manifests.pod_manifest(FULL, FULL.workers[1])
    container = pod["spec"]["containers"][0]

    assert container["env"][:3] == [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "HF_HOME", "value": "/cache"},
        {
            "name": "WANDB_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}},
        },
    ]
    assert [e["name"] for e in container["env"][3:]] == [
        "WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT", "GPUPLATFORM_JOB_ID"
    ]  # fmt: skip
    assert container["resources"] == {
        "requests": {"cpu": "8", "memory": "64Gi"},
        "limits": {"nvidia.com/gpu": "8", "cpu": "8", "memory": "80Gi"},
    }
    assert container["workingDir"] == "/workspace"
    assert container["args"] == ["--nproc-per-node=8", "train.py"]
    assert container["securityContext"] == {"allowPrivilegeEscalation": False}
    assert container["volumeMounts"] == [
        {"name": "datasets", "mountPath": "/data", "readOnly": True},
        {"name": "config", "mountPath": "/etc/train"},
        {"name": "creds", "mountPath": "/secrets", "readOnly": True},
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "cache", "mountPath": "/cache"},
        {"name": "gpuplatform-shm", "mountPath": "/dev/shm"},
    ]
    assert pod["spec"]["volumes"] == [
        {"name": "datasets", "persistentVolumeClaim": {"claimName": "imagenet"}},
        {"name": "config", "configMap": {"name": "train-config"}},
        {"name": "creds", "secret": {"secretName": "s3-creds"}},
        {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "10Gi"}},
        {"name": "cache", "emptyDir": {}},
        {"name": "gpuplatform-shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
    ]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    assert pod["spec"]["hostNetwork"] is True
    assert pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["metadata"]["labels"]["example.com/project"] == "atlas"
    assert pod["metadata"]["annotations"]["example.com/owner"] == "vision team"
    # the platform's parts stay
    assert pod["metadata"]["labels"]["gpuplatform/job"] == "42"
    assert pod["metadata"]["annotations"]["gpuplatform/job-id"] == "42"
    assert pod["spec"]["restartPolicy"] == "Never"
    assert "affinity" in pod["spec"]


def test_limits_are_the_requests_unless_given() -> None:
    pod = manifests.pod_manifest(
        spec(resources=Resources(cpu="500m", memory="2Gi")), FULL.workers[0]
    )
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "500m", "memory": "2Gi"},
        "limits": {"nvidia.com/gpu": "8", "cpu": "500m", "memory": "2Gi"},
    }


def test_a_job_without_a_spec_renders_as_before() -> None:
    pod = manifests.pod_manifest(spec(), WorkerPlacement(0, "h100-a"))
    container = pod["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": "8"}}
    assert not {"volumeMounts", "workingDir", "securityContext"} & set(container)
    assert not {"volumes", "imagePullSecrets", "hostNetwork", "dnsPolicy"} & set(pod["spec"])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "shape",
    [FULL, replace(FULL, host_network=False, gang_size=1, workers=FULL.workers[:1])],
    ids=["full spec, gang of two", "full spec, one worker"],
)
def test_pods_with_a_spec_validate_strictly_for_every_supported_version(
    shape: Any, version: str
) -> None:
    for worker in shape.workers:
        kubernetes_validate.validate(manifests.pod_manifest(shape, worker), version, strict=True)
    kubernetes_validate.validate(manifests.service_manifest(shape), version, strict=True)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"env_vars": (EnvVar("RANK", "3"),)}, "env"),
        ({"env_vars": (EnvVar("1BAD", "x"),)}, "env"),
        ({"annotations": {"kueue.x-k8s.io/queue-name": "q"}}, "annotations"),
        ({"labels": {"gpuplatform/team": "x"}}, "labels"),
        ({"volumes": (Volume("a", VolumeKind.PVC, "/d", source="c"),) * 2}, "volumes"),
        ({"volumes": (Volume("gpuplatform-shm", VolumeKind.EMPTY_DIR, "/x"),)}, "volumes"),
        ({"volumes": (Volume("a", VolumeKind.EMPTY_DIR, "/dev/shm"),), "shm_size": "1"}, "volumes"),
        ({"volumes": (Volume("a", VolumeKind.PVC, "data"),)}, "volumes"),
        ({"volumes": (Volume("a", VolumeKind.PVC, "/data"),)}, "volumes"),
    ],
)  # fmt: skip
def test_the_driver_refuses_a_bad_spec_naming_the_field(
    overrides: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidSpec, match=f"^{field}:"):
        manifests.validate_spec(spec(**overrides))
