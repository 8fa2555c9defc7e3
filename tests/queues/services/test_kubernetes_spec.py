"""Issue 19 through the live cycle against the Kubernetes emulator (kmock, real HTTP): a job
submitted with its own spec, or from a pod template, launches workers whose pods (read back
from the API) carry exactly that spec, and every body the platform sent is strictly valid."""

from __future__ import annotations

import pytest

from queues.models import Job
from queues.services import submit_job
from tests.queues.clusters.k8s_emulator import EmulatedCluster, validate_manifest
from tests.queues.services.helpers import T0

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "rack": "r1"}
SPEC = {
    "env": [
        {"name": "HF_HOME", "value": "/cache"},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
    ],
    "volumes": [
        {
            "name": "datasets",
            "mountPath": "/data",
            "readOnly": True,
            "persistentVolumeClaim": {"claimName": "imagenet"},
        },
        {"name": "config", "mountPath": "/etc/train", "configMap": {"name": "train-config"}},
    ],
    "shm_size": "16Gi",
    "cpu": "8",
    "memory": "64Gi",
}
TEMPLATE = """
apiVersion: v1
kind: Pod
metadata:
  labels: {example.com/project: llm}
spec:
  restartPolicy: Never
  imagePullSecrets: [{name: regcred}]
  containers:
  - name: trainer
    image: registry.example.com/llm/train:7
    command: [torchrun]
    args: [--nproc-per-node=4, train.py]
    workingDir: /workspace
    env:
    - {name: NCCL_DEBUG, value: INFO}
    resources:
      requests: {cpu: 4, memory: 32Gi}
      limits: {memory: 48Gi}
    volumeMounts:
    - {name: ckpt, mountPath: /checkpoints}
    - {name: dshm, mountPath: /dev/shm}
    securityContext: {allowPrivilegeEscalation: false}
  volumes:
  - {name: ckpt, persistentVolumeClaim: {claimName: checkpoints}}
  - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}
"""


@pytest.fixture(autouse=True)
def every_manifest_validates(api):
    yield
    sent = [r.data for r in api.requests() if r.method.value == "POST" and r.data]
    assert any(body.get("kind") == "Pod" for body in sent)
    for body in sent:
        validate_manifest(body)


def pods_of(api: EmulatedCluster, job: Job) -> list[dict]:
    pods = api.stored_pods().values()
    found = [p for p in pods if p["metadata"]["labels"].get("gpuplatform/job") == str(job.pk)]
    return sorted(found, key=lambda p: p["metadata"]["name"])


def test_a_job_with_env_volumes_and_shm_launches_with_exactly_those(
    k8s_world, api, submit, cycle, reload
):
    job = submit(gpus=4, workers=2, spec=SPEC)

    cycle(T0)

    assert reload(job).state == Job.State.ADMITTED
    pods = pods_of(api, job)
    assert len(pods) == 2
    for rank, pod in enumerate(pods):
        container = pod["spec"]["containers"][0]
        assert container["env"][:2] == SPEC["env"]
        assert {e["name"]: e.get("value") for e in container["env"][2:]} == {
            "WORLD_SIZE": "2",
            "RANK": str(rank),
            "MASTER_ADDR": f"train-{job.pk}-0.train-{job.pk}.{pod['metadata']['namespace']}"
            ".svc.cluster.local",
            "MASTER_PORT": "29500",
            "GPUPLATFORM_JOB_ID": str(job.pk),
        }
        assert container["volumeMounts"] == [
            {"name": "datasets", "mountPath": "/data", "readOnly": True},
            {"name": "config", "mountPath": "/etc/train"},
            {"name": "gpuplatform-shm", "mountPath": "/dev/shm"},
        ]
        assert pod["spec"]["volumes"] == [
            {"name": "datasets", "persistentVolumeClaim": {"claimName": "imagenet"}},
            {"name": "config", "configMap": {"name": "train-config"}},
            {"name": "gpuplatform-shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        ]
        assert container["resources"] == {
            "requests": {"cpu": "8", "memory": "64Gi"},
            "limits": {"nvidia.com/gpu": "4", "cpu": "8", "memory": "64Gi"},
        }


def test_a_job_from_a_pod_template_launches_as_the_template_says(k8s_world, api, cycle, reload):
    world = k8s_world
    job = submit_job(
        owner=world.alice, queue=world.queue_a, service_class=world.standard, name="train",
        image="", flavors=[world.h100], gpus_per_worker=4, pod_template=TEMPLATE, now=T0,
        duration_hint=3600,
    )  # fmt: skip

    cycle(T0)

    assert reload(job).state == Job.State.ADMITTED
    (pod,) = pods_of(api, job)
    container = pod["spec"]["containers"][0]
    assert container["image"] == "registry.example.com/llm/train:7"
    assert container["command"] == ["torchrun"]
    assert container["args"] == ["--nproc-per-node=4", "train.py"]
    assert container["workingDir"] == "/workspace"
    assert container["env"][0] == {"name": "NCCL_DEBUG", "value": "INFO"}
    assert container["resources"] == {
        "requests": {"cpu": "4", "memory": "32Gi"},
        "limits": {"nvidia.com/gpu": "4", "cpu": "4", "memory": "48Gi"},
    }
    assert container["securityContext"] == {"allowPrivilegeEscalation": False}
    assert container["volumeMounts"] == [
        {"name": "ckpt", "mountPath": "/checkpoints"},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]
    assert pod["spec"]["volumes"] == [
        {"name": "ckpt", "persistentVolumeClaim": {"claimName": "checkpoints"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
    ]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["metadata"]["labels"]["example.com/project"] == "llm"
    assert pod["metadata"]["labels"]["gpuplatform/job"] == str(job.pk)  # the platform's stay


def test_the_jobs_of_an_array_learn_the_array_and_their_place_in_it(k8s_world, api, submit, cycle):
    jobs = [submit(gpus=1, name=f"sweep-{index}") for index in range(2)]
    for index, job in enumerate(jobs):
        Job.objects.filter(pk=job.pk).update(array_id=jobs[0].pk, array_index=index)
    alone = submit(gpus=1, name="alone")

    cycle(T0)

    for index, job in enumerate(jobs):
        (pod,) = pods_of(api, job)
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["GPUPLATFORM_ARRAY_JOB_ID"] == str(jobs[0].pk)
        assert env["GPUPLATFORM_ARRAY_TASK_ID"] == str(index)
    (pod,) = pods_of(api, alone)
    names = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
    assert not names & {"GPUPLATFORM_ARRAY_JOB_ID", "GPUPLATFORM_ARRAY_TASK_ID"}
