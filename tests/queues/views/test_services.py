"""estimate_submission and queue_status: the engine's answer on a copy of the live state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from queues.models import Cluster, Flavor, Job, JobEvent, Queue, Quota, ServiceClass
from queues.services.estimate import estimate_submission
from queues.services.queue_status import queue_status, queues_status
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def _estimate(queue: Queue, cls: ServiceClass, flavor: Flavor, user: Any, **kw: Any) -> Any:
    kw.setdefault("workers", 1)
    kw.setdefault("gpus_per_worker", 8)
    return estimate_submission(user, queue, cls, [flavor], now=kw.pop("now", later(60)), **kw)


def test_estimate_on_an_idle_cluster_says_start_now_within_quota(
    sim_cluster: Cluster, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, researcher_a: Any,
) -> None:  # fmt: skip
    estimate = _estimate(queue_a, service_class_std, flavor_h100, researcher_a)
    assert estimate.outcome == "start"
    assert estimate.flavor == "h100" and estimate.cluster == "sim"
    quota = estimate.quotas[0]
    assert (quota.nominal, quota.used, quota.need, quota.within_nominal) == (8, 0, 8, True)


def test_estimate_above_nominal_says_borrow(
    sim_cluster: Cluster, queue_a: Queue, queue_b: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, researcher_a: Any, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    submit(gpus=8)
    cycle(later(1))
    estimate = _estimate(queue_a, service_class_std, flavor_h100, researcher_a)
    assert estimate.outcome == "borrow"
    assert estimate.quotas[0].used == 8 and not estimate.quotas[0].within_nominal


def test_estimate_within_nominal_reclaims_from_the_borrowing_queue_and_names_the_victim(
    sim_cluster: Cluster, queue_a: Queue, queue_b: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, platform_admin: Any, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    """A platform admin sees every job: the victim is named (team B's researcher is told "a job
    of another team": tests/security/test_team_lines.py)."""
    first = submit(gpus=8, name="first")
    borrower = submit(gpus=8, name="borrower", at=later(1))
    cycle(later(2))
    cycle(later(3))  # the simulated cluster reports them running
    assert Job.objects.filter(state=Job.State.RUNNING).count() == 2
    estimate = _estimate(queue_b, service_class_std, flavor_h100, platform_admin, now=later(120))
    assert estimate.outcome == "preempt", estimate.message
    assert len(estimate.victims) == 1  # a minimal set: one 8-GPU job of the borrowing queue
    victim = estimate.victims[0]
    assert victim.job_id in (first.pk, borrower.pk)
    assert (victim.queue, victim.reason) == ("team-a/main", "reclaim")
    assert victim.name in estimate.summary


def test_estimate_shrinks_an_elastic_borrower_and_says_to_how_many_workers(
    sim_cluster: Cluster, queue_a: Queue, queue_b: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, platform_admin: Any, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    elastic = submit(gpus=1, workers=16, min_workers=8, name="elastic")  # borrows 8 of b's
    cycle(later(1))
    cycle(later(2))
    estimate = _estimate(queue_b, service_class_std, flavor_h100, platform_admin, now=later(120))
    assert estimate.outcome == "preempt"
    assert [(v.job_id, v.name, v.queue, v.reason, v.shrink_to) for v in estimate.victims] == [
        (elastic.pk, "elastic", "team-a/main", "reclaim", 8)
    ]
    assert estimate.as_dict()["victims"][0]["shrink_to"] == 8
    assert f"elastic (#{elastic.pk}, team-a/main)" in estimate.summary


def test_estimate_that_cannot_fit_waits_with_the_engines_reason(
    sim_cluster: Cluster, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, researcher_a: Any, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    Quota.objects.filter(queue=queue_a).update(nominal=4)
    queue_a.cohort = None
    queue_a.save()
    submit(gpus=4)
    cycle(later(1))
    estimate = _estimate(queue_a, service_class_std, flavor_h100, researcher_a, gpus_per_worker=2)
    assert estimate.outcome == "wait"
    assert estimate.reason == "quota-nominal"
    assert "uses 4 of 4 h100" in estimate.message
    assert "no cohort" in estimate.message


def test_estimate_writes_nothing(
    sim_cluster: Cluster, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, researcher_a: Any, submit: Callable[..., Job],
) -> None:  # fmt: skip
    submit(gpus=8)
    before = (Job.objects.count(), JobEvent.objects.count(), list(Job.objects.values("state")))
    _estimate(queue_a, service_class_std, flavor_h100, researcher_a)
    after = (Job.objects.count(), JobEvent.objects.count(), list(Job.objects.values("state")))
    assert before == after


def test_queue_status_shows_usage_borrowed_and_lent_per_flavor(
    sim_cluster: Cluster, queue_a: Queue, queue_b: Queue, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    submit(gpus=8, name="one")
    submit(gpus=4, name="two", at=later(1))
    cycle(later(2))
    status_a, status_b = queues_status([queue_a, queue_b], now=later(3))
    assert (status_a.flavors[0].used, status_a.flavors[0].borrowed) == (12, 4)
    assert (status_b.flavors[0].used, status_b.flavors[0].lent) == (0, 4)
    assert status_a.usage_gpu_equivalent == 12
    assert status_a.fair_share_score > status_b.fair_share_score


def test_queue_status_lists_pending_jobs_in_rank_order_with_why_text(
    sim_cluster: Cluster, queue_a: Queue, submit: Callable[..., Job], spot: ServiceClass,
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    submit(gpus=8, workers=2, name="big")
    cycle(later(1))
    low = submit(gpus=8, name="low", at=later(2), service_class=spot)
    high = submit(gpus=8, name="high", at=later(3))
    cycle(later(4))
    status = queue_status(queue_a, now=later(5))
    assert status.pending_count == 2
    assert [(p.position, p.job_id) for p in status.pending] == [(1, high.pk), (2, low.pk)]
    assert status.pending[0].message.startswith("#1 in queue team-a/main")


def test_estimate_refuses_a_queue_the_user_may_not_submit_to(
    queue_b: Queue, service_class_std: ServiceClass, flavor_h100: Flavor, researcher_a: Any
) -> None:
    with pytest.raises(ValidationError) as error:
        _estimate(queue_b, service_class_std, flavor_h100, researcher_a)
    assert "belongs to another team" in error.value.message_dict["queue"][0]


def test_estimate_that_waits_gives_wall_clock_times_and_names_jobs_not_engine_ids(
    sim_cluster: Cluster, queue_a: Queue, service_class_std: ServiceClass, flavor_h100: Flavor,
    researcher_a: Any, submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    """The decision is the engine's (tests/gpusched/engine/test_estimate.py); the service
    turns its seconds into UTC datetimes and its job ids into the jobs' names."""
    submit(gpus=8, name="first")  # asks for 3600 s: 60 wall-clock seconds at 60x
    cycle(later(1))
    cycle(later(2))  # the simulated cluster reports it running
    two_nodes = _estimate(queue_a, service_class_std, flavor_h100, researcher_a, workers=2)
    assert (two_nodes.outcome, two_nodes.reason) == ("wait", "cohort-pool")
    assert two_nodes.estimated_start == later(2 + 60)  # first's estimated end
    assert two_nodes.summary == "Would wait (estimated start 2026-03-02 09:01 UTC)."
    assert two_nodes.message.startswith("Would be #1 in queue team-a/main. Waiting for quota")
    assert two_nodes.message.endswith("Estimated start: 2026-03-02 09:01 UTC.")

    big = submit(gpus=8, workers=2, name="big", at=later(3))
    cycle(later(4))  # big holds the reservation for first's end
    held = _estimate(
        queue_a, service_class_std, flavor_h100, researcher_a,
        gpus_per_worker=4, estimated_runtime=7200,
    )  # fmt: skip
    assert (held.outcome, held.reason) == ("wait", "behind-reservation")
    # big starts at first's end and runs its 3600 s (60 wall-clock seconds): then this one
    assert held.estimated_start == later(2 + 60 + 60)
    assert held.message == (
        f"Would be #2 in queue team-a/main. Held back: starting now on the free h100 would "
        f"delay job big (#{big.pk}), which ranks higher and holds a reservation. "
        "Estimated start: 2026-03-02 09:02 UTC."
    )


def test_estimate_falls_back_to_the_next_flavor_when_the_first_is_full(
    sim_cluster: Cluster, queue_a: Queue, queue_b: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, researcher_a: Any, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    from queues.models import Node

    mig = Flavor.objects.create(
        name="h100-1g.10gb", resource="nvidia.com/mig-1g.10gb", gpu_equivalent=1 / 7
    )
    Quota.objects.create(queue=queue_a, flavor=mig, nominal=7)
    Node.objects.create(cluster=sim_cluster, name="mig", capacity={"h100-1g.10gb": 7})
    submit(gpus=8, workers=2, name="fills-h100", team="b")
    cycle(later(1))
    estimate = estimate_submission(
        researcher_a, queue_a, service_class_std, [flavor_h100, mig], 1, 4, now=later(2)
    )
    assert (estimate.outcome, estimate.flavor) == ("start", "h100-1g.10gb")
    assert [q.flavor for q in estimate.quotas] == ["h100", "h100-1g.10gb"]


@pytest.mark.parametrize(
    ("level", "outcome"),
    [
        # no node carries a zone label: the cycle places the job as if it asked for no topology
        ("topology.kubernetes.io/zone", "start"),
        # each rack holds one 8-GPU node: two 8-GPU workers cannot share one
        ("rack", "wait"),
    ],
)
def test_estimate_with_required_topology_says_what_the_next_cycle_does(
    sim_cluster: Cluster, queue_a: Queue, service_class_std: ServiceClass, flavor_h100: Flavor,
    researcher_a: Any, submit: Callable[..., Job], cycle: Callable[..., Any],
    level: str, outcome: str,
) -> None:  # fmt: skip
    Quota.objects.filter(queue=queue_a).update(nominal=16)
    estimate = _estimate(
        queue_a, service_class_std, flavor_h100, researcher_a,
        workers=2, topology=(level, "required"), now=later(1),
    )  # fmt: skip
    job = submit(gpus=8, workers=2, topology_level=level, topology_mode="required", at=later(1))
    cycle(later(2))
    job.refresh_from_db()
    assert estimate.outcome == outcome
    assert (job.state == Job.State.PENDING) == (outcome == "wait")


def test_queue_status_scores_with_the_engines_half_life(queue_a: Queue, settings: Any) -> None:
    """The score the queue pages show is the engine's (H/tau + U)/weight with the platform's
    FAIRSHARE_HALF_LIFE, not the library's default week (it differed when the setting did)."""
    from gpusched.engine import fairshare

    Queue.objects.filter(pk=queue_a.pk).update(decayed_usage=36_000.0)
    settings.FAIRSHARE_HALF_LIFE = 3600
    [status] = queues_status([queue_a])
    assert status.fair_share_score == pytest.approx(fairshare.score(36_000.0, 0.0, 1.0, 3600))
    assert status.fair_share_score != pytest.approx(
        fairshare.score(36_000.0, 0.0, 1.0, fairshare.DEFAULT_HALF_LIFE)
    )
