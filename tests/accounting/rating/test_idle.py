"""Idle-cost sharing (accounting/rating/idle.py): idle capacity priced, shared by allocated cost."""

from __future__ import annotations

import pytest

from accounting.rating import (
    UNSHARED_IDLE_TEAM,
    ClusterCapacity,
    RatingError,
    idle_costs,
    rate,
    share_idle_cost,
)
from tests.accounting.rating.builders import (
    DAY,
    H100_AT_3,
    SEVENTH,
    T0,
    D,
    at,
    price,
    price_list,
    usage,
)


def test_idle_capacity_is_priced_and_shared_in_proportion_to_allocated_cost() -> None:
    charges = rate(
        [
            usage("j1", team="vision", units=2, end=at(days=1)),
            usage("j2", team="nlp", units=1, end=at(days=1)),
        ],
        H100_AT_3,
    )
    capacity = [ClusterCapacity("c1", "h100", D(8), at(days=-10))]

    [idle] = idle_costs(charges, capacity, H100_AT_3, *DAY)
    shares = share_idle_cost(charges, capacity, H100_AT_3, *DAY)

    assert idle.capacity_gpu_equivalent_hours == D(8 * 24)
    assert idle.allocated_gpu_equivalent_hours == D(3 * 24)
    assert idle.idle_gpu_equivalent_hours == D(5 * 24)
    assert idle.cost == D("360.00")  # 5 idle GPUs x 24 h x 3.00
    assert [(s.team, s.allocated_cost, s.cost) for s in shares] == [
        ("nlp", D("72.00"), D("120.00")),
        ("vision", D("144.00"), D("240.00")),
    ]


def test_idle_shares_sum_exactly_to_the_idle_cost_by_largest_remainder() -> None:
    # Three teams with equal cost share an idle cost of 1.00: 0.34 + 0.33 + 0.33.
    prices = price_list(price("h100", "1.00"))
    charges = rate(
        [usage(f"j{i}", team=team, end=at(0.25)) for i, team in enumerate(["a", "b", "c"])], prices
    )
    capacity = [ClusterCapacity("c1", "h100", D(7), at(days=-1))]
    window = (T0, at(0.25))  # 7 - 3 = 4 idle GPUs x 0.25 h x 1.00 = 1.00

    shares = share_idle_cost(charges, capacity, prices, *window)

    assert [(s.team, s.cost) for s in shares] == [
        ("a", D("0.34")),
        ("b", D("0.33")),
        ("c", D("0.33")),
    ]
    assert sum(s.cost for s in shares) == D("1.00")


def test_idle_follows_capacity_changes_and_counts_mig_slices_towards_their_gpu() -> None:
    prices = price_list(price("h100", "7.00"), mig_parents={"h100-1g.10gb": "h100"})
    charges = rate(
        [usage("j1", flavor="h100-1g.10gb", units=7, gpu_equivalent=SEVENTH, end=at(2))], prices
    )
    capacity = [
        ClusterCapacity("c1", "h100", D(2), at(days=-1)),
        ClusterCapacity("c1", "h100", D(4), at(1)),
    ]

    [idle] = idle_costs(charges, capacity, prices, T0, at(2))

    # hour 1: 2 - 1 = 1 idle GPU; hour 2: 4 - 1 = 3 idle GPUs
    assert idle.idle_gpu_equivalent_hours == D(4)
    assert idle.cost == D("28.00")


def test_idle_of_a_cluster_nobody_used_stays_unshared() -> None:
    capacity = [ClusterCapacity("c1", "h100", D(2), at(days=-1))]

    [share] = share_idle_cost([], capacity, H100_AT_3, T0, at(1))

    assert (share.team, share.cost) == (UNSHARED_IDLE_TEAM, D("6.00"))


def test_over_allocated_capacity_leaves_no_idle() -> None:
    charges = rate([usage(units=4)], H100_AT_3)
    capacity = [ClusterCapacity("c1", "h100", D(2), at(days=-1))]

    [idle] = idle_costs(charges, capacity, H100_AT_3, T0, at(1))

    assert (idle.idle_gpu_equivalent_hours, idle.cost) == (D(0), D("0.00"))


def test_idle_sharing_refuses_a_charge_straddling_the_window() -> None:
    charges = rate([usage(end=at(3))], H100_AT_3)
    capacity = [ClusterCapacity("c1", "h100", D(2), at(days=-1))]

    with pytest.raises(RatingError, match=r"straddles the idle window.*clip_to_period"):
        share_idle_cost(charges, capacity, H100_AT_3, T0, at(1))


def test_capacity_given_in_a_mig_flavor_is_refused() -> None:
    prices = price_list(price("h100", "7.00"), mig_parents={"h100-1g.10gb": "h100"})
    capacity = [ClusterCapacity("c1", "h100-1g.10gb", D(7), at(days=-1))]

    with pytest.raises(RatingError, match="give it in its whole-GPU flavor 'h100'"):
        idle_costs([], capacity, prices, T0, at(1))
