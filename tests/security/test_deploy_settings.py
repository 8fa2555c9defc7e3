"""HTTPS, HSTS, the proxy header and the Content-Security-Policy come from the environment, and
``manage.py check --deploy`` is clean with the documented production environment (.env.example
plus what docker-compose.yml sets) (issue 26)."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.test import Client

from gpuplatform.env import EnvError, env_proxy_ssl_header

REPO = Path(__file__).resolve().parents[2]


def production_environment(var_dir: Path) -> dict[str, str]:
    """.env.example with its "change-me" secrets replaced, then docker-compose.yml's own
    variables (DEBUG, DATABASE_URL, REDIS_URL, CACHE_URL) over it."""
    env: dict[str, str] = {}
    for line in (REPO / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            env[key.strip()] = secrets.token_urlsafe(50) if "change-me" in value else value
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    for key, value in compose["x-app"]["environment"].items():
        env[key] = str(value).replace("${POSTGRES_PASSWORD}", env["POSTGRES_PASSWORD"])
    return env | {"VAR_DIR": str(var_dir)}


def test_check_deploy_is_clean_with_the_documented_production_environment(
    tmp_path: Path,
) -> None:
    env = production_environment(tmp_path)
    assert env["DEBUG"] == "false" and env["DATABASE_URL"].startswith("postgres://")
    keep = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=keep | env | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_every_documented_variable_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    for name in (
        "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER", "CONTENT_SECURITY_POLICY", "CACHE_URL",
    ):  # fmt: skip
        assert f"| `{name}` |" in readme, name


@pytest.mark.django_db
def test_https_redirect_hsts_and_the_proxy_header_follow_the_settings(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["gpu.example.org"]
    plain = Client().get("/login/", HTTP_HOST="gpu.example.org")
    assert plain.status_code == 301 and plain["Location"] == "https://gpu.example.org/login/"
    proxied = Client().get("/login/", HTTP_HOST="gpu.example.org", HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    scraped = Client().get("/metrics", HTTP_HOST="gpu.example.org")
    assert scraped.status_code == 200  # Prometheus scrapes the container over plain HTTP


@pytest.mark.django_db
def test_every_page_carries_the_content_security_policy(
    client: Client, platform_admin: User
) -> None:
    pages = {"/login/": Client().get("/login/")}
    client.force_login(platform_admin)
    for url in ("/", "/dashboards/cluster/", "/api/v1/docs/", "/admin/", "/submit/"):
        pages[url] = client.get(url)
    for url, response in pages.items():
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy, url
        tags = re.findall(r"<script[^>]*>", response.content.decode())
        inline = [t for t in tags if "src=" not in t and 'type="application/json"' not in t]
        assert inline == [], (url, inline)


@pytest.mark.django_db
def test_an_empty_policy_sends_no_header(client: Client, settings: Any) -> None:
    settings.CONTENT_SECURITY_POLICY = ""
    assert "Content-Security-Policy" not in client.get("/login/")


def test_no_template_holds_an_inline_script() -> None:
    """CSP allows scripts from the site's files only: data goes in json_script blocks."""
    offenders = []
    for path in (REPO / "templates").rglob("*.html"):
        for tag in re.findall(r"<script[^>]*>", path.read_text()):
            if "src=" not in tag:
                offenders.append(f"{path.relative_to(REPO)}: {tag}")
        if re.search(r"\son[a-z]+=\"", path.read_text()):
            offenders.append(f"{path.relative_to(REPO)}: an on...= handler attribute")
    assert offenders == []


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("", None),
        ("X-Forwarded-Proto", ("HTTP_X_FORWARDED_PROTO", "https")),
        ("X-Forwarded-Ssl: on", ("HTTP_X_FORWARDED_SSL", "on")),
    ],
)
def test_the_proxy_header_is_read_from_its_name(value: str, parsed: Any) -> None:
    assert env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER", {"SECURE_PROXY_SSL_HEADER": value}) == (
        parsed
    )


def test_a_malformed_proxy_header_names_the_variable() -> None:
    with pytest.raises(EnvError, match="SECURE_PROXY_SSL_HEADER='X Forwarded' is not a header"):
        env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER", {"SECURE_PROXY_SSL_HEADER": "X Forwarded"})
