"""The what-if replay (queues/services/whatif/compare.py) on a small known history: it
reproduces what the scheduler did, and lowering a queue's nominal measurably raises its wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from queues.models import Job, Queue
from queues.services.whatif.compare import compare
from queues.services.whatif.proposal import NodeChange, Proposal, QuotaChange
from tests.queues.services.whatif.conftest import HOUR, NOW

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(ran: Callable[..., Job], queue_a: Queue, queue_b: Queue) -> None:
    """20 h ago team B started an 8-GPU job for 10 h; a minute later team A submitted two 8-GPU
    jobs of 4 h each: the first started at once (A's nominal), the second when it ended."""
    ran(queue_b, submitted=20, started=20, finished=10)
    ran(queue_a, submitted=20 - 1 / 60, started=20 - 1 / 60, finished=16 - 1 / 60)
    ran(queue_a, submitted=20 - 1 / 60, started=16 - 1 / 60, finished=12 - 1 / 60)


def row(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in result["queues"] + result["cohorts"] if r["name"] == name)


def lower_a_to(nominal: int) -> Proposal:
    return Proposal(days=1, quotas=(QuotaChange("team-a/main", "h100", nominal),))


def test_todays_run_reproduces_the_history(history: None) -> None:
    result = compare(lower_a_to(8), NOW, lambda done: None)
    a = row(result, "team-a/main")["today"]
    assert a["jobs"] == 2
    assert a["mean_wait_s"] == 2 * HOUR  # 0 h and 4 h, as it happened
    assert a["p95_wait_s"] == 4 * HOUR
    assert a["gpu_hours"] == 64.0  # 2 jobs x 8 GPUs x 4 h
    assert a["borrowed_gpu_hours"] == 0.0
    b = row(result, "team-b/main")["today"]
    assert (b["mean_wait_s"], b["gpu_hours"]) == (0.0, 80.0)
    assert result["jobs"] == 3
    assert row(result, "team-a/main")["proposed"] == a  # the same quotas: the same replay


def test_lowering_a_nominal_raises_that_queues_wait(history: None) -> None:
    result = compare(lower_a_to(4), NOW, lambda done: None)
    a = row(result, "team-a/main")
    # The cohort's pool shrinks to 12: with B holding 8, A's 8-GPU jobs wait for B's to end
    # (10 h after it started), then run one after the other.
    assert a["proposed"]["mean_wait_s"] == pytest.approx((10 * HOUR - 60 + 14 * HOUR - 60) / 2)
    assert a["proposed"]["mean_wait_s"] > 5 * a["today"]["mean_wait_s"]
    assert a["proposed"]["borrowed_gpu_hours"] == 32.0  # 4 GPUs above the new nominal, 8 h
    assert row(result, "team-b/main")["proposed"]["mean_wait_s"] == 0.0
    cohort = row(result, "research")
    assert cohort["proposed"]["jobs"] == 3
    assert cohort["proposed"]["mean_wait_s"] > cohort["today"]["mean_wait_s"]


def test_a_job_still_running_runs_for_its_estimate(
    ran: Callable[..., Job], queue_a: Queue, queue_b: Queue
) -> None:
    # estimates are in the job's own seconds; the simulated cluster runs 60x faster
    ran(queue_b, submitted=6, started=6, estimated_runtime=5 * 3600 * 60)  # 5 h on the wall
    ran(queue_a, submitted=5, started=5, finished=4)
    ran(queue_a, submitted=4.5)  # pending, no estimate: the default 3600 s, 60 s on the wall
    result = compare(lower_a_to(8), NOW, lambda done: None)
    b = row(result, "team-b/main")["today"]
    assert b["gpu_hours"] == 40.0  # 8 GPUs x 5 h (6 h ago -> 1 h ago)
    a = row(result, "team-a/main")["today"]
    assert (a["jobs"], a["never_started"]) == (2, 0)
    assert a["mean_wait_s"] == 0.25 * HOUR  # the pending one starts when the first ends
    assert a["gpu_hours"] == round(8 + 8 * 60 / HOUR, 2)


def test_adding_nodes_lets_waiting_jobs_start(history: None) -> None:
    grow = Proposal(
        days=1,
        quotas=(QuotaChange("team-a/main", "h100", 16),),
        nodes=(NodeChange("sim", "h100", 1),),
    )
    result = compare(grow, NOW, lambda done: None)
    a = row(result, "team-a/main")
    assert a["proposed"]["mean_wait_s"] == 0.0 < a["today"]["mean_wait_s"]
    assert result["capacity"] == {"today": 16.0, "proposed": 24.0}


def test_progress_goes_from_zero_to_one(history: None) -> None:
    seen: list[float] = []
    compare(lower_a_to(4), NOW, seen.append)
    assert len(seen) > 2 and seen[-1] == 1.0
    assert seen == sorted(seen) and 0.0 <= seen[0] < 0.5


def test_the_charts_show_each_queue_per_hour(history: None) -> None:
    result = compare(lower_a_to(4), NOW, lambda done: None)
    today, proposed = result["charts"]
    assert (today["id"], proposed["id"]) == ("what-if-today", "what-if-proposed")
    traces = {t["name"]: t for t in today["figure"]["data"]}
    assert len(traces["team-a/main"]["x"]) == 24  # one day, hourly
    # 20 h ago .. 12 h ago team A held 8 GPUs (minus the first minute)
    assert max(traces["team-a/main"]["y"]) == 8.0
    assert traces["Capacity"]["y"][0] == 16.0
