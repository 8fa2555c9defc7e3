"""The cohort tree (SCHEDULING.md section 2a): quota at every level, preemption and fair share
across departments, Fair Tree ranking."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusched.engine.cycle import run_cycle
from gpusched.engine.model import Cohort, CycleResult, Queue, Quota
from gpusched.engine.quota import QuotaState
from tests.gpusched.engine_builders import nodes, pending, queue, running, snapshot

# the worked check of section 2a: org -> physics (B 4, L 2) -> hep 8; org -> biology -> bio 6
ORG = (
    Cohort("org"),
    Cohort("physics", "org", {"h100": Quota(0, borrowing_limit=4, lending_limit=2)}),
    Cohort("biology", "org"),
)
QUEUES = [queue("hep", 8, cohort="physics"), queue("bio", 6, cohort="biology")]


def cycle(
    queues: list[Queue],
    cohorts: tuple[Cohort, ...],
    busy: dict[str, int] | None = None,
    asking: str | None = None,
    count: int = 30,
    **busy_args: object,
) -> CycleResult:
    """One cycle on 64 idle GPUs: ``busy`` 1-GPU jobs already running per queue, ``count``
    1-GPU jobs of queue ``asking`` waiting."""
    admitted = [
        running(f"{q}-busy-{i}", q, {f"n{i % 8}": 1}, started_at=i, **busy_args)  # type: ignore[arg-type]
        for q, n in (busy or {}).items()
        for i in range(n)
    ]
    jobs = (
        [pending(f"{asking}-{i:02d}", asking, submitted_at=i) for i in range(count)]
        if asking
        else []
    )
    snap = snapshot(nodes("n", 8, {"h100": 8}), queues, admitted, jobs)
    return run_cycle(replace(snap, cohorts=cohorts))


def test_worked_check_hep_borrows_from_org_up_to_its_departments_borrowing_limit() -> None:
    assert len(cycle(QUEUES, ORG, asking="hep").admits) == 12  # 8 own + physics' 4 from org


def test_worked_check_bio_gets_only_what_physics_lends() -> None:
    assert len(cycle(QUEUES, ORG, asking="bio").admits) == 8  # 6 own + physics' lent 2


def test_worked_check_physics_keeps_its_reserved_part_while_bio_borrows() -> None:
    # bio holds 8 (2 of them lent by physics): hep still has the 6 physics never lends
    result = cycle(QUEUES, ORG, busy={"bio": 8}, asking="hep", count=6)
    assert len(result.admits) == 6 and not result.stops
    # the 7th needs physics' lent 2 back: hep and physics are within their quota, biology is
    # above its capacity of 6, so it is reclaimed from bio
    seventh = cycle(QUEUES, ORG, busy={"bio": 8}, asking="hep", count=7)
    assert len(seventh.admits) == 7
    assert [(s.job[:3], s.reason) for s in seventh.stops] == [("bio", "reclaim")]


def test_a_cohort_without_a_borrowing_limit_takes_all_its_parent_has() -> None:
    cohorts = (Cohort("org"), Cohort("physics", "org"), Cohort("biology", "org"))
    assert len(cycle(QUEUES, cohorts, asking="hep").admits) == 14


def test_a_cohorts_own_nominal_is_shared_by_its_subtree() -> None:
    cohorts = (
        Cohort("org", quotas={"h100": Quota(4)}),
        Cohort("physics", "org", {"h100": Quota(2, lending_limit=0)}),
    )
    queues = [queue("hep", 1, cohort="physics"), queue("astro", 1, cohort="physics")]
    # hep: its 1, astro's 1, physics' own 2; physics lends org nothing, so org's 4 go to it too
    assert len(cycle(queues, cohorts, asking="hep").admits) == 8


def test_declared_flat_cohorts_mean_what_undeclared_ones_do() -> None:
    queues = [queue("a", 4, cohort="c"), queue("b", 6, cohort="c", lending_limit=2)]
    undeclared = cycle(queues, (), asking="a")
    declared = cycle(queues, (Cohort("c"),), asking="a")
    assert len(undeclared.admits) == len(declared.admits) == 6


@pytest.mark.parametrize(
    ("units", "never"),
    [(12, False), (13, True)],  # hep: 8 own + physics' borrowing limit 4
)
def test_never_fits_counts_every_level(units: int, never: bool) -> None:
    from gpusched.engine.quota import QuotaStatics

    state = QuotaState(QUEUES, static=QuotaStatics(QUEUES, ORG))
    assert state.never_fits("hep", "h100", units, True) is never
    assert state.never_fits("bio", "h100", 8, True) is False
    assert state.never_fits("bio", "h100", 9, True) is True


def test_a_department_under_its_guarantee_reclaims_from_a_department_over_it() -> None:
    # hep borrowed 12 (physics over its 8 by 4, from org); bio's jobs are within nominal and
    # biology within its capacity: the jobs physics borrowed from org are reclaimed
    result = cycle(QUEUES, ORG, busy={"hep": 12}, asking="bio", count=6)
    assert len(result.admits) == 6
    assert sorted(s.reason for s in result.stops) == ["reclaim"] * 4
    assert {s.job for s in result.stops} <= {f"hep-busy-{i}" for i in range(12)}


def test_no_reclaim_from_a_department_within_its_guarantee() -> None:
    # hep uses its own 8 only (a team over nominal elsewhere would not change that): physics
    # is within its capacity, so bio's jobs beyond what org still has wait
    queues = [queue("hep", 4, cohort="physics"), queue("astro", 4, cohort="physics")]
    queues.append(queue("bio", 6, cohort="biology"))
    result = cycle(queues, ORG, busy={"hep": 8}, asking="bio", count=8)
    # org: physics lends 2 (idle: hep's 8 uses all of physics' 8), biology 6 -> bio gets 6
    assert not result.stops
    assert len(result.admits) == 6


def test_inside_a_department_a_team_reclaims_from_its_borrowing_sibling() -> None:
    queues = [queue("hep", 4, cohort="physics"), queue("astro", 4, cohort="physics")]
    queues.append(queue("bio", 6, cohort="biology"))
    # hep borrowed astro's 4 inside physics; bio's 6 and physics' lent 2 fill org: astro's
    # two jobs take back its nominal from hep, not from biology (within its capacity)
    result = cycle(queues, ORG, busy={"hep": 8, "bio": 6}, asking="astro", count=2)
    assert len(result.admits) == 2
    assert [s.reason for s in result.stops] == ["reclaim", "reclaim"]
    assert all(s.job.startswith("hep-busy") for s in result.stops)
    # with org not full, physics borrows instead and nobody is stopped
    calm = cycle(queues, ORG, busy={"hep": 8}, asking="astro", count=2)
    assert len(calm.admits) == 2 and not calm.stops


def test_fair_share_between_departments_compares_the_departments() -> None:
    # bio borrowed 8 (biology 2 above its capacity 6); hep is borrowing inside physics (above
    # its own nominal 2), but physics stays within its capacity: physics' share 0 < biology's
    queues = [queue("hep", 2, cohort="physics"), queue("astro", 6, cohort="physics")]
    queues.append(queue("bio", 6, cohort="biology"))
    busy = {"bio": 8, "hep": 6}
    result = cycle(queues, ORG, busy=busy, asking="hep", count=1)
    assert [s.reason for s in result.stops] == ["fair-share"]
    assert result.stops[0].job.startswith("bio-busy")


def test_fair_tree_ranks_the_quieter_department_first() -> None:
    # biology's teams ran 10 units of history together, physics' only team 5: physics' job
    # ranks first although hep's own score (5) is above bio's (1). One GPU: the first wins.
    cohorts = (Cohort("org"), Cohort("physics", "org"), Cohort("biology", "org"))
    queues = [
        queue("hep", 1, cohort="physics", decayed_usage=5e6),
        queue("bio", 1, cohort="biology", decayed_usage=1e6),
        queue("bio2", 1, cohort="biology", decayed_usage=9e6),
    ]
    jobs = [pending("b", "bio", submitted_at=0), pending("h", "hep", submitted_at=1)]
    snap = snapshot(nodes("n", 1, {"h100": 1}), queues, [], jobs)
    assert [a.job for a in run_cycle(replace(snap, cohorts=cohorts)).admits] == ["h"]
    assert [a.job for a in run_cycle(snap).admits] == ["b"]  # flat: the teams compare
