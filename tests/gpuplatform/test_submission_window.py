"""The job-submission rate limit in Redis (gpuplatform/cache.py ``count_in_window``): one atomic
round trip, so the limit holds exactly when many servers count at the same moment, and the
answer to a refused submission says how long until the oldest submission leaves the window.

Needs a Redis at 127.0.0.1:6379 (CI has one): skipped without it, a failure in CI."""

from __future__ import annotations

import secrets
import threading
from types import SimpleNamespace

import pytest
from django.test import RequestFactory, override_settings

from gpuplatform.rest import JobSubmitThrottle, count_submission
from tests.gpuplatform.test_shared_cache import redis  # noqa: F401 (the fixture)

REDIS_CACHE = {
    "default": {"BACKEND": "gpuplatform.cache.RedisCache", "LOCATION": "redis://127.0.0.1:6379/14"}
}


def submission(user_id: int) -> object:
    request = RequestFactory().post("/api/v1/jobs/")
    request.user = SimpleNamespace(is_authenticated=True, pk=user_id)
    return request


def fresh_user_id() -> int:
    return 10**9 + secrets.randbelow(10**9)


@pytest.mark.usefixtures("redis")
@override_settings(CACHES=REDIS_CACHE, JOB_SUBMIT_RATE="50/minute")
def test_many_threads_submitting_at_once_get_exactly_the_limit() -> None:
    user = fresh_user_id()
    allowed: list[bool] = []
    start = threading.Barrier(8)

    def submit_20() -> None:
        start.wait()
        for _ in range(20):
            allowed.append(count_submission(submission(user)) is None)  # list.append is atomic

    threads = [threading.Thread(target=submit_20) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(allowed) == 160
    assert allowed.count(True) == 50  # not one more: no count lost between two servers


@pytest.mark.usefixtures("redis")
@override_settings(CACHES=REDIS_CACHE, JOB_SUBMIT_RATE="3/minute")
def test_a_refused_submission_waits_until_the_oldest_leaves_the_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = fresh_user_id()
    clock = [1_000_000.0]
    monkeypatch.setattr(JobSubmitThrottle, "timer", lambda self: clock[0])
    for step in (0.0, 10.0, 5.0):  # submissions at t, t + 10, t + 15
        clock[0] += step
        assert count_submission(submission(user)) is None
    clock[0] += 5.0  # t + 20: the window holds 3
    assert count_submission(submission(user)) == pytest.approx(40.0)
    clock[0] += 40.0  # t + 60: the first falls out (DRF's rule: at or before now - 60 s)
    assert count_submission(submission(user)) is None
    assert count_submission(submission(user)) == pytest.approx(10.0)  # until t + 10 leaves
    other = fresh_user_id()
    assert count_submission(submission(other)) is None  # each user counts alone
