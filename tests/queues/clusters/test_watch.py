"""A driver kept across cycles follows nodes and pods with watches (queues/clusters/watch.py),
against kmock's emulator over real HTTP: what each sync reports is what the cluster holds, after
a stream that broke, a 410, and a run of errors with backoff."""

from __future__ import annotations

from collections.abc import Iterator

import kmock
import pytest

from queues.clusters.base import ClusterUnavailable
from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
from tests.queues.clusters.k8s_emulator import NODES, PODS, TOKEN, EmulatedCluster


class Clock:
    """Monotonic seconds the test moves on by hand (the watches' backoff reads it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kept(cluster: EmulatedCluster, clock: Clock) -> Iterator[KubernetesDriver]:
    """The driver a worker keeps from one cycle to the next (timeouts roomy for a loaded CI)."""
    connection = KubernetesConnection(
        api_server=cluster.url, token=TOKEN, request_timeout_seconds=5, watch_idle_seconds=0.5
    )
    made = KubernetesDriver(connection, clock=clock)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def shared(cluster: EmulatedCluster) -> EmulatedCluster:
    cluster.add_node("gpu-a", {"nvidia.com/gpu": "8"})
    cluster.add_pod("infer", "serve-0", "gpu-a", {"nvidia.com/gpu": "2"})
    return cluster


def held(driver: KubernetesDriver) -> dict[str, int]:
    """What other workloads hold on gpu-a, as the driver's sync reports it."""
    node = next(n for n in driver.sync().nodes if n.name == "gpu-a")
    return dict(node.other_usage)


def phases(driver: KubernetesDriver) -> dict[str, str]:
    return {p["metadata"]["name"]: p["status"]["phase"] for p in driver.caches[1].items()}


def test_after_the_first_list_a_sync_asks_only_for_changes(shared, kept) -> None:
    assert held(kept) == {"nvidia.com/gpu": 2}
    lists = len(shared.requests("GET")) - len(shared.watches())
    shared.add_pod("infer", "serve-1", "gpu-a", {"nvidia.com/gpu": "3"})
    shared.set_pod_status("infer", "serve-0", {"phase": "Succeeded"})  # ended: holds nothing

    assert held(kept) == {"nvidia.com/gpu": 3}
    assert len(shared.requests("GET")) - len(shared.watches()) == lists  # no new LIST
    pods_watch = shared.watches(PODS)[-1]
    version = pods_watch.params["resourceVersion"]
    assert version and version != "0"  # resumed from the list's version, not from scratch
    assert pods_watch.params["timeoutSeconds"] and pods_watch.params["allowWatchBookmarks"]

    shared.delete_pod("infer", "serve-1")
    assert held(kept) == {}


def test_a_watch_that_breaks_mid_stream_resumes_and_loses_no_event(shared, kept) -> None:
    held(kept)
    shared.add_pod("infer", "serve-1", "gpu-a", {"nvidia.com/gpu": "1"})
    shared.add_pod("infer", "serve-2", "gpu-a", {"nvidia.com/gpu": "1"})
    shared.drop_watch(PODS, after_events=1)  # the connection breaks after serve-1's event
    before = len(shared.watches(PODS))

    assert held(kept) == {"nvidia.com/gpu": 4}  # serve-2 too, from the watch opened again
    first, again = shared.watches(PODS)[before:]
    # opened again from serve-1's version: serve-1 is not read twice, serve-2 not skipped
    assert int(again.params["resourceVersion"]) > int(first.params["resourceVersion"])


def test_a_pod_that_changed_while_the_watch_was_down_is_seen(shared, kept, clock) -> None:
    held(kept)
    shared.drop_watch(PODS, after_events=0)
    shared.fail(kmock.action.WATCH, PODS, status=503, reason="ServiceUnavailable")
    shared.set_pod_status("infer", "serve-0", {"phase": "Running", "message": "still"})

    with pytest.raises(ClusterUnavailable, match="HTTP 503"):
        kept.sync()  # broke, and could not be opened again

    shared.set_pod_status("infer", "serve-0", {"phase": "Failed"})  # meanwhile: it ended
    shared.add_pod("infer", "serve-9", "gpu-a", {"nvidia.com/gpu": "5"})
    clock.now += 1  # the first backoff is over
    assert held(kept) == {"nvidia.com/gpu": 5}
    assert phases(kept)["serve-0"] == "Failed"


def test_410_gone_lists_again(shared, kept) -> None:
    held(kept)
    shared.add_pod("infer", "serve-1", "gpu-a", {"nvidia.com/gpu": "1"})
    shared.compact()  # etcd forgot the history the driver would resume from

    assert held(kept) == {"nvidia.com/gpu": 3}
    assert kept.caches[1].stats.lists == 2

    listed = kept.caches[0].stats.lists
    shared.fail(kmock.action.WATCH, NODES, status=410, reason="Gone", message="too old")
    shared.add_node("gpu-a", {"nvidia.com/gpu": "4"})  # the watch answers 410 as a status
    node = next(n for n in kept.sync().nodes if n.name == "gpu-a")
    assert node.allocatable == {"nvidia.com/gpu": 4}
    assert kept.caches[0].stats.lists == listed + 1


def test_repeated_errors_back_off_bounded_and_the_sync_recovers(shared, kept, clock) -> None:
    held(kept)
    shared.fail(kmock.action.WATCH, PODS, status=500, times=100)
    waits = []
    for _ in range(9):
        with pytest.raises(ClusterUnavailable, match="HTTP 500"):
            kept.sync()
        waits.append(kept.caches[1].retry_in)
        asked = len(shared.watches(PODS))
        with pytest.raises(ClusterUnavailable, match="next attempt in"):
            kept.sync()  # during the backoff: refused without asking the server
        assert len(shared.watches(PODS)) == asked
        clock.now += waits[-1]
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60]

    shared.call(lambda: shared.emulator.faults.clear())
    shared.set_pod_status("infer", "serve-0", {"phase": "Succeeded"})
    assert held(kept) == {}
    assert kept.caches[1].failures == 0 and kept.caches[1].retry_in == 0


def test_platform_pods_and_unbound_or_ended_pods_hold_nothing_extra(shared, kept) -> None:
    shared.add_pod(
        "team-a", "train-1-0", "gpu-a", {"nvidia.com/gpu": "4"},
        labels={"app.kubernetes.io/managed-by": "gpuplatform"},
    )  # fmt: skip
    shared.add_pod("infer", "queued", "", {"nvidia.com/gpu": "8"}, phase="Pending")  # unbound
    shared.add_pod("infer", "done", "gpu-a", {"nvidia.com/gpu": "8"}, phase="Succeeded")
    shared.add_pod(
        "infer", "warm", "gpu-a", {"nvidia.com/gpu": "1"}, init_gpus={"nvidia.com/gpu": "3"}
    )  # the init container's 3 GPUs, not 1 + 3
    assert held(kept) == {"nvidia.com/gpu": 2 + 3}
