"""The pure manifest builders: names, conventions, and strict schema validity."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from queues.clusters import manifests
from queues.clusters.base import InvalidSpec, LaunchSpec, WorkerPlacement

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

Validate = Callable[[dict[str, Any]], None]


def spec(**overrides: Any) -> LaunchSpec:
    base = LaunchSpec(
        job_id="42",
        job_name="llama-finetune",
        team="vision",
        queue="vision-main",
        service_class="standard",
        image="registry.example.com/train:1.2",
        resource_name="nvidia.com/gpu",
        gpus_per_worker=8,
        workers=(WorkerPlacement(0, "h100-a"), WorkerPlacement(1, "h100-b")),
        gang_size=2,
        grace_period_seconds=120,
        flavor="h100",
    )
    return replace(base, **overrides)


SHAPES = {
    "single whole-GPU worker": spec(
        workers=(WorkerPlacement(0, "a100-1"),), gang_size=1, gpus_per_worker=1, flavor="a100"
    ),
    "four workers on two H100 nodes": spec(
        workers=tuple(WorkerPlacement(i, f"h100-{i // 2}") for i in range(4)),
        gang_size=4,
        gpus_per_worker=4,
        command=("torchrun",),
        args=("--nproc-per-node=4", "train.py"),
        env={"NCCL_DEBUG": "INFO", "HF_HOME": "/cache"},
        labels={"example.com/project": "atlas"},
    ),
    "one MIG slice": spec(
        workers=(WorkerPlacement(0, "h100-mig-0"),),
        gang_size=1,
        gpus_per_worker=1,
        resource_name="nvidia.com/mig-1g.10gb",
        flavor="h100-1g.10gb",
        grace_period_seconds=0,
    ),
    "elastic job started small": spec(
        workers=(WorkerPlacement(0, "h100-a"), WorkerPlacement(1, "h100-a")),
        gang_size=6,
        min_workers=2,
    ),
    "awkward names": spec(
        job_id="6f1c2a9e-58b1-4f3e-9d7a-3c1f0e2b4a77",
        job_name="Résumé_Training RUN #7 " + "x" * 80,
        team="Team_Vision.EU",
        queue="queue with spaces and a very long name that does not fit in a label value ok",
        service_class="Preemptible/Low",
        workers=(WorkerPlacement(0, "node-0"), WorkerPlacement(1, "node-1")),
    ),
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_every_manifest_validates_strictly_against_the_newest_schema(
    shape: LaunchSpec, validate_manifest: Validate
) -> None:
    manifests.validate_spec(shape)
    sent = [manifests.namespace_manifest(shape.team)]
    sent += [manifests.pod_manifest(shape, worker) for worker in shape.workers]
    if manifests.needs_service(shape):
        sent.append(manifests.service_manifest(shape))
    sent.append(manifests.delete_options(shape.grace_period_seconds))
    for manifest in sent:
        validate_manifest(manifest)


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_names_and_label_values_are_valid_for_kubernetes(shape: LaunchSpec) -> None:
    pods = [manifests.pod_manifest(shape, worker) for worker in shape.workers]
    service = manifests.service_manifest(shape)
    assert DNS_LABEL.match(manifests.team_namespace(shape.team))
    assert DNS_1035.match(service["metadata"]["name"])
    assert len(service["metadata"]["name"]) <= 63
    for pod in pods:
        assert DNS_LABEL.match(pod["spec"]["hostname"])
        assert len(pod["spec"]["hostname"]) <= 63
        assert pod["metadata"]["name"] == pod["spec"]["hostname"]
        for value in pod["metadata"]["labels"].values():
            assert LABEL_VALUE.match(value) and len(value) <= 63, value


def test_worker_pod_is_pinned_to_its_planned_node_with_required_affinity() -> None:
    pod = manifests.pod_manifest(spec(), WorkerPlacement(1, "h100-b"))
    affinity = pod["spec"]["affinity"]["nodeAffinity"]
    assert "preferredDuringSchedulingIgnoredDuringExecution" not in affinity
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["h100-b"]}
            ]
        }
    ]


def test_worker_pod_limits_the_flavor_resource_and_never_restarts() -> None:
    mig = SHAPES["one MIG slice"]
    pod = manifests.pod_manifest(mig, mig.workers[0])
    (container,) = pod["spec"]["containers"]
    assert container["resources"] == {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 0


def test_worker_pod_carries_job_labels_and_gang_annotations() -> None:
    pod = manifests.pod_manifest(spec(), WorkerPlacement(1, "h100-b"))
    assert pod["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpuplatform",
        "gpuplatform/job": "42",
        "gpuplatform/worker": "1",
        "gpuplatform/queue": "vision-main",
        "gpuplatform/team": "vision",
        "gpuplatform/service-class": "standard",
        "gpuplatform/flavor": "h100",
    }
    assert pod["metadata"]["annotations"] == {
        "gpuplatform/job-id": "42",
        "gpuplatform/job-name": "llama-finetune",
        "gpuplatform/gang-size": "2",
        "gpuplatform/planned-node": "h100-b",
    }
    assert pod["metadata"]["namespace"] == "team-vision"


def test_workers_find_rank_zero_through_the_headless_service() -> None:
    job = spec()
    service = manifests.service_manifest(job)
    pods = [manifests.pod_manifest(job, worker) for worker in job.workers]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {
        "app.kubernetes.io/managed-by": "gpuplatform",
        "gpuplatform/job": "42",
    }
    name = service["metadata"]["name"]
    assert name == "llama-finetune-42"
    for rank, pod in enumerate(pods):
        env = {item["name"]: item["value"] for item in pod["spec"]["containers"][0]["env"]}
        assert env["WORLD_SIZE"] == "2"
        assert env["RANK"] == str(rank)
        assert env["MASTER_ADDR"] == f"{name}-0.{name}.team-vision.svc.cluster.local"
        assert env["MASTER_PORT"] == "29500"
        assert pod["spec"]["subdomain"] == name
        assert pod["spec"]["hostname"] == f"{name}-{rank}"
        assert all(v in service["spec"]["selector"].items() for v in [("gpuplatform/job", "42")])
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()


def test_single_worker_job_needs_no_service_and_talks_to_itself() -> None:
    single = SHAPES["single whole-GPU worker"]
    pod = manifests.pod_manifest(single, single.workers[0])
    env = {item["name"]: item["value"] for item in pod["spec"]["containers"][0]["env"]}
    assert not manifests.needs_service(single)
    assert "subdomain" not in pod["spec"]
    assert env["MASTER_ADDR"] == "localhost"
    assert env["WORLD_SIZE"] == "1"


def test_elastic_job_gets_a_service_even_with_one_worker_so_it_can_grow() -> None:
    elastic = spec(workers=(WorkerPlacement(0, "h100-a"),), gang_size=4, min_workers=1)
    assert manifests.needs_service(elastic)
    pod = manifests.pod_manifest(elastic, elastic.workers[0])
    assert pod["metadata"]["annotations"]["gpuplatform/min-workers"] == "1"


def test_dns_label_keeps_valid_names_and_hashes_changed_ones_stably() -> None:
    assert manifests.dns_label("team-vision") == "team-vision"
    changed = manifests.dns_label("Team_Vision")
    assert changed.startswith("team-vision-") and DNS_LABEL.match(changed)
    assert manifests.dns_label("Team_Vision") == changed
    assert manifests.dns_label("team_vision") != changed  # different input, different name
    long = manifests.dns_label("a" * 100)
    assert len(long) == 63 and DNS_LABEL.match(long)
    assert DNS_LABEL.match(manifests.dns_label("___"))


def test_teams_that_differ_only_in_punctuation_get_different_namespaces() -> None:
    assert manifests.team_namespace("ml_ops") != manifests.team_namespace("ml-ops")


def test_long_job_names_are_truncated_but_keep_the_job_id() -> None:
    name = manifests.job_base_name("123456", "x" * 200)
    assert name.endswith("-123456")
    assert len(name) <= 56
    assert manifests.job_base_name("7", "9lives") == "job-9lives-7"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"gpus_per_worker": 0}, "gpus_per_worker"),
        ({"image": ""}, "image"),
        ({"resource_name": "gpu"}, "resource_name"),
        ({"workers": (WorkerPlacement(0, "a"), WorkerPlacement(0, "b"))}, "workers"),
        ({"workers": (WorkerPlacement(5, "a"),)}, "workers"),
        ({"workers": (WorkerPlacement(0, ""),)}, "workers"),
        ({"min_workers": 3}, "min_workers"),
        ({"grace_period_seconds": -1}, "grace_period_seconds"),
        ({"env": {"RANK": "3"}}, "env"),
        ({"env": {"1BAD": "x"}}, "env"),
        ({"labels": {"gpuplatform/job": "other"}}, "labels"),
        ({"job_id": ""}, "job_id"),
    ],
)
def test_bad_spec_is_rejected_with_the_field_named(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpec, match=rf"^{field}:"):
        manifests.validate_spec(spec(**overrides))


def test_graceful_delete_options_carry_the_grace_period(validate_manifest: Validate) -> None:
    body = manifests.delete_options(300)
    validate_manifest(body)
    assert body["gracePeriodSeconds"] == 300
