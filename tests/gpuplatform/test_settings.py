"""The settings module refuses unsafe or malformed configuration at start-up, with clear words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

REPO = Path(__file__).resolve().parents[2]


def start_django(**env: str) -> subprocess.CompletedProcess[str]:
    """Import the settings in a fresh interpreter with exactly these settings variables."""
    clean = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CYCLE_INTERVAL"}
    }
    clean.update(env, DJANGO_SETTINGS_MODULE="gpuplatform.settings", PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=REPO,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_without_secret_key_refuses_to_start_with_a_clear_message() -> None:
    result = start_django(DEBUG="false")
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set and DEBUG is off" in result.stderr


def test_production_with_a_secret_key_starts() -> None:
    result = start_django(DEBUG="false", SECRET_KEY="a-long-random-production-secret-key-value")
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


def test_bad_cycle_interval_stops_start_up_naming_the_variable() -> None:
    result = start_django(CYCLE_INTERVAL="often")
    assert result.returncode != 0
    assert "CYCLE_INTERVAL='often' is not a whole number" in result.stderr


def test_bad_database_url_stops_start_up_naming_the_variable() -> None:
    result = start_django(DATABASE_URL="mysql://root@localhost/gpu")
    assert result.returncode != 0
    assert "DATABASE_URL='mysql://root@localhost/gpu': unsupported scheme 'mysql'" in result.stderr


def test_time_is_utc_and_timezone_aware() -> None:
    assert settings.TIME_ZONE == "UTC"
    assert settings.USE_TZ is True


def test_celery_accepts_json_only() -> None:
    from gpuplatform.celery import app

    assert app.conf.task_serializer == "json"
    assert list(app.conf.accept_content) == ["json"]
