"""What-if for a cohort's own quota (issue 22): the proposal sets a department's quota in the
tree (docs/SCHEDULING.md section 2a), and a department's row adds up its queues."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from queues.models import Cohort, CohortQuota, Flavor, Job, Queue, Quota
from queues.services.whatif.compare import compare
from queues.services.whatif.proposal import CohortQuotaChange, Proposal
from tests.queues.services.whatif.conftest import HOUR, NOW

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree_history(
    ran: Callable[..., Job], cohort: Cohort, queue_a: Queue, queue_b: Queue, flavor_h100: Flavor
) -> None:
    """``org`` over two departments: ``research`` (8 H100 of its own; team-a/main, nominal 0,
    runs on them) and ``biology`` (team-b/main, nominal 8). 20 h ago B started an 8-GPU job
    for 10 h; a minute later A submitted two 8-GPU jobs of 4 h: one after the other on
    research's 8."""
    org = Cohort.objects.create(name="org")
    Cohort.objects.filter(pk=cohort.pk).update(parent=org)
    CohortQuota.objects.create(cohort=cohort, flavor=flavor_h100, nominal=8)
    queue_b.cohort = Cohort.objects.create(name="biology", parent=org)
    queue_b.save()
    Quota.objects.filter(queue=queue_a).update(nominal=0)
    ran(queue_b, submitted=20, started=20, finished=10)
    ran(queue_a, submitted=20 - 1 / 60, started=20 - 1 / 60, finished=16 - 1 / 60)
    ran(queue_a, submitted=20 - 1 / 60, started=16 - 1 / 60, finished=12 - 1 / 60)


def row(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in result["queues"] + result["cohorts"] if r["name"] == name)


def research_to(nominal: int) -> Proposal:
    return Proposal(days=1, cohort_quotas=(CohortQuotaChange("research", "h100", nominal),))


def test_todays_run_keeps_the_departments_quota(tree_history: None) -> None:
    result = compare(research_to(8), NOW, lambda done: None)
    a = row(result, "team-a/main")
    assert a["today"]["mean_wait_s"] == 2 * HOUR  # 0 h and 4 h, as it happened
    assert a["proposed"] == a["today"]
    assert a["today"]["borrowed_gpu_hours"] == 64.0  # all above its own nominal 0
    assert row(result, "research")["today"]["jobs"] == 2
    assert row(result, "biology")["today"]["jobs"] == 1
    assert row(result, "org")["today"]["jobs"] == 3  # a parent's row adds up its subtree
    assert row(result, "org")["today"]["gpu_hours"] == 144.0


def test_lowering_a_departments_nominal_makes_its_queues_wait(tree_history: None) -> None:
    result = compare(research_to(0), NOW, lambda done: None)
    a = row(result, "team-a/main")
    # research owns nothing then: A borrows from org what biology lends (8), so it waits for
    # B's job to end (10 h after it started), then runs one job after the other.
    assert a["proposed"]["mean_wait_s"] == pytest.approx((10 * HOUR - 60 + 14 * HOUR - 60) / 2)
    assert row(result, "team-b/main")["proposed"]["mean_wait_s"] == 0.0
    research = row(result, "research")
    # a department borrows what its subtree uses beyond its capacity: today nothing (its own 8),
    # then all of A's 8 GPUs for 8 h, from org (which, a root, borrows nothing)
    borrowed = [research[run]["borrowed_gpu_hours"] for run in ("today", "proposed")]
    assert borrowed == [0.0, 64.0]
    assert row(result, "org")["proposed"]["borrowed_gpu_hours"] == 0.0
    assert result["proposal"]["cohort_quotas"] == [
        {"cohort": "research", "flavor": "h100", "nominal": 0, "borrowing_limit": None,
         "lending_limit": None}
    ]  # fmt: skip


def test_a_departments_borrowing_limit_is_kept(tree_history: None) -> None:
    change = CohortQuotaChange("research", "h100", 0, borrowing_limit=0)
    result = compare(Proposal(days=1, cohort_quotas=(change,)), NOW, lambda done: None)
    a = row(result, "team-a/main")["proposed"]
    assert (a["jobs"], a["never_started"], a["gpu_hours"]) == (2, 2, 0.0)
