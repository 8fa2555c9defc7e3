"""Generate large, realistic scenarios (docs/SCENARIOS.md) for benchmarks and profiling.

    python benchmarks/generate.py --jobs 20000 --output big.yaml
    python benchmarks/generate.py --nodes 50 --queues 8 --cohorts 2 --jobs 500 --seed 3

The mix follows what shared GPU clusters look like in published traces (Philly, Helios, Alibaba
PAI): most jobs take one GPU, many take 2-8, a few are 16-64 GPU gangs; durations are log-normal
with a long tail; users' runtime estimates are noisy and often missing. A seed always gives the
same scenario.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

WHOLE_MODELS = (
    # name, share of whole-GPU nodes, price per GPU-hour
    ("h100", 0.5, "4.00"),
    ("a100", 0.3, "2.50"),
    ("l40s", 0.2, "1.20"),
)
MIG_SMALL = "h100-1g.10gb"  # 1 of 7 compute slices of an H100
MIG_LARGE = "h100-3g.40gb"  # 3 of 7

CLASSES: list[dict[str, Any]] = [
    {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
    {
        "name": "std",
        "priority": 100,
        "preemptible": True,
        "can_borrow": True,
        "min_runtime": 300,
        "grace_period": 30,
    },
    {
        "name": "spot",
        "priority": 10,
        "preemptible": True,
        "can_borrow": True,
        "min_runtime": 0,
        "grace_period": 0,
        "price_multiplier": "0.3",
    },
]
CLASS_MIX = (("prod", 0.15), ("std", 0.60), ("spot", 0.25))

# total GPUs of a whole-GPU job and how often it occurs
GANG_MIX = ((1, 0.55), (2, 0.10), (4, 0.10), (8, 0.12), (16, 0.08), (32, 0.03), (64, 0.02))

RACK_SIZE = 8  # nodes per rack
RACKS_PER_BLOCK = 4


@dataclass(frozen=True)
class _Node:
    name: str
    gpus: dict[str, int]
    labels: dict[str, str]


def generate(
    seed: int = 0,
    nodes: int = 1000,
    gpus_per_node: int = 8,
    mig_fraction: float = 0.1,
    queues: int = 100,
    cohorts: int = 10,
    jobs: int = 20000,
    clusters: int = 2,
    load: float = 1.2,
    median_duration: float = 1800.0,
    failures: int | None = None,
    cancel_fraction: float = 0.005,
    cycle_interval: float = 10.0,
) -> dict[str, Any]:
    """A scenario as plain data that ``parse_scenario`` accepts.

    ``load`` is offered GPU-work over capacity during the arrival window (above 1: queues form).
    ``failures`` is the number of node fail/recover pairs (default: 1 % of the nodes).
    """
    if nodes < 1 or gpus_per_node < 1 or queues < 1 or jobs < 0 or clusters < 1:
        raise ValueError("nodes, gpus_per_node, queues and clusters must be >= 1, jobs >= 0")
    if not 0.0 <= mig_fraction <= 1.0:
        raise ValueError("mig_fraction must be within [0, 1]")
    rng = random.Random(seed)
    cohorts = max(0, min(cohorts, queues))
    clusters = min(clusters, nodes)
    node_specs = _nodes(rng, nodes, gpus_per_node, mig_fraction)
    capacity = _capacity(node_specs)
    flavors = _flavors(capacity)
    queue_specs = _queues(rng, queues, cohorts, capacity)
    job_specs = _jobs(
        rng, jobs, gpus_per_node, capacity, queue_specs, load, median_duration, flavors
    )
    events = _events(rng, node_specs, job_specs, failures, cancel_fraction)
    per_cluster = math.ceil(len(node_specs) / clusters)
    return {
        "name": f"generated-s{seed}-n{nodes}-j{jobs}",
        "cycle_interval": cycle_interval,
        "flavors": flavors,
        "topology_levels": ["block", "rack"],
        "clusters": [
            {
                "name": f"cluster-{c}",
                "nodes": [
                    {"name": n.name, "gpus": n.gpus, "labels": n.labels}
                    for n in node_specs[c * per_cluster : (c + 1) * per_cluster]
                ],
            }
            for c in range(clusters)
            if node_specs[c * per_cluster : (c + 1) * per_cluster]
        ],
        "service_classes": [dict(c) for c in CLASSES],
        "queues": queue_specs,
        "jobs": job_specs,
        "events": events,
    }


def _pick(rng: random.Random, mix: Sequence[tuple[Any, float]]) -> Any:
    return rng.choices([value for value, _ in mix], weights=[w for _, w in mix])[0]


def _nodes(rng: random.Random, count: int, gpus_per_node: int, mig_fraction: float) -> list[_Node]:
    """Racks of one GPU model each (as real racks are), with MIG nodes spread at random."""
    mig_nodes = set(rng.sample(range(count), round(count * mig_fraction)))
    rack_models: dict[int, str] = {}
    result = []
    for index in range(count):
        rack = index // RACK_SIZE
        labels = {"block": f"b{rack // RACKS_PER_BLOCK}", "rack": f"r{rack}"}
        if index in mig_nodes:
            # MIG-partitioned H100: each GPU is 7 x 1g.10gb, or 2 x 3g.40gb + 1 x 1g.10gb
            if rng.random() < 0.5:
                gpus = {MIG_SMALL: 7 * gpus_per_node}
            else:
                gpus = {MIG_LARGE: 2 * gpus_per_node, MIG_SMALL: gpus_per_node}
        else:
            if rack not in rack_models:
                rack_models[rack] = _pick(rng, [(name, share) for name, share, _ in WHOLE_MODELS])
            gpus = {rack_models[rack]: gpus_per_node}
        result.append(_Node(f"node-{index:05d}", gpus, labels))
    return result


def _capacity(nodes: Sequence[_Node]) -> dict[str, int]:
    total: dict[str, int] = {}
    for node in nodes:
        for flavor, count in node.gpus.items():
            total[flavor] = total.get(flavor, 0) + count
    return total


def _flavors(capacity: dict[str, int]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = [
        {"name": name, "resource": "nvidia.com/gpu", "gpu_equivalent": 1.0, "price_per_hour": p}
        for name, _, p in WHOLE_MODELS
        if name in capacity
    ]
    for name, resource, slices in (
        (MIG_SMALL, "nvidia.com/mig-1g.10gb", 1),
        (MIG_LARGE, "nvidia.com/mig-3g.40gb", 3),
    ):
        if name in capacity:
            result.append(
                {"name": name, "resource": resource, "gpu_equivalent": round(slices / 7, 6)}
            )
    return result


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` integers with uneven (Dirichlet-like) shares."""
    weights = [rng.gammavariate(2.0, 1.0) for _ in range(parts)]
    scale = sum(weights)
    shares = [int(total * w / scale) for w in weights]
    for i in range(total - sum(shares)):
        shares[i % parts] += 1
    return shares


def _queues(
    rng: random.Random, count: int, cohorts: int, capacity: dict[str, int]
) -> list[dict[str, Any]]:
    nominal = {flavor: _split(rng, total, count) for flavor, total in capacity.items()}
    result = []
    for index in range(count):
        quotas: dict[str, dict[str, int | None]] = {}
        for flavor in capacity:
            share = nominal[flavor][index]
            quota: dict[str, int | None] = {"nominal": share}
            if cohorts and rng.random() < 0.2:
                quota["borrowing_limit"] = rng.randint(0, max(1, share))
            if cohorts and rng.random() < 0.2:
                quota["lending_limit"] = rng.randint(0, share)
            quotas[flavor] = quota
        queue: dict[str, Any] = {"name": f"q{index:03d}", "team": f"team-{index // 2:03d}"}
        if cohorts:
            queue["cohort"] = f"cohort-{index % cohorts}"
        if rng.random() < 0.2:
            queue["weight"] = 2
        queue["quotas"] = quotas
        result.append(queue)
    return result


def _duration(rng: random.Random, median: float) -> float:
    return float(min(7 * 24 * 3600, max(60, round(rng.lognormvariate(math.log(median), 1.5)))))


def _jobs(
    rng: random.Random,
    count: int,
    gpus_per_node: int,
    capacity: dict[str, int],
    queues: Sequence[dict[str, Any]],
    load: float,
    median_duration: float,
    flavors: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    whole = [f["name"] for f in flavors if f["resource"] == "nvidia.com/gpu"]
    mig = [f["name"] for f in flavors if f["resource"] != "nvidia.com/gpu"]
    equivalent = {f["name"]: float(f["gpu_equivalent"]) for f in flavors}
    mig_share = sum(capacity.get(m, 0) * equivalent[m] for m in mig) / max(
        1e-9, sum(capacity[f] * equivalent[f] for f in capacity)
    )
    queue_weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(queues))]  # Zipf-like
    drafts: list[dict[str, Any]] = []
    for index in range(count):
        job: dict[str, Any] = {"name": f"job-{index:06d}"}
        queue = rng.choices(queues, weights=queue_weights)[0]
        job["queue"] = queue["name"]
        job["class"] = _pick(rng, CLASS_MIX)
        if mig and (not whole or rng.random() < mig_share):
            flavor = rng.choices(mig, weights=[capacity[m] * equivalent[m] for m in mig])[0]
            job["workers"] = rng.choice((1, 1, 1, 2, 4))
            job["gpus_per_worker"] = 1
            job["flavor"] = flavor
        else:
            total = _pick(rng, GANG_MIX)
            per_worker = min(total, gpus_per_node)
            job["workers"] = max(1, total // per_worker)
            job["gpus_per_worker"] = per_worker
            first = rng.choices(whole, weights=[capacity[w] for w in whole])[0]
            if len(whole) > 1 and rng.random() < 0.1:
                job["flavors"] = [first, rng.choice([w for w in whole if w != first])]
            else:
                job["flavor"] = first
        duration = _duration(rng, median_duration)
        job["duration"] = duration
        if rng.random() < 0.85:  # users' estimates: noisy, mostly too long, sometimes missing
            job["estimated_runtime"] = float(round(duration * rng.lognormvariate(0.3, 0.5)) + 1)
        if job["workers"] > 1 and rng.random() < 0.1:
            job["min_workers"] = max(1, job["workers"] // 2)
        if job["workers"] > 1 and rng.random() < 0.1:
            kind = "required" if rng.random() < 0.5 else "preferred"
            job["topology"] = {kind: "rack" if job["workers"] <= RACK_SIZE // 2 else "block"}
        if job["class"] != "prod" and rng.random() < 0.2:
            job["checkpoint_interval"] = float(rng.choice((600, 1800, 3600)))
        drafts.append(job)
    work = sum(
        j["workers"] * j["gpus_per_worker"] * equivalent[_first_flavor(j)] * j["duration"]
        for j in drafts
    )
    gpu_capacity = sum(capacity[f] * equivalent[f] for f in capacity)
    window = work / max(1e-9, load * gpu_capacity)
    mean_gap = window / max(1, count)
    clock = 0.0
    result = []
    for job in drafts:  # Poisson arrivals over the window
        clock += rng.expovariate(1.0 / mean_gap) if mean_gap > 0 else 0.0
        ordered = {
            "name": job.pop("name"),
            "queue": job.pop("queue"),
            "class": job.pop("class"),
            "submit_at": round(clock, 1),
        }
        ordered.update(job)
        result.append(ordered)
    return result


def _first_flavor(job: dict[str, Any]) -> str:
    return str(job["flavor"]) if "flavor" in job else str(job["flavors"][0])


def _events(
    rng: random.Random,
    nodes: Sequence[_Node],
    jobs: Sequence[dict[str, Any]],
    failures: int | None,
    cancel_fraction: float,
) -> list[dict[str, Any]]:
    horizon = max((float(j["submit_at"]) for j in jobs), default=3600.0) or 3600.0
    count = max(1, len(nodes) // 100) if failures is None else failures
    events: list[dict[str, Any]] = []
    for node in rng.sample(list(nodes), min(count, len(nodes))):
        at = round(rng.uniform(0, horizon), 1)
        events.append({"at": at, "node": node.name, "action": "fail"})
        events.append({"at": round(at + rng.uniform(600, 7200), 1), "node": node.name,
                       "action": "recover"})  # fmt: skip
    for job in jobs:
        if rng.random() < cancel_fraction:
            at = round(float(job["submit_at"]) + rng.uniform(0, 3600), 1)
            events.append({"at": at, "job": job["name"], "action": "cancel"})
    events.sort(key=lambda e: (e["at"], e.get("node", ""), e.get("job", "")))
    return events


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--mig-fraction", type=float, default=0.1)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--clusters", type=int, default=2)
    parser.add_argument("--load", type=float, default=1.2)
    parser.add_argument("--failures", type=int, default=None)
    parser.add_argument("--output", type=Path, help="YAML file to write (default: stdout)")
    args = parser.parse_args(argv)
    try:
        scenario = generate(
            seed=args.seed,
            nodes=args.nodes,
            gpus_per_node=args.gpus_per_node,
            mig_fraction=args.mig_fraction,
            queues=args.queues,
            cohorts=args.cohorts,
            jobs=args.jobs,
            clusters=args.clusters,
            load=args.load,
            failures=args.failures,
        )
    except ValueError as exc:
        parser.error(str(exc))
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(scenario, Dumper=dumper, sort_keys=False, default_flow_style=None, width=200)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(
            f"wrote {args.output}: {len(scenario['jobs'])} jobs, "
            f"{sum(len(c['nodes']) for c in scenario['clusters'])} nodes",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
