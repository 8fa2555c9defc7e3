"""In-cluster credentials (issue 20): a cluster registered as in-cluster is reached the way a pod
reaches its own API server: KUBERNETES_SERVICE_HOST/PORT, the mounted ServiceAccount token and
CA certificate. Here the "API server" is a small HTTPS server with a self-signed certificate
(the pod's ca.crt), so TLS is verified and the token really travels in the request."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes.config import incluster_config

from queues.clusters.base import InvalidSpec
from queues.clusters.factory import get_driver
from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
from queues.models import Cluster

NODE = {
    "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
    "spec": {},
    "status": {
        "allocatable": {"nvidia.com/gpu": "8"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "ca.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class ApiServer:
    """Answers the driver's two reads (nodes, managed pods) over HTTPS; keeps each request's
    Authorization header."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.authorizations: list[str] = []
        seen = self.authorizations

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization", ""))
                if self.path.startswith("/api/v1/nodes"):
                    body = {"kind": "NodeList", "items": [NODE]}
                else:
                    body = {"kind": "PodList", "items": []}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ApiServer, Path]]:
    """This process as if it ran in a pod: service env variables and ServiceAccount files."""
    cert, key = self_signed(tmp_path)
    api = ApiServer(cert, key)
    token = tmp_path / "token"
    token.write_text("first-projected-token")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(api.port))
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(cert))
    try:
        yield api, token
    finally:
        api.close()


def test_in_cluster_reads_the_api_with_the_pods_service_account(pod) -> None:
    api, token = pod
    driver = KubernetesDriver(KubernetesConnection(in_cluster=True))
    try:
        state = driver.sync()
    finally:
        driver.close()
    assert [node.name for node in state.nodes] == ["gpu-1"]
    assert api.authorizations == ["bearer first-projected-token"] * 2  # nodes, then pods

    token.write_text("rotated-by-the-kubelet")  # each cycle builds its driver: the new token
    again = KubernetesDriver(KubernetesConnection(in_cluster=True))
    try:
        again.sync()
    finally:
        again.close()
    assert api.authorizations[-1] == "bearer rotated-by-the-kubelet"


def test_a_registered_in_cluster_cluster_gets_that_driver(db: None, pod) -> None:
    api, _token = pod
    cluster = Cluster(name="local", driver=Cluster.Driver.KUBERNETES, in_cluster=True)
    cluster.full_clean()
    cluster.save()
    driver = get_driver(cluster)
    try:
        assert [node.name for node in driver.sync().nodes] == ["gpu-1"]
    finally:
        driver.close()
    assert api.authorizations[0] == "bearer first-projected-token"


def test_outside_a_pod_in_cluster_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(InvalidSpec, match=r"^in_cluster: this process does not run in a"):
        KubernetesDriver(KubernetesConnection(in_cluster=True))


def test_in_cluster_takes_no_other_credentials(db: None) -> None:
    with pytest.raises(InvalidSpec, match="in_cluster: uses the pod's ServiceAccount"):
        KubernetesConnection(in_cluster=True, api_server="https://k8s:6443", token="t")
    cluster = Cluster(
        name="mixed", driver=Cluster.Driver.KUBERNETES, in_cluster=True, kubeconfig_path="/k"
    )
    with pytest.raises(Exception, match="remove a kubeconfig path"):
        cluster.full_clean()
    simulated = Cluster(name="sim", driver=Cluster.Driver.SIMULATED, in_cluster=True)
    with pytest.raises(Exception, match="Only a Kubernetes cluster can be in-cluster"):
        simulated.full_clean()


def test_an_operator_registers_the_in_cluster_cluster_through_the_api(db: None, platform_admin):
    from django.test import Client

    client = Client()
    client.force_login(platform_admin)
    body = {"name": "local", "driver": "kubernetes", "in_cluster": True}
    response = client.post("/api/v1/clusters/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["in_cluster"] is True and response.json()["has_token"] is False
    refused = client.post(
        "/api/v1/clusters/",
        body | {"name": "other", "api_url": "https://k8s.example.org:6443", "token": "t"},
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert "remove an API server URL and a token" in refused.content.decode()
