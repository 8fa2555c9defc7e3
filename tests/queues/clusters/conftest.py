"""Fixtures for the cluster-driver tests (helpers live in k8s_emulator.py)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
from tests.queues.clusters import k8s_emulator
from tests.queues.clusters.k8s_emulator import REQUEST_TIMEOUT, TOKEN, EmulatedCluster


@pytest.fixture()
def cluster() -> Iterator[EmulatedCluster]:
    emulated = EmulatedCluster()
    try:
        yield emulated
    finally:
        emulated.close()


@pytest.fixture()
def connection(cluster: EmulatedCluster) -> KubernetesConnection:
    return KubernetesConnection(
        api_server=cluster.url, token=TOKEN, request_timeout_seconds=REQUEST_TIMEOUT
    )


@pytest.fixture()
def driver(connection: KubernetesConnection) -> Iterator[KubernetesDriver]:
    made = KubernetesDriver(connection)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture()
def closed_port() -> int:
    """A local TCP port with nothing listening on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture()
def validate_manifest() -> Callable[[dict[str, Any]], None]:
    return k8s_emulator.validate_manifest
