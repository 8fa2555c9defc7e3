"""A job's workers and logs (queues/services/worker_logs.py) on the simulated cluster: what a
running job shows and how it follows the run, a pending job's and an ended job's answer, the
query's checks, and a cluster that cannot be read."""

from __future__ import annotations

import socket
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from queues.models import Cluster, Job, Node, SimulatedWorkload
from queues.services.worker_logs import LogsUnavailable, job_logs, parse_log_query
from tests.queues.clusters.k8s_emulator import TOKEN, EmulatedCluster, validate_manifest
from tests.queues.services.helpers import T0, later

pytestmark = pytest.mark.django_db

Cycle = Callable[..., Any]


@pytest.fixture
def running(submit: Callable[..., Job], cycle: Cycle) -> Job:
    """A 2 x 4 GPU job launched on the simulated cluster at later(1), running from later(2)."""
    job = submit(workers=2, gpus=4, name="llama")
    cycle(later(1))
    cycle(later(2))
    job.refresh_from_db()
    assert job.state == "running"
    return job


def test_a_running_job_shows_each_worker_with_its_last_lines(running: Job) -> None:
    logs = job_logs(running, tail=100, now=later(11))  # 10 s at 60x: 600 simulated seconds

    assert logs.job == running.pk and logs.cluster == "sim" and logs.detail == ""
    assert [w.index for w in logs.workers] == [0, 1]
    first = logs.workers[0]
    assert (first.pod, first.phase, first.reason, first.restarts) == (
        f"job-{running.pk}-0", "running", "", 0,
    )  # fmt: skip
    assert first.node in ("n1", "n2")
    assert first.lines[0].endswith(f"rank 0 of 2: job {running.pk} starting on {first.node}")
    assert len(first.lines) == 11 and "step 1000 loss" in first.lines[-1]


def test_later_reads_add_lines_and_keep_the_earlier_ones(running: Job) -> None:
    early = job_logs(running, worker=1, tail=5000, now=later(11)).workers[0].lines
    late = job_logs(running, worker=1, tail=5000, now=later(31)).workers[0].lines
    assert len(late) == len(early) + 20 and late[: len(early)] == early
    assert job_logs(running, worker=1, tail=3, now=later(31)).workers[0].lines == late[-3:]


def test_a_failed_run_shows_its_traceback(
    submit: Callable[..., Job], cycle: Cycle, settings: Any
) -> None:
    settings.SIMULATION_FAILURE_RATE = 1.0
    job = submit(workers=1, gpus=8)
    cycle(later(1))
    job.refresh_from_db()
    row = SimulatedWorkload.objects.get(job_id=str(job.pk))
    ended = later(1 + row.run_seconds / 60 + 1)
    (worker,) = job_logs(job, now=ended).workers
    assert worker.phase == "failed" and worker.message == "simulated failure: exit code 1"
    assert worker.lines[-1].endswith(
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )


def test_a_pending_job_has_nothing_to_show_and_says_why(
    submit: Callable[..., Job], world: SimpleNamespace
) -> None:
    job = submit(gpus=8)
    logs = job_logs(job)
    assert logs.workers == [] and logs.cluster == ""
    assert f"Job {job.pk} is pending" in logs.detail
    assert logs.as_dict() == {"job": job.pk, "cluster": "", "workers": [], "detail": logs.detail}


def test_an_ended_job_whose_pods_are_gone_says_so(running: Job, cycle: Cycle) -> None:
    cycle(later(2 + 3600 / 60 + 1))  # the hour of work is done: succeeded, pods removed
    cycle(later(2 + 3600 / 60 + 2))
    running.refresh_from_db()
    assert running.state == "succeeded"
    logs = job_logs(running, now=later(2 + 3600 / 60 + 3))
    assert logs.workers == [] and "succeeded and its workers' pods are gone" in logs.detail


def test_a_planned_worker_without_a_pod_is_listed_as_missing(running: Job) -> None:
    row = SimulatedWorkload.objects.get(job_id=str(running.pk))
    row.workers = row.workers[:1]  # worker 1's pod went away
    row.save()
    logs = job_logs(running, now=later(11))
    assert [(w.index, w.phase) for w in logs.workers] == [(0, "running"), (1, "missing")]
    assert logs.workers[1].message == "worker 1 has no pod" and logs.workers[1].node
    (alone,) = job_logs(running, worker=1, now=later(11)).workers
    assert alone.phase == "missing"


def test_a_cluster_that_cannot_be_read_raises_the_drivers_error(running: Job) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]  # nothing listens there once closed
    Cluster.objects.filter(pk=running.cluster_id).update(
        driver="kubernetes", api_url=f"http://127.0.0.1:{closed_port}", token="t"
    )
    running.refresh_from_db()
    with pytest.raises(LogsUnavailable, match="Cluster sim cannot be read now: list pods of job"):
        job_logs(running)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"worker": "x"}, "worker"), ({"worker": "-1"}, "worker"), ({"worker": "2"}, "worker"),
        ({"tail": "0"}, "tail"), ({"tail": "5001"}, "tail"), ({"tail": "ten"}, "tail"),
        ({"tail": "1.5"}, "tail"),
    ],
)  # fmt: skip
def test_a_bad_query_names_its_parameter(running: Job, params: dict[str, str], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_log_query(params, running)
    assert list(refused.value.message_dict) == [field]


def test_the_query_defaults_to_every_worker_and_100_lines(running: Job) -> None:
    query = parse_log_query({}, running)
    assert (query.worker, query.tail) == (None, 100)
    query = parse_log_query({"worker": "1", "tail": "5000"}, running)
    assert (query.worker, query.tail) == (1, 5000)


def test_a_job_on_kubernetes_shows_its_pods_and_their_logs(
    world: SimpleNamespace, submit: Callable[..., Job], cycle: Cycle
) -> None:
    """The whole path on the Kubernetes emulator (real HTTP): the live cycle launches the gang
    in the team's namespace, and the job's workers and logs are read from its pods."""
    api = EmulatedCluster()
    try:
        for name in ("gpu-a", "gpu-b"):
            api.add_node(name, {"nvidia.com/gpu": "8"}, {"nvidia.com/gpu.product": "H100"})
        Node.objects.filter(cluster=world.cluster).delete()
        Cluster.objects.filter(pk=world.cluster.pk).update(
            driver=Cluster.Driver.KUBERNETES, api_url=api.url, token=TOKEN, verify_tls=False
        )
        cycle(later(-60))  # the nodes, read from the API
        job = submit(gpus=8, workers=2, name="llama")
        cycle(T0)
        job.refresh_from_db()
        namespace, pods = "team-team-a", [f"llama-{job.pk}-0", f"llama-{job.pk}-1"]
        assert sorted(api.stored_pods(namespace)) == pods
        waiting = {"name": "worker", "restartCount": 0,
                   "state": {"waiting": {"reason": "ContainerCreating"}}}  # fmt: skip
        api.set_pod_status(namespace, pods[1], {"phase": "Pending", "containerStatuses": [waiting]})
        running = {"name": "worker", "restartCount": 1, "state": {"running": {}},
                   "lastState": {"terminated": {"exitCode": 1}}}  # fmt: skip
        api.set_pod_status(namespace, pods[0], {"phase": "Running", "containerStatuses": [running]})
        api.set_pod_log(namespace, pods[0], "epoch 1\nepoch 2\nepoch 3\n")

        logs = job_logs(job, tail=2)

        assert logs.cluster == "sim" and [w.pod for w in logs.workers] == pods
        first, second = logs.workers
        assert (first.phase, first.restarts, first.lines) == ("running", 1, ["epoch 2", "epoch 3"])
        assert second.phase == "pending" and second.lines == []
        assert second.message == "worker 1 has not started yet: ContainerCreating"
        for request in api.requests():  # what the platform sent is valid
            if request.method.value in ("POST", "DELETE") and request.data:
                validate_manifest(request.data)
    finally:
        api.close()
