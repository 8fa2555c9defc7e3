"""Kueue-compatible intake (docs/KUEUE.md), end to end against the Kubernetes emulator over real
HTTP: a Job, a JobSet and a PyTorchJob applied suspended with Kueue's queue label become platform
jobs, are unsuspended on the planned nodes, suspended when preempted, resumed, and cancelled when
deleted; every step in the job's timeline. The tests play the controllers (kmock runs none)."""

from __future__ import annotations

from typing import Any

import pytest

from queues.models import Job, WorkloadReference
from tests.queues.clusters.k8s_emulator import EmulatedCluster
from tests.queues.services import kueue_world as kw
from tests.queues.services.helpers import T0, kinds, last_message, later

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
SPOT = {"gpuplatform/service-class": "spot"}


@pytest.fixture(autouse=True)
def everything_sent_validates(api):
    yield
    kw.check_everything_sent(api)


def adopted_job(obj: dict[str, Any]) -> Job:
    ref = WorkloadReference.objects.select_related("job").get(uid=obj["metadata"]["uid"])
    return Job.objects.select_related("runtime").get(pk=ref.job_id)


def platform_pods(api: EmulatedCluster, job: Job) -> list[str]:
    return sorted(
        name
        for name, pod in api.stored_pods().items()
        if pod["metadata"]["labels"].get("gpuplatform/job") == str(job.pk)
    )


def workload_messages(job: Job) -> list[str]:
    return list(
        job.events.filter(kind="workload").order_by("at", "pk").values_list("message", flat=True)
    )


def reclaim_by_team_b(api: EmulatedCluster, submit, cycle, at: float) -> Job:
    """Team b takes back its nominal 8 H100 with a production job; the borrowing gang of team a
    is preempted (reclaim)."""
    return submit(team="b", gpus=8, cls="production", at=later(at), name="prod")


@pytest.mark.parametrize(
    "make", [kw.batch_job, kw.jobset, kw.pytorchjob], ids=["job", "jobset", "pytorchjob"]
)
def test_a_suspended_workload_with_a_queue_label_runs_is_preempted_resumed_and_cancelled(
    k8s_world, api, submit, cycle, reload, make
):
    obj = make(annotations=SPOT)
    kw.apply(api, obj)

    cycle(T0)

    job = adopted_job(obj)
    assert (job.state, job.workers, job.gpus_per_worker) == (Job.State.ADMITTED, 2, 8)
    assert (job.owner.username, job.queue.name, job.service_class.name) == ("alice", "main", "spot")
    live = kw.current(api, obj)
    assert not kw.adopted.suspended(live)
    for template in kw.templates(live):  # pinned to the planned nodes, findable by its labels
        assert kw.required_hosts(template) == [["gpu-a", "gpu-b"]]
        assert template["metadata"]["labels"]["gpuplatform/job"] == str(job.pk)
        assert template["metadata"]["labels"]["app"] == "trainer"  # the user's kept
    said = kw.condition(live)
    assert (said["status"], said["reason"]) == ("True", "Admitted")
    assert said["message"] == f"Admitted as job #{job.pk} on gpu-a, gpu-b."
    name = obj["metadata"]["name"]
    assert [(e["type"], e["reason"]) for e in kw.events_about(api, name)] == [
        ("Normal", "Queued"),
        ("Normal", "Admitted"),
    ]
    assert WorkloadReference.objects.get(job=job).labels["project"] == "llama"
    assert platform_pods(api, job) == []  # the platform makes no pods of its own for it

    pods = kw.play_controller(api, obj, ["gpu-a", "gpu-b"])
    cycle(later(10))
    job = reload(job)
    assert job.state == Job.State.RUNNING
    assert "All 2 worker(s) running" in last_message(job, "started")

    prod = reclaim_by_team_b(api, submit, cycle, 20)
    cycle(later(20))
    job = reload(job)
    assert job.state == Job.State.PREEMPTED
    assert kw.adopted.suspended(kw.current(api, obj))  # as Kueue does: suspended, not deleted
    said = kw.condition(kw.current(api, obj))
    assert (said["status"], said["reason"]) == ("False", "Suspended")
    assert "reclaim" in last_message(job, "preempted").lower() or "nominal" in last_message(
        job, "preempted"
    )
    kw.controller_deletes_pods(api, pods)

    cycle(later(60))  # the grace period (spot: 30 s) is over: back in the queue
    for name in platform_pods(api, reload(prod)):
        api.set_pod_status("team-team-b", name, {"phase": "Running"})
    cycle(later(70))
    job = reload(job)
    assert job.state == Job.State.PENDING
    restored = kw.current(api, obj)
    for template in kw.templates(restored):  # the templates as applied, while it waits
        assert template == kw.templates(obj)[0]

    for name in platform_pods(api, reload(prod)):
        api.set_pod_status("team-team-b", name, {"phase": "Succeeded"})
    cycle(later(400))
    job = reload(job)
    assert job.state == Job.State.ADMITTED  # resumed: unsuspended again
    live = kw.current(api, obj)
    assert not kw.adopted.suspended(live)
    assert all(kw.required_hosts(t) == [["gpu-a", "gpu-b"]] for t in kw.templates(live))
    kw.play_controller(api, obj, ["gpu-b", "gpu-a"])
    cycle(later(410))
    assert reload(job).state == Job.State.RUNNING

    api.remove(kw.resource_of(obj), kw.NAMESPACE, obj["metadata"]["name"])
    cycle(later(420))
    job = reload(job)
    assert job.state == Job.State.CANCELLED
    ref = f"{obj['apiVersion']} {obj['kind']} {kw.NAMESPACE}/{obj['metadata']['name']}"
    assert f"Cancelled by the deletion of {ref}" in last_message(job, "cancelled")
    assert kinds(job) == [
        "submitted",
        "workload",  # taken in
        "admitted",
        "workload",  # unsuspended on gpu-a, gpu-b
        "started",
        "preempted",
        "workload",  # suspended
        "requeued",
        "pending",  # why it waits: team b's job holds the GPUs
        "workload",  # pod templates restored
        "admitted",
        "workload",  # unsuspended
        "started",
        "cancelled",
    ]
    words = workload_messages(job)
    assert words[0].startswith(f"Taken in from {ref}, applied suspended with ")
    assert words[1].startswith(f"Unsuspended {ref} on gpu-a, gpu-b")
    assert words[2].startswith(f"Suspended {ref}")
    assert words[3].startswith(f"Restored the pod templates of {ref}")


# -- refused: an Event and a condition saying why, once ----------------------------------------


def told(api: EmulatedCluster, obj: dict[str, Any]) -> tuple[list[str], dict[str, Any] | None]:
    events = kw.events_about(api, obj["metadata"]["name"])
    return [f"{e['type']} {e['reason']}: {e['message']}" for e in events], kw.condition(
        kw.current(api, obj)
    )


def status_patches(api: EmulatedCluster) -> int:
    return sum(1 for r in api.requests("PATCH") if r.subresource == "status")


@pytest.mark.parametrize(
    ("obj", "reason", "words"),
    [
        (
            kw.batch_job("eager", spec={"suspend": False}),
            "NotSuspended",
            "spec.suspend is not true: the platform only takes in workloads created suspended",
        ),
        (
            kw.pytorchjob("lost", uid="uid-lost") | {"metadata": {
                **kw.metadata("lost", "uid-lost"),
                "labels": {"kueue.x-k8s.io/queue-name": "nowhere"},
            }},
            "UnknownQueue",
            "team team-a has no queue 'nowhere'; its queues: main",
        ),
        (
            kw.batch_job("huge", uid="uid-huge", workers=4),
            "SubmissionRefused",
            "workers: 4 worker(s) x 8 GPU(s) = 32 is more than any cluster holds",
        ),
        (
            kw.jobset("mixed", uid="uid-mixed")
            | {"spec": {"suspend": True, "replicatedJobs": [
                {"name": "a", "replicas": 1, "template": {"spec": {
                    "parallelism": 1, "completions": 1, "template": kw.pod_template(8)}}},
                {"name": "b", "replicas": 1, "template": {"spec": {
                    "parallelism": 1, "completions": 1, "template": kw.pod_template(4)}}},
            ]}},
            "InvalidWorkload",
            "its pods ask for different GPUs (a: 8 nvidia.com/gpu, b: 4 nvidia.com/gpu)",
        ),
    ],
    ids=["not-suspended", "unknown-queue", "too-large", "heterogeneous"],
)  # fmt: skip
def test_a_workload_the_platform_cannot_take_gets_an_event_and_a_condition_once(
    k8s_world, api, cycle, obj, reason, words
):
    kw.apply(api, obj)

    cycle(T0)

    events, said = told(api, obj)
    assert len(events) == 1 and events[0].startswith(f"Warning {reason}: {words}"), events
    assert said is not None
    assert (said["status"], said["reason"]) == ("False", reason)
    assert said["message"].startswith(words)
    assert not WorkloadReference.objects.exists() and not Job.objects.exists()
    assert kw.adopted.suspended(kw.current(api, obj)) == kw.adopted.suspended(obj)  # untouched
    sent = status_patches(api)

    cycle(later(10))
    cycle(later(20))

    assert told(api, obj)[0] == events  # not told again
    assert status_patches(api) == sent


def test_a_waiting_workload_unsuspended_by_hand_is_suspended_again(
    k8s_world, api, submit, cycle, reload
):
    """As Kueue does: the platform alone decides when a workload it took in runs."""
    big = submit(team="a", gpus=8, workers=2, name="big")  # holds both nodes
    cycle(T0)
    assert reload(big).state == Job.State.ADMITTED
    obj = kw.batch_job(workers=1)
    kw.apply(api, obj)
    cycle(later(10))
    job = adopted_job(obj)
    assert job.state == Job.State.PENDING

    live = kw.current(api, obj)
    live["spec"]["suspend"] = False  # kubectl patch ... suspend: false
    api.put(kw.resource_of(obj), live)
    cycle(later(20))

    assert kw.adopted.suspended(kw.current(api, obj))
    assert reload(job).state == Job.State.PENDING
    assert workload_messages(job)[-1].startswith("Suspended batch/v1 Job team-team-a/train")


def test_a_failed_pod_requeues_the_gang_suspended_and_succeeded_pods_end_the_job(
    k8s_world, api, cycle, reload
):
    """The controller's pods are the job's workers: one failed worker stops the gang (the
    object is suspended, the job requeued); all succeeded is the job's success, and the object,
    complete on its own, is left alone."""
    obj = kw.batch_job(workers=2, gpus=4)
    kw.apply(api, obj)
    cycle(T0)
    pods = kw.play_controller(api, obj, ["gpu-a"])
    cycle(later(10))
    job = adopted_job(obj)
    assert job.state == Job.State.RUNNING

    api.set_pod_status(kw.NAMESPACE, pods[1], {"phase": "Failed", "reason": "Error"})
    cycle(later(20))
    job = reload(job)
    assert job.runtime.failures == 1
    assert "worker 1" in last_message(job, "requeued")
    assert job.state == Job.State.ADMITTED  # requeued and admitted again at once, but
    assert kw.adopted.suspended(kw.current(api, obj))  # not unsuspended while its pods remain
    kw.controller_deletes_pods(api, pods)

    cycle(later(30))  # its pods are gone: unsuspended, the gang restarts whole
    assert not kw.adopted.suspended(kw.current(api, obj))
    assert reload(job).state == Job.State.ADMITTED
    pods = kw.play_controller(api, obj, ["gpu-b"])
    cycle(later(110))
    assert reload(job).state == Job.State.RUNNING
    for name in pods:
        api.set_pod_status(kw.NAMESPACE, name, {"phase": "Succeeded"})
    patches = len(api.requests("PATCH"))
    cycle(later(200))

    assert reload(job).state == Job.State.SUCCEEDED
    assert not kw.adopted.suspended(kw.current(api, obj))  # finished on its own: untouched
    assert len(api.requests("PATCH")) == patches
