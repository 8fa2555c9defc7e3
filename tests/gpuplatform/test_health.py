"""Probes (issue 20): /healthz, /readyz (database, broker, migrations; 503 naming the failing
part), /readyz?cycle=1 (a cycle within 3 x CYCLE_INTERVAL) and ``manage.py healthcheck``.

The unreachable database, the unreachable broker and the unmigrated database are real: a fresh
interpreter configured with a closed port or an empty SQLite file answers the probe."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from queues.models import CycleRun

REPO = Path(__file__).resolve().parents[2]
POD_IP = "10.244.1.17:8000"  # what kubelet and Prometheus send as Host


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def probe_in_fresh_process(path: str, tmp_path: Path, **env: str) -> tuple[int, str]:
    """GET ``path`` in a new interpreter with production-like settings plus ``env``."""
    script = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        f"r = Client().get({path!r}, HTTP_HOST={POD_IP!r})\n"
        "print(r.status_code); print(r.content.decode())\n"
    )
    base = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    base |= {
        "DJANGO_SETTINGS_MODULE": "gpuplatform.settings",
        "PYTHONPATH": str(REPO),
        "DEBUG": "false",
        "SECRET_KEY": "probe-test-secret-key-probe-test-secret-key-0123456789",
        "ALLOWED_HOSTS": "gpu.example.org",
        "SECURE_SSL_REDIRECT": "true",
        "VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=base | env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    status, _, body = result.stdout.partition("\n")
    return int(status), body


def test_healthz_answers_without_touching_anything(client: Client, settings) -> None:
    settings.ALLOWED_HOSTS = ["gpu.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz", HTTP_HOST=POD_IP)
    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert response["Cache-Control"] == "no-store"


def test_readyz_is_ready_with_database_broker_and_migrations(
    db: None, client: Client, settings
) -> None:
    settings.ALLOWED_HOSTS = ["gpu.example.org"]  # probes come by IP: no DisallowedHost
    settings.SECURE_SSL_REDIRECT = True  # and over plain HTTP: no redirect
    response = client.get("/readyz", HTTP_HOST=POD_IP)
    assert response.status_code == 200, response.content
    assert response.content.decode().splitlines() == [
        "ready",
        "database: ok",
        "broker: ok",
        "migrations: ok",
    ]


def test_metrics_are_scraped_by_pod_address_too(db: None, client: Client, settings) -> None:
    settings.ALLOWED_HOSTS = ["gpu.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/metrics", HTTP_HOST=POD_IP)
    assert response.status_code == 200
    assert b"gpuplatform_pending_workloads" in response.content


def test_cycle_freshness_fails_with_no_cycle_or_an_old_one(
    db: None, client: Client, settings
) -> None:
    settings.CYCLE_INTERVAL = 10
    response = client.get("/readyz?cycle=1")
    assert response.status_code == 503
    assert response.content.decode().splitlines()[0] == "not ready: cycle"
    assert "cycle: no scheduling cycle has finished yet" in response.content.decode()

    now = timezone.now()
    CycleRun.objects.create(
        started_at=now - timedelta(seconds=45), finished_at=now - timedelta(seconds=31)
    )
    response = client.get("/readyz?cycle=1")
    assert response.status_code == 503
    assert "no scheduling cycle finished in the last 30 s (3 x CYCLE_INTERVAL)" in (
        response.content.decode()
    )
    assert client.get("/readyz").status_code == 200  # without ?cycle=1 the cycle is not asked


def test_cycle_freshness_passes_after_a_real_cycle(
    client: Client, sim_cluster, queue_a, cycle
) -> None:
    cycle(timezone.now())
    response = client.get("/readyz?cycle=1")
    assert response.status_code == 200, response.content
    assert response.content.decode().splitlines()[-1].startswith("cycle: ok (the last one")


def test_an_unreachable_database_is_a_503_naming_it(tmp_path: Path) -> None:
    url = f"postgres://gpuplatform:secret@127.0.0.1:{closed_port()}/gpuplatform"
    status, body = probe_in_fresh_process("/readyz", tmp_path, DATABASE_URL=url)
    assert status == 503
    lines = body.splitlines()
    assert lines[0] == "not ready: database, migrations"
    assert "database: unreachable" in lines
    assert "broker: ok" in lines  # the filesystem broker of this set-up is fine
    assert "127.0.0.1" not in body and "secret" not in body  # no address or password shown

    status, body = probe_in_fresh_process("/healthz", tmp_path, DATABASE_URL=url)
    assert (status, body.strip()) == (200, "ok")  # liveness does not depend on the database


def test_an_unreachable_broker_is_a_503_naming_it(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    status, body = probe_in_fresh_process("/readyz", tmp_path, REDIS_URL=url, DATABASE_URL=database)
    assert status == 503
    assert body.splitlines()[0].startswith("not ready: broker")
    assert "broker: unreachable" in body.splitlines()


def test_unapplied_migrations_are_a_503_naming_them(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'empty.sqlite3'}"  # reachable, never migrated
    status, body = probe_in_fresh_process("/readyz", tmp_path, DATABASE_URL=database)
    assert status == 503
    lines = body.splitlines()
    assert lines[0] == "not ready: migrations"
    assert "database: ok" in lines
    assert any(line.startswith("migrations: ") and "not applied: " in line for line in lines)


def test_the_healthcheck_command_checks_the_same_parts(db: None, settings, capsys) -> None:
    call_command("healthcheck")
    out = capsys.readouterr().out
    assert "database: ok" in out and "broker: ok" in out and "migrations: ok" in out
    assert out.strip().endswith("ready")

    settings.CYCLE_INTERVAL = 10
    with pytest.raises(CommandError, match="not ready: cycle"):
        call_command("healthcheck", "--cycle")
    CycleRun.objects.create(finished_at=timezone.now())
    call_command("healthcheck", "--cycle")
