"""Builders of the scenario loader tests: a file using every field, edits that break one value."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def valid_scenario() -> dict[str, Any]:
    return {
        "name": "full",
        "cycle_interval": 10,
        "until": 5000,
        "half_life": 3600,
        "flavors": [
            {"name": "h100", "resource": "nvidia.com/gpu", "price_per_hour": "4.00"},
            {"name": "a100", "resource": "nvidia.com/gpu", "price_per_hour": 2.5},
            {"name": "h100-1g.10gb", "resource": "nvidia.com/mig-1g.10gb", "gpu_equivalent": 0.5},
        ],
        "topology_levels": ["block", "rack"],
        "clusters": [
            {
                "name": "east",
                "nodes": [
                    {"name": "n1", "gpus": {"h100": 8}, "labels": {"block": "b1", "rack": 1}},
                    {"name_prefix": "mig-", "count": 2, "gpus": {"h100-1g.10gb": 14}},
                ],
            },
            {"name": "west", "nodes": [{"name": "w1", "gpus": {"a100": 8, "h100": 0}}]},
        ],
        "service_classes": [
            {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
            {
                "name": "spot",
                "priority": -5,
                "min_runtime": 60,
                "grace_period": 30,
                "max_runtime": 7200,
                "price_multiplier": "0.5",
            },
        ],
        "queues": [
            {
                "name": "a",
                "team": "team-a",
                "cohort": "research",
                "weight": 2,
                "quotas": {
                    "h100": {"nominal": 8, "borrowing_limit": None, "lending_limit": 2},
                    "a100": {"nominal": 0, "borrowing_limit": 4},
                },
            },
            {"name": "solo", "quotas": {"h100": {"nominal": 2, "borrowing_limit": 3}}},
        ],
        "jobs": [
            {
                "name": "z-first",
                "queue": "a",
                "class": "spot",
                "submit_at": 50,
                "workers": 2,
                "gpus_per_worker": 4,
                "flavors": ["h100", "a100"],
                "duration": None,
                "estimated_runtime": 4000,
                "min_workers": 1,
                "topology": {"preferred": "rack"},
                "checkpoint_interval": 600,
            },
            {
                "name": "a-second",
                "queue": "solo",
                "class": "prod",
                "submit_at": 0,
                "workers": 1,
                "gpus_per_worker": 1,
                "flavor": "h100",
                "duration": 10.5,
            },
        ],
        "events": [
            {"at": 900, "job": "z-first", "action": "cancel"},
            {"at": 500, "node": "mig-1", "action": "fail"},
        ],
    }


Edit = Callable[[dict[str, Any]], None]


def set_field(path: str, value: Any) -> Edit:
    """An edit that sets one value, addressed like ``jobs.0.workers``."""

    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return edit


def drop_field(path: str) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        del target[last]

    return edit


def append_to(key: str, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        data[key].append(value)

    return edit


J0 = "x.yaml: jobs[0] (z-first): "
J1 = "x.yaml: jobs[1] (a-second): "
N0 = "x.yaml: clusters[0] (east) > nodes[0] (n1): "
N1 = "x.yaml: clusters[0] (east) > nodes[1] (mig-): "
F0 = "x.yaml: flavors[0] (h100): "
F2 = "x.yaml: flavors[2] (h100-1g.10gb): "
QA = "x.yaml: queues[0] (a): "
C0 = "x.yaml: service_classes[0] (prod): "
C1 = "x.yaml: service_classes[1] (spot): "
