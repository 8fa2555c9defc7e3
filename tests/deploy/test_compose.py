"""docker-compose.yml and the Dockerfile (issue 20): migrations only in the one-shot "migrate"
service, which web, worker and beat wait for; a healthcheck on every long-running service; the
image runs as a numeric non-root user and checks its own readiness. (``docker-compose config -q``
in .ci/run checks the file's syntax.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_only_the_migrate_one_shot_migrates_and_the_app_waits_for_it() -> None:
    services = compose()["services"]
    migrate = services["migrate"]
    assert migrate["command"] == "python manage.py migrate --no-input"
    assert migrate["restart"] == "no"
    for name in ("web", "worker", "beat"):
        service = services[name]
        assert "migrate" not in str(service["command"]), name
        assert service["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert service["depends_on"]["postgres"] == {"condition": "service_healthy"}


def test_every_long_running_service_has_a_healthcheck() -> None:
    services = compose()["services"]
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert "inspect ping" in " ".join(services["worker"]["healthcheck"]["test"])
    assert services["beat"]["healthcheck"]["test"][-2:] == ["healthcheck", "--cycle"]
    for name in ("postgres", "redis", "web", "worker", "beat"):
        assert services[name]["healthcheck"]["test"], name


def test_the_image_runs_as_a_numeric_user_and_checks_its_readiness() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "\nUSER 10001:10001\n" in dockerfile
    assert "HEALTHCHECK" in dockerfile and "/readyz" in dockerfile
    assert "migrate" not in dockerfile.split("\nCMD ")[-1]
