"""The ranking of pending jobs (SCHEDULING.md section 4), seen through ``run_cycle``.

Within-nominal jobs before borrowing jobs; then higher class priority; then the queue with the
lower fair-share score (section 5); then earlier submission; then name.

Every contest below is run on a cluster with room for exactly one of the jobs (one 8-GPU node,
every contestant asking for 8 GPUs), so the job the cycle admits is the one that ranked first.
In each row every key *after* the one under test favours the loser, so the row fails if its key
were dropped (the later keys would pick the loser) or reversed (the key itself would).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpusched.engine import fairshare
from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import AdmittedJob, PendingJob, Queue
from tests.gpusched.engine_builders import nodes, pending, queue, running, snapshot

WEEK = 7 * 24 * 3600.0
TAU = fairshare.tau(WEEK)  # the snapshot builder's default half-life is a week


@dataclass(frozen=True)
class Contest:
    queues: tuple[Queue, ...]
    jobs: tuple[PendingJob, ...]
    winner: str
    extra_gpus: int = 0  # GPUs of a second node, held by ``admitted``
    admitted: tuple[AdmittedJob, ...] = ()


CONTESTS = {
    # A borrows nothing (nominal 8); B has no nominal and would borrow A's 8 from the cohort.
    # B's job has a higher class, a lower-scored queue, the earlier submission and the earlier
    # name: only "within nominal first" lets A's job win.
    "within-nominal-before-borrowing-even-against-higher-priority": Contest(
        queues=(
            queue("a", 8, cohort="c", decayed_usage=3 * TAU),
            queue("b", 0, cohort="c"),
        ),
        jobs=(
            pending("b-high", "b", gpus=8, cls="high", submitted_at=0),
            pending("z-low", "a", gpus=8, cls="low", submitted_at=50),
        ),
        winner="z-low",
    ),
    # both within nominal (separate queues, no cohort): the higher class wins although its
    # queue has the higher score and the job came later with the later name
    "higher-class-priority-across-queues": Contest(
        queues=(queue("a", 8, decayed_usage=5 * TAU), queue("b", 8)),
        jobs=(
            pending("a-std", "b", gpus=8, cls="std", submitted_at=0),
            pending("z-high", "a", gpus=8, cls="high", submitted_at=50),
        ),
        winner="z-high",
    ),
    "higher-class-priority-in-one-queue": Contest(
        queues=(queue("q", 16),),
        jobs=(
            pending("a-low", "q", gpus=8, cls="low", submitted_at=0),
            pending("z-std", "q", gpus=8, cls="std", submitted_at=50),
        ),
        winner="z-std",
    ),
    # same class; decayed usage alone separates the queues: score 2 against 0
    "lower-decayed-usage-first": Contest(
        queues=(queue("used", 8, decayed_usage=2 * TAU), queue("fresh", 8)),
        jobs=(
            pending("a-used", "used", gpus=8, submitted_at=0),
            pending("z-fresh", "fresh", gpus=8, submitted_at=50),
        ),
        winner="z-fresh",
    ),
    # equal decayed usage, weight 2 halves the score: 2 / 2 = 1 against 2 / 1 = 2
    "equal-decayed-usage-weight-2-first": Contest(
        queues=(
            queue("light", 8, decayed_usage=2 * TAU),
            queue("heavy", 8, decayed_usage=2 * TAU, weight=2.0),
        ),
        jobs=(
            pending("a-light", "light", gpus=8, submitted_at=0),
            pending("z-heavy", "heavy", gpus=8, submitted_at=50),
        ),
        winner="z-heavy",
    ),
    # decayed usage counts as H / tau GPUs, added to the current usage U, all over the weight:
    # "busy" = (1 + 2 running GPUs) / 2 = 1.5 against "hist" = 2 / 1 = 2. Ignoring the weight
    # (3 > 2) or multiplying by it (6 > 2) would rank "hist" first.
    "score-is-decayed-plus-current-usage-over-weight": Contest(
        queues=(
            queue("busy", 10, decayed_usage=1 * TAU, weight=2.0),
            queue("hist", 8, decayed_usage=2 * TAU),
        ),
        jobs=(
            pending("a-hist", "hist", gpus=8, submitted_at=0),
            pending("z-busy", "busy", gpus=8, submitted_at=50),
        ),
        winner="z-busy",
        extra_gpus=2,
        admitted=(running("busy-run", "busy", {"x0": 2}, gpus=2),),
    ),
    # current usage counts: "now" runs 1 GPU (score 1.0), "past" has 0.9 GPU of history (0.9).
    # Ignoring U, or taking H in raw GPU-seconds instead of H / tau, would rank "now" first.
    "current-usage-weighs-against-decayed-usage": Contest(
        queues=(queue("now", 9), queue("past", 8, decayed_usage=0.9 * TAU)),
        jobs=(
            pending("a-now", "now", gpus=8, submitted_at=0),
            pending("z-past", "past", gpus=8, submitted_at=50),
        ),
        winner="z-past",
        extra_gpus=1,
        admitted=(running("now-run", "now", {"x0": 1}),),
    ),
    # same queue, same class: the earlier submission wins over the earlier name
    "earlier-submission-in-one-queue": Contest(
        queues=(queue("q", 16),),
        jobs=(
            pending("a-late", "q", gpus=8, submitted_at=20),
            pending("z-early", "q", gpus=8, submitted_at=10),
        ),
        winner="z-early",
    ),
    # two queues with equal scores: submission decides across queues too
    "earlier-submission-across-queues-with-equal-scores": Contest(
        queues=(queue("a", 8), queue("b", 8)),
        jobs=(
            pending("a-late", "a", gpus=8, submitted_at=20),
            pending("z-early", "b", gpus=8, submitted_at=10),
        ),
        winner="z-early",
    ),
    # everything equal: the name decides, whatever order the snapshot lists the jobs in
    "name-breaks-the-last-tie": Contest(
        queues=(queue("q", 16),),
        jobs=(
            pending("beta", "q", gpus=8, submitted_at=10),
            pending("alpha", "q", gpus=8, submitted_at=10),
        ),
        winner="alpha",
    ),
}


@pytest.mark.parametrize("explain", [False, True], ids=["quiet", "explained"])
@pytest.mark.parametrize("contest", list(CONTESTS.values()), ids=list(CONTESTS))
def test_the_job_ranked_first_takes_the_only_free_slot(contest: Contest, explain: bool) -> None:
    node_list = nodes("n", 1, {"h100": 8})
    if contest.extra_gpus:
        node_list += nodes("x", 1, {"h100": contest.extra_gpus})  # full: held by `admitted`
    snap = snapshot(node_list, contest.queues, contest.admitted, contest.jobs)
    result = run_cycle(snap, explain_pending=explain)
    assert [a.job for a in result.admits] == [contest.winner]
    assert result.admits[0].placement == {"n0": 8}
    assert not result.stops and not result.scales
    if explain:
        losers = {j.name for j in contest.jobs} - {contest.winner}
        assert set(result.pending) == losers


@pytest.mark.parametrize("contest", list(CONTESTS.values()), ids=list(CONTESTS))
def test_the_ranking_does_not_depend_on_the_order_of_the_snapshot(contest: Contest) -> None:
    node_list = nodes("n", 1, {"h100": 8})
    if contest.extra_gpus:
        node_list += nodes("x", 1, {"h100": contest.extra_gpus})
    flipped = tuple(reversed(contest.jobs))
    result = run_cycle(snapshot(node_list, contest.queues[::-1], contest.admitted, flipped))
    assert [a.job for a in result.admits] == [contest.winner]


def test_pending_positions_follow_the_rank_within_each_queue() -> None:
    """Queues q and r share a cohort and one 8-GPU node. r's first job (earliest submission,
    equal scores) takes the node; every other job stays pending, numbered in rank order within
    its own queue."""
    queues = (queue("q", 8, cohort="c"), queue("r", 8, cohort="c"))
    jobs = (
        # 16 GPUs > q's nominal 8: borrowing, so last in q despite the highest class and the
        # earliest submission of the queue
        pending("q-high-borrowing", "q", gpus=8, workers=2, cls="high", submitted_at=1),
        pending("q-low", "q", gpus=8, cls="low", submitted_at=2),
        pending("q-std-late", "q", gpus=8, submitted_at=30),
        pending("q-std-early", "q", gpus=8, submitted_at=20),
        pending("r-first", "r", gpus=8, submitted_at=0),
        pending("r-b", "r", gpus=8, submitted_at=40),
        pending("r-a", "r", gpus=8, submitted_at=40),
    )
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), queues, (), jobs))
    assert [a.job for a in result.admits] == ["r-first"]
    positions = {name: info.position for name, info in result.pending.items()}
    assert positions == {
        "q-std-early": 1,
        "q-std-late": 2,
        "q-low": 3,
        "q-high-borrowing": 4,
        "r-a": 1,  # same submission as r-b: the name decides
        "r-b": 2,
    }
    assert {info.queue for info in result.pending.values()} == {"q", "r"}


def test_positions_follow_fair_share_and_submission_inside_a_class() -> None:
    """Inside one queue, a later low-class job goes behind every std job however early it came;
    the std jobs keep their submission order."""
    jobs = (
        pending("low-first", "q", gpus=8, cls="low", submitted_at=0),
        pending("std-3", "q", gpus=8, submitted_at=30),
        pending("std-1", "q", gpus=8, submitted_at=10),
        pending("std-2", "q", gpus=8, submitted_at=20),
        pending("high", "q", gpus=8, cls="high", submitted_at=40),
    )
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), (queue("q", 40),), (), jobs))
    assert [a.job for a in result.admits] == ["high"]
    ranked = sorted(result.pending, key=lambda name: result.pending[name].position)
    assert ranked == ["std-1", "std-2", "std-3", "low-first"]
    assert sorted(info.position for info in result.pending.values()) == [1, 2, 3, 4]


def test_each_pending_job_carries_its_rank_in_its_queue_and_whether_it_was_within_nominal() -> None:
    """The queue pages show these as they are: the engine is the only place that ranks."""
    snap = snapshot(
        nodes("n", 1, {"h100": 8}),
        [queue("a", 8, cohort="c"), queue("b", 8, cohort="c")],
        admitted=[running("held", "b", {"n0": 8}, gpus=8)],  # the node is full
        pending_jobs=[
            pending("big", "a", gpus=8, workers=2, submitted_at=0),  # 16: borrows from b
            pending("small", "a", gpus=1, submitted_at=10),
            pending("other", "b", gpus=1, submitted_at=5),  # b uses its 8: would borrow
        ],
    )
    infos = run_cycle(snap).pending
    ranked = {
        name: (info.queue, info.position, info.within_nominal) for name, info in infos.items()
    }
    assert ranked == {
        "small": ("a", 1, True),
        "big": ("a", 2, False),
        "other": ("b", 1, False),
    }


def test_fifo_does_not_rank_by_nominal_and_says_so() -> None:
    snap = snapshot(
        nodes("n", 1, {"h100": 8}),
        [queue("a", 8, cohort="c"), queue("b", 8, cohort="c")],
        admitted=[running("held", "b", {"n0": 8}, gpus=8)],
        pending_jobs=[
            pending("big", "a", gpus=8, workers=2, submitted_at=0),
            pending("small", "a", gpus=1, submitted_at=10),
        ],
    )
    infos = run_cycle(snap, "fifo").pending
    assert [(infos[n].position, infos[n].within_nominal) for n in ("big", "small")] == [
        (1, None),
        (2, None),
    ]
