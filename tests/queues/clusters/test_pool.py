"""The drivers a worker process keeps across cycles (queues/clusters/pool.py)."""

from __future__ import annotations

import pytest

from queues.clusters.kubernetes import KubernetesDriver
from queues.clusters.pool import DriverPool
from queues.models import Cluster

pytestmark = pytest.mark.django_db


def kubernetes(name: str = "gpu", token: str = "t0") -> Cluster:
    return Cluster.objects.create(
        name=name, driver=Cluster.Driver.KUBERNETES, api_url="https://k8s:6443", token=token
    )


def test_a_kubernetes_driver_is_kept_until_its_connection_settings_change() -> None:
    pool = DriverPool()
    cluster = kubernetes()
    with pool.driver(cluster) as first:
        assert isinstance(first, KubernetesDriver)
    with pool.driver(Cluster.objects.get(pk=cluster.pk)) as again:
        assert again is first  # its caches live on

    cluster.token = "rotated"
    cluster.save()
    with pool.driver(Cluster.objects.get(pk=cluster.pk)) as rebuilt:
        assert rebuilt is not first
    assert len(pool) == 1
    pool.close()
    assert len(pool) == 0


def test_a_deleted_clusters_driver_is_closed_and_a_simulated_one_never_kept() -> None:
    pool = DriverPool()
    gone, stays = kubernetes("gone"), kubernetes("stays")
    simulated = Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)
    for cluster in (gone, stays, simulated):
        with pool.driver(cluster):
            pass
    assert len(pool) == 2  # the simulated driver reads each cycle's clock: built per use
    pool.retain([stays.pk, simulated.pk])
    assert len(pool) == 1
