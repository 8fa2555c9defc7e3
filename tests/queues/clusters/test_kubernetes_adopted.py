"""The driver's calls about kubectl-applied workloads (queues/clusters/kubernetes_adopted.py)
against the emulator over real HTTP: what it lists, and what a refused or failed call does."""

from __future__ import annotations

import copy

import kmock
import pytest

from queues.clusters import adopted
from queues.clusters.base import ClusterUnavailable, WorkloadConflict
from queues.clusters.kubernetes import KubernetesDriver
from tests.queues.clusters.k8s_emulator import JOBS, JOBSETS, EmulatedCluster
from tests.queues.services import kueue_world as kw

FORBIDDEN = (
    'jobsets.jobset.x-k8s.io is forbidden: User "system:serviceaccount:gpuplatform:gpuplatform" '
    'cannot list resource "jobsets" in API group "jobset.x-k8s.io" at the cluster scope'
)


def test_only_workloads_with_a_queue_label_are_listed(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    kw.apply(cluster, kw.batch_job("queued"))
    plain = kw.batch_job("plain", uid="uid-plain")
    plain["metadata"]["labels"] = {"app": "etl"}
    kw.apply(cluster, plain)
    kw.apply(cluster, kw.jobset())

    listing = driver.list_adopted()

    assert sorted(o["metadata"]["name"] for o in listing.objects) == ["queued", "sft"]
    assert listing.kinds == {"Job", "JobSet", "PyTorchJob"}


def test_a_kind_the_platform_may_not_list_is_skipped_and_the_cluster_stays_usable(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    kw.apply(cluster, kw.batch_job())
    cluster.fail(kmock.action.LIST, JOBSETS, status=403, reason="Forbidden", message=FORBIDDEN)

    listing = driver.list_adopted()

    assert listing.kinds == {"Job", "PyTorchJob"}  # its objects are not taken for deleted
    assert [o["kind"] for o in listing.objects] == ["Job"]
    cluster.fail(kmock.action.WATCH, JOBS, status=500)  # the kind is followed by a watch now
    with pytest.raises(ClusterUnavailable):
        driver.list_adopted()


def test_the_kinds_are_listed_once_then_watched_and_a_new_workload_is_seen(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    kw.apply(cluster, kw.batch_job())
    assert [o["kind"] for o in driver.list_adopted().objects] == ["Job"]
    lists_before = [cache.stats.lists for cache in driver.adopted_caches]

    later = kw.batch_job()
    later["metadata"]["name"], later["metadata"]["uid"] = "second", "uid-second"
    kw.apply(cluster, later)
    listing = driver.list_adopted()

    assert sorted(o["metadata"]["name"] for o in listing.objects) == sorted(
        [kw.batch_job()["metadata"]["name"], "second"]
    )
    assert [cache.stats.lists for cache in driver.adopted_caches] == lists_before  # no LIST
    assert sum(cache.stats.watches for cache in driver.adopted_caches) >= 3


def test_a_workload_replaced_by_another_of_the_same_name_is_not_admitted(
    cluster: EmulatedCluster, driver: KubernetesDriver
) -> None:
    obj = kw.batch_job()
    kw.apply(cluster, obj)
    ref = adopted.ref_of(obj)
    again = copy.deepcopy(obj)
    again["metadata"]["uid"] = "uid-new"  # deleted and applied again
    cluster.put(JOBS, again)

    with pytest.raises(WorkloadConflict, match="gone"):
        driver.admit_adopted(ref, "7", {"gpuplatform/job": "7"}, ["gpu-a"])

    assert kw.adopted.suspended(kw.current(cluster, obj))
    assert driver.suspend_adopted(ref) is False  # nothing of ours to suspend
