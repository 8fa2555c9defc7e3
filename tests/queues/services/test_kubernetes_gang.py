"""All-or-nothing to the last pod: the live cycle against the Kubernetes emulator (real HTTP)
with faults injected into the creates of a gang's pods, and pods deleted or evicted from a
running gang. Each test checks what a user notices: the job's state, its timeline, the
cluster's health, the pods there are, and the GPU-hours the ledger bills."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import kmock
import pytest

from accounting.models import UsageRecord
from queues.models import Cluster, Job
from tests.queues.clusters.k8s_emulator import PODS, EmulatedCluster, validate_manifest
from tests.queues.services.helpers import T0, kinds, last_message, later

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "rack": "r1"}
QUOTA = (
    'pods "{pod}" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=2, '
    "used: requests.nvidia.com/gpu=6, limited: requests.nvidia.com/gpu=6"
)
WEBHOOK = (
    'admission webhook "validation.gatekeeper.sh" denied the request: '
    "[must-have-owner] you must provide labels: {owner}"
)


@pytest.fixture(autouse=True)
def every_manifest_validates(api):
    """Whatever the platform sent (namespaces, services, pods, delete options) is valid."""
    yield
    for request in api.requests():
        if request.method.value in ("POST", "DELETE") and request.data:
            validate_manifest(request.data)


def pods_of(api: EmulatedCluster, job: Job) -> list[str]:
    return sorted(
        name
        for name, pod in api.stored_pods().items()
        if pod["metadata"]["labels"].get("gpuplatform/job") == str(job.pk)
    )


def pod(job: Job, index: int) -> str:
    return f"{job.name}-{job.pk}-{index}"


def set_phase(api: EmulatedCluster, job: Job, phase: str) -> None:
    for name in pods_of(api, job):
        api.set_pod_status(f"team-{job.queue.team.name}", name, {"phase": phase})


def creates_of(api: EmulatedCluster, name: str) -> int:
    return sum(
        1
        for r in api.requests("POST")
        if r.data and r.data.get("kind") == "Pod" and r.data["metadata"]["name"] == name
    )


def health(world) -> tuple[str, str]:
    cluster = Cluster.objects.get(pk=world.cluster.pk)
    return cluster.status, cluster.status_message


def gpu_hours(job: Job) -> Decimal:
    rows = UsageRecord.objects.filter(job=job)
    return sum((r.units * r.seconds for r in rows), Decimal(0)) / 3600


def hours(gpus: int, seconds: float) -> Decimal:
    return Decimal(gpus) * Decimal(seconds) / 3600


# -- a create fails half-way through a launch ---------------------------------------------------


def test_a_create_refused_with_500_is_retried_and_the_gang_starts_whole(
    k8s_world, api, submit, cycle, reload
):
    job = submit(gpus=2, workers=4)
    api.fail(kmock.action.CREATE, PODS, nth=3, status=500)

    cycle(T0)

    assert pods_of(api, job) == [pod(job, 0), pod(job, 1)]
    status, message = health(k8s_world)
    assert status == Cluster.Status.DEGRADED and "HTTP 500" in message
    set_phase(api, job, "Running")  # the two that exist start; the job must not

    report = cycle(later(10))

    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert reload(job).state == Job.State.ADMITTED
    assert pods_of(api, job) == [pod(job, i) for i in range(4)]
    assert any("launch retried (1 of 3)" in line for line in report.lines)
    cycle(later(20))
    assert reload(job).state == Job.State.ADMITTED  # pods 2 and 3 are still pending
    assert gpu_hours(job) == 0

    set_phase(api, job, "Running")
    cycle(later(30))
    job = reload(job)
    assert job.state == Job.State.RUNNING
    assert "All 4 worker(s) running" in last_message(job, "started")
    set_phase(api, job, "Succeeded")
    cycle(later(390))

    job = reload(job)
    assert job.state == Job.State.SUCCEEDED
    assert kinds(job) == ["submitted", "admitted", "started", "succeeded"]
    assert gpu_hours(job) == hours(8, 360)  # 4 workers x 2 GPUs, from start to success
    assert pods_of(api, job) == []


def test_a_quota_refusal_requeues_the_gang_with_backoff_and_leaves_the_cluster_healthy(
    k8s_world, api, submit, cycle, reload
):
    job = submit(gpus=2, workers=4)
    api.fail(
        kmock.action.CREATE,
        PODS,
        nth=3,
        status=403,
        reason="Forbidden",
        message=QUOTA.format(pod=pod(job, 2)),
    )

    cycle(T0)

    job = reload(job)
    assert job.state == Job.State.PENDING
    text = last_message(job, "requeued")
    assert "refused a worker for lack of quota" in text
    assert "exceeded quota: gpu-quota" in text
    assert "backoff 60 s" in text
    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert pods_of(api, job) == []  # the two it made were removed: none runs alone
    assert job.runtime.pending_reason == "backoff"
    assert job.runtime.requeue_after == T0 + timedelta(seconds=60)
    assert job.runtime.failures == 0  # not the job's own failure

    cycle(later(30))
    assert reload(job).state == Job.State.PENDING  # still backing off
    assert pods_of(api, job) == []

    cycle(later(61))
    assert reload(job).state == Job.State.ADMITTED
    assert pods_of(api, job) == [pod(job, i) for i in range(4)]
    assert gpu_hours(job) == 0


def test_a_conflict_on_a_retried_create_is_success(k8s_world, api, submit, cycle, reload):
    job = submit(gpus=2, workers=4)
    # the server already has pod 1 (an earlier attempt's answer was lost): it answers 409
    api.fail(kmock.action.CREATE, PODS, nth=2, status=409, reason="AlreadyExists", applied=True)

    cycle(T0)

    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert pods_of(api, job) == [pod(job, i) for i in range(4)]
    set_phase(api, job, "Running")
    cycle(later(10))
    job = reload(job)
    assert job.state == Job.State.RUNNING
    assert "All 4 worker(s) running" in last_message(job, "started")
    assert creates_of(api, pod(job, 1)) == 1  # not asked twice: the 409 was success
    cycle(later(70))
    assert gpu_hours(job) == hours(8, 60)


def test_an_admission_webhook_denial_fails_the_job_with_the_apis_message(
    k8s_world, api, submit, cycle, reload
):
    job = submit(gpus=2, workers=4)
    api.fail(kmock.action.CREATE, PODS, nth=3, status=422, reason="Invalid", message=WEBHOOK)

    cycle(T0)

    job = reload(job)
    assert job.state == Job.State.FAILED
    assert "must-have-owner" in last_message(job, "failed")
    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert pods_of(api, job) == []
    assert gpu_hours(job) == 0


def test_a_lost_create_response_neither_duplicates_a_pod_nor_leaves_the_gang_partial(
    k8s_world, api, submit, cycle, reload
):
    job = submit(gpus=2, workers=4)
    api.lose_response(kmock.action.CREATE, PODS, nth=3)

    cycle(T0)

    assert pods_of(api, job) == [pod(job, 0), pod(job, 1), pod(job, 2)]  # 2 exists, unseen
    assert health(k8s_world)[0] == Cluster.Status.DEGRADED

    cycle(later(10))

    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert pods_of(api, job) == [pod(job, i) for i in range(4)]
    assert creates_of(api, pod(job, 2)) == 2  # asked again, answered 409, adopted
    assert creates_of(api, pod(job, 3)) == 1
    set_phase(api, job, "Running")
    cycle(later(20))
    assert reload(job).state == Job.State.RUNNING
    cycle(later(80))
    assert gpu_hours(job) == hours(8, 60)


def test_a_gang_that_cannot_be_completed_is_stopped_whole_and_requeued_with_backoff(
    k8s_world, api, submit, cycle, reload
):
    job = submit(gpus=2, workers=4)
    api.fail(kmock.action.CREATE, PODS, status=500, name=pod(job, 3), times=100)

    for step in range(4):  # the launch, then 3 retries: pod 3 never gets through
        cycle(later(10 * step))
        assert reload(job).state == Job.State.ADMITTED
        assert pods_of(api, job) == [pod(job, i) for i in range(3)]
    cycle(later(40))

    job = reload(job)
    assert job.state == Job.State.PENDING
    text = last_message(job, "requeued")
    assert "Only 3 of 4 workers could be created after 3 launch retries" in text
    assert "worker 3 (planned on " in text
    assert "A gang runs whole or not at all" in text
    assert pods_of(api, job) == []
    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert job.runtime.requeue_after == later(100)
    assert "started" not in kinds(job)
    assert gpu_hours(job) == 0


# -- a worker lost from a running gang ----------------------------------------------------------


def running_gang(api, submit, cycle, reload, **fields) -> Job:
    job = submit(**fields)
    cycle(T0)
    set_phase(api, job, "Running")
    cycle(later(10))
    job = reload(job)
    assert job.state == Job.State.RUNNING
    return job


def test_a_pod_deleted_from_a_running_gang_stops_it_whole_and_requeues_it(
    k8s_world, api, submit, cycle, reload
):
    job = running_gang(api, submit, cycle, reload, gpus=2, workers=4)
    api.delete_pod(f"team-{job.queue.team.name}", pod(job, 1))

    cycle(later(70))

    job = reload(job)
    assert job.state == Job.State.PENDING
    text = last_message(job, "requeued")
    assert "Worker 1 (planned on " in text and "is missing from the cluster" in text
    assert "A gang runs whole or not at all" in text
    assert pods_of(api, job) == []
    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert job.runtime.failures == 0
    assert gpu_hours(job) == hours(8, 60)  # billed until the loss was seen, then nothing
    cycle(later(200))
    assert gpu_hours(job) == hours(8, 60)


def test_an_evicted_pod_stops_a_running_gang_whole_and_requeues_it(
    k8s_world, api, submit, cycle, reload
):
    job = running_gang(api, submit, cycle, reload, gpus=2, workers=4)
    api.evict_pod(f"team-{job.queue.team.name}", pod(job, 2), "The node was low on memory.")

    cycle(later(40))

    job = reload(job)
    assert job.state == Job.State.PENDING
    text = last_message(job, "requeued")
    assert f"Worker 2 (pod {pod(job, 2)} on " in text
    assert "was evicted: The node was low on memory." in text
    assert job.runtime.failures == 0  # an eviction is not the job's failure
    assert "failed" not in kinds(job)
    assert pods_of(api, job) == []
    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert gpu_hours(job) == hours(8, 30)


def drain(api: EmulatedCluster, node: str) -> None:
    """Cordon the node (as ``kubectl drain`` does first)."""
    api.add_node(node, {"nvidia.com/gpu": "8"}, H100, unschedulable=True)


def pods_on(api: EmulatedCluster, job: Job, node: str) -> list[str]:
    return sorted(
        name
        for name in pods_of(api, job)
        if api.stored_pods()[name]["metadata"]["annotations"]["gpuplatform/planned-node"] == node
    )


def test_an_elastic_job_losing_a_worker_above_its_minimum_goes_on_with_the_rest(
    k8s_world, api, submit, cycle, reload
):
    job = running_gang(api, submit, cycle, reload, gpus=4, workers=4, min_workers=2)
    assert job.placement == {"gpu-a": 2, "gpu-b": 2}
    drain(api, "gpu-b")
    lost = pods_on(api, job, "gpu-b")[0]
    api.evict_pod(f"team-{job.queue.team.name}", lost, "Evicted by a node drain.")

    cycle(later(70))

    job = reload(job)
    assert job.state == Job.State.RUNNING
    assert (job.current_workers, job.placement) == (3, {"gpu-a": 2, "gpu-b": 1})
    text = last_message(job, "scaled")
    assert "Evicted by a node drain." in text
    assert "goes on with 3 of its 4 workers (its minimum is 2)" in text
    assert lost not in pods_of(api, job) and len(pods_of(api, job)) == 3
    assert health(k8s_world) == (Cluster.Status.OK, "")
    cycle(later(130))
    assert reload(job).current_workers == 3  # nowhere to grow: gpu-b is cordoned
    assert gpu_hours(job) == hours(16, 60) + hours(12, 60)  # per worker actually there


def test_an_elastic_job_losing_workers_below_its_minimum_is_requeued_whole(
    k8s_world, api, submit, cycle, reload
):
    job = running_gang(api, submit, cycle, reload, gpus=4, workers=4, min_workers=3)
    drain(api, "gpu-b")
    for name in pods_on(api, job, "gpu-b"):
        api.evict_pod(f"team-{job.queue.team.name}", name, "Evicted by a node drain.")

    cycle(later(70))

    job = reload(job)
    assert job.state == Job.State.PENDING
    text = last_message(job, "requeued")
    assert "2 left, below its minimum of 3" in text
    assert pods_of(api, job) == []
    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert gpu_hours(job) == hours(16, 60)


def test_the_started_event_counts_only_the_workers_present(k8s_world, api, submit, cycle, reload):
    """An elastic job whose last worker cannot be created starts with the others."""
    job = submit(gpus=2, workers=4, min_workers=2)
    api.fail(kmock.action.CREATE, PODS, status=500, name=pod(job, 3), times=100)
    for step in range(4):  # the launch, then 3 retries
        cycle(later(10 * step))
        set_phase(api, job, "Running")
        assert reload(job).state == Job.State.ADMITTED

    cycle(later(40))

    job = reload(job)
    assert job.state == Job.State.RUNNING
    assert job.current_workers == 3
    text = last_message(job, "scaled")
    assert "Only 3 of 4 workers could be created after 3 launch retries" in text
    assert "goes on with 3 of its 4 workers (its minimum is 2)" in text
    assert "may grow again from 2026-03-02 09:01:40 UTC" in text
    assert "All 3 worker(s) running" in last_message(job, "started")
    assert health(k8s_world) == (Cluster.Status.OK, "")  # nothing more asked of pod 3
    cycle(later(90))
    job = reload(job)
    assert job.current_workers == 3  # it does not grow back before its backoff is over
    assert kinds(job).count("scaled") == 1
    assert health(k8s_world) == (Cluster.Status.OK, "")
    assert gpu_hours(job) == hours(6, 50)  # 3 workers x 2 GPUs, not the 4 admitted
