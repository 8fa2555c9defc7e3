"""Scheduling policies selectable by name: the full engine and baselines to compare it with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

MAX_RESERVATIONS = 7  # a walk memo key holds the level in three bits (ranking.JobFacts)


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    fifo_order: bool = False  # rank by submission time only
    first_fit: bool = False  # first nodes that fit instead of best fit
    head_of_line: bool = False  # stop admitting at the first job that does not fit
    preemption: bool = True
    backfill: bool = True  # reservations for the best-ranked blocked jobs
    reservations: int = 1  # how many (reservations.py), at most MAX_RESERVATIONS
    elastic_growth: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.reservations <= MAX_RESERVATIONS:
            raise ValueError(f"reservations must be 1 to {MAX_RESERVATIONS}")


POLICIES: Mapping[str, Policy] = MappingProxyType(
    {
        "default": Policy("default"),
        "fifo": Policy(
            "fifo",
            fifo_order=True,
            first_fit=True,
            head_of_line=True,
            preemption=False,
            backfill=False,
            elastic_growth=False,
        ),
        "greedy": Policy("greedy", preemption=False, backfill=False),
    }
)


def get_policy(name: str) -> Policy:
    """The policy called ``name``; ValueError naming the known ones otherwise."""
    try:
        return POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(POLICIES))
        raise ValueError(f"unknown policy {name!r}; known policies: {known}") from None
