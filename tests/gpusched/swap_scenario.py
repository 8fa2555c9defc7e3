"""The same-cycle swap's minimal scenario (BENCHMARKS.md, issue 21; docs/SCHEDULING.md
section 4, rule 8), shared by the engine's and the checker's tests.

Seven GPUs on one node; queues ``a`` (nominal 0), ``b`` (nominal 4) and ``c`` (nominal 3, idle)
in one cohort. ``a`` borrows 2 GPUs (share 2/7), ``b`` runs at its nominal and waits with a
4-GPU job, ``b-big``, since t = 50. At t = 100 ``a-new`` and ``b-new`` (1 GPU each) come.
Borrowers are walked by share after admitting: ``a-new`` (3/7) before ``b-big`` (4/7), which
takes the last free GPU; ``b-big`` cannot preempt (its share would be higher than ``a``'s);
``b-new`` (1/7) then may stop an ``a`` job by fair share, although taking ``a-new`` back would
give it the same GPU and stop nothing.
"""

from __future__ import annotations

from typing import Any

from gpusched.sim.scenario import Scenario, parse_scenario


def _job(name: str, queue: str, submit_at: float, gpus: int, duration: float) -> dict[str, Any]:
    return {"name": name, "queue": queue, "class": "std", "submit_at": submit_at, "workers": 1,
            "gpus_per_worker": gpus, "flavor": "gpu", "duration": duration}  # fmt: skip


def swap_scenario() -> Scenario:
    b_new = _job("b-new", "b", 100, 1, 600)
    b_new["estimated_runtime"] = 600  # ends before b-big's reservation: not held off it
    return parse_scenario({
        "name": "fair-share-swap",
        "cycle_interval": 60,
        "flavors": [{"name": "gpu", "resource": "nvidia.com/gpu", "gpu_equivalent": 1.0}],
        "clusters": [{"name": "c", "nodes": [{"name": "n1", "gpus": {"gpu": 7}}]}],
        "service_classes": [
            {"name": "std", "priority": 100, "preemptible": True, "can_borrow": True}
        ],
        "queues": [
            {"name": "a", "cohort": "co", "quotas": {"gpu": {"nominal": 0}}},
            {"name": "b", "cohort": "co", "quotas": {"gpu": {"nominal": 4}}},
            {"name": "c", "cohort": "co", "quotas": {"gpu": {"nominal": 3}}},
        ],
        "jobs": [
            _job("a-old-1", "a", 0, 1, 10_000),
            _job("a-old-2", "a", 0, 1, 10_000),
            _job("b-old", "b", 0, 4, 10_000),
            _job("b-big", "b", 50, 4, 1000),
            _job("a-new", "a", 100, 1, 1000),
            b_new,
        ],
    })  # fmt: skip
