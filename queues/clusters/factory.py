"""``get_driver(cluster)``: the driver a ``Cluster`` row asks for.

``DRIVER_FACTORIES`` maps the row's ``driver`` field to a factory; tests may swap one in (for
example a driver that always raises ``ClusterUnavailable``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from django.utils import timezone

from queues.clusters.base import ClusterDriver, InvalidSpec

if TYPE_CHECKING:
    from queues.models import Cluster

DriverFactory = Callable[["Cluster", Callable[[], datetime]], ClusterDriver]


def simulated_driver(cluster: Cluster, now: Callable[[], datetime]) -> ClusterDriver:
    from queues.clusters.simulated import SimulatedDriver

    return SimulatedDriver(cluster.pk, now=now)


def kubernetes_driver(cluster: Cluster, now: Callable[[], datetime]) -> ClusterDriver:
    """A Kubernetes driver from the row's connection settings: in-cluster (the pod's
    ServiceAccount), URL + token, or kubeconfig."""
    from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
    from queues.models.encrypted import UndecryptableSecret

    if isinstance(cluster.token, UndecryptableSecret):
        raise InvalidSpec(
            "token: none of CLUSTER_TOKEN_KEYS decrypts the stored token; add the key it was "
            "encrypted with back to CLUSTER_TOKEN_KEYS, or set the token again"
        )
    if cluster.in_cluster:
        connection = KubernetesConnection(
            in_cluster=True, ca_cert_data=cluster.ca_cert, verify_tls=cluster.verify_tls
        )
    elif cluster.kubeconfig_path:
        connection = KubernetesConnection(
            kubeconfig_path=cluster.kubeconfig_path,
            context=cluster.kubeconfig_context,
            ca_cert_data=cluster.ca_cert,
            verify_tls=cluster.verify_tls,
        )
    else:
        connection = KubernetesConnection(
            api_server=cluster.api_url,
            token=cluster.token,
            ca_cert_data=cluster.ca_cert,
            verify_tls=cluster.verify_tls,
        )
    return KubernetesDriver(connection)


DRIVER_FACTORIES: dict[str, DriverFactory] = {
    "simulated": simulated_driver,
    "kubernetes": kubernetes_driver,
}


def get_driver(cluster: Cluster, *, now: datetime | None = None) -> ClusterDriver:
    """The driver of ``cluster``; a simulated one reads the clock ``now`` (default: real time).

    Raises ``InvalidSpec`` (a ``DriverError``) for an unknown driver or bad connection settings.
    """
    factory = DRIVER_FACTORIES.get(cluster.driver)
    if factory is None:
        known = ", ".join(sorted(DRIVER_FACTORIES))
        raise InvalidSpec(f"driver: {cluster.driver!r} is not a known driver ({known})")
    clock: Callable[[], datetime] = timezone.now if now is None else (lambda: now)
    return factory(cluster, clock)
