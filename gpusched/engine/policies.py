"""Scheduling policies selectable by name: the full engine and baselines to compare it with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    fifo_order: bool = False  # rank by submission time only
    first_fit: bool = False  # first nodes that fit instead of best fit
    head_of_line: bool = False  # stop admitting at the first job that does not fit
    preemption: bool = True
    backfill: bool = True  # EASY reservation for the best-ranked blocked job
    elastic_growth: bool = True


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
