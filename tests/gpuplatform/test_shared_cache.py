"""Shared state (issue 20): Django's cache is the Redis of CACHE_URL, or REDIS_URL's next
database, so the submission rate limit holds across server processes: two separate processes
against one Redis share one count (and, as a control, do not with the in-process cache).

Needs a Redis at 127.0.0.1:6379 (CI has one): skipped without it, a failure in CI."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplatform.env import EnvError, env_cache_url

REPO = Path(__file__).resolve().parents[2]
REDIS = ("127.0.0.1", 6379)

# One process: ``count_submission`` (the API throttle's counter, also used by the submit form)
# for one user, N times; prints one word per try.
SUBMIT = """
import sys
import django
django.setup()
from types import SimpleNamespace
from django.test import RequestFactory
from gpuplatform.rest import count_submission

user_id, tries = int(sys.argv[1]), int(sys.argv[2])
for _ in range(tries):
    request = RequestFactory().post("/api/v1/jobs/")
    request.user = SimpleNamespace(is_authenticated=True, pk=user_id)
    print("allowed" if count_submission(request) is None else "refused")
"""


def redis_reachable() -> bool:
    try:
        with socket.create_connection(REDIS, timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def redis() -> None:
    if not redis_reachable():
        message = f"no Redis at {REDIS[0]}:{REDIS[1]}: the two-process rate limit is not tested"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def submit_in_new_process(user_id: int, tries: int, tmp_path: Path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "CACHE_URL"}}
    clean |= {
        "DJANGO_SETTINGS_MODULE": "gpuplatform.settings",
        "PYTHONPATH": str(REPO),
        "VAR_DIR": str(tmp_path),
        "JOB_SUBMIT_RATE": "3/minute",
    }
    result = subprocess.run(
        [sys.executable, "-c", SUBMIT, str(user_id), str(tries)],
        cwd=REPO,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def fresh_user_id() -> int:
    """A user id no other run counts for (the Redis may be shared with other test runs)."""
    return 10**9 + secrets.randbelow(10**9)


@pytest.mark.parametrize(
    "env",
    [
        {"CACHE_URL": "redis://127.0.0.1:6379/14"},
        {"REDIS_URL": "redis://127.0.0.1:6379/13"},  # the cache: database 14 of that Redis
    ],
    ids=["CACHE_URL", "REDIS_URL"],
)
def test_the_submission_rate_holds_across_two_processes(
    redis: None, tmp_path: Path, env: dict[str, str]
) -> None:
    user = fresh_user_id()
    first = submit_in_new_process(user, 2, tmp_path, **env)
    second = submit_in_new_process(user, 2, tmp_path, **env)
    assert first == ["allowed", "allowed"]
    assert second == ["allowed", "refused"]  # 3 per minute, counted across both processes
    assert submit_in_new_process(user, 1, tmp_path, **env) == ["refused"]


def test_without_a_shared_cache_each_process_counts_alone(tmp_path: Path) -> None:
    """The control: the in-process cache lets every process allow its own 3 per minute."""
    user = fresh_user_id()
    assert submit_in_new_process(user, 2, tmp_path) == ["allowed", "allowed"]
    assert submit_in_new_process(user, 2, tmp_path) == ["allowed", "allowed"]
    memory = {"REDIS_URL": "redis://127.0.0.1:6379/13", "CACHE_URL": "memory://"}
    assert submit_in_new_process(user, 2, tmp_path, **memory) == ["allowed", "allowed"]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, ""),
        ({"REDIS_URL": "redis://redis:6379/0"}, "redis://redis:6379/1"),
        ({"REDIS_URL": "redis://:pw@redis:6379"}, "redis://:pw@redis:6379/1"),
        ({"REDIS_URL": "rediss://r.example.org:6380/4"}, "rediss://r.example.org:6380/5"),
        ({"REDIS_URL": "redis://r/0", "CACHE_URL": "redis://c:6379/3"}, "redis://c:6379/3"),
        ({"REDIS_URL": "redis://r/0", "CACHE_URL": "memory://"}, ""),
        ({"REDIS_URL": "filesystem://localhost/"}, ""),
    ],
)
def test_the_cache_url_comes_from_cache_url_or_the_broker(environ, expected) -> None:
    assert env_cache_url(environ) == expected


def test_a_cache_url_that_is_no_redis_or_no_next_database_stops_start_up() -> None:
    with pytest.raises(EnvError, match=r"CACHE_URL='memcached://m:11211' is not a Redis URL"):
        env_cache_url({"CACHE_URL": "memcached://m:11211"})
    with pytest.raises(EnvError, match=r"uses Redis database 15.*set CACHE_URL"):
        env_cache_url({"REDIS_URL": "redis://r:6379/15"})
