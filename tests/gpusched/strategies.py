"""Hypothesis strategies for small random scenarios, as the plain data ``parse_scenario`` reads.

Small on purpose (1-2 clusters, 1-8 nodes, 1-4 queues, 1-30 jobs) so that a shrunk failure is
a scenario a person can read, yet rich enough to reach every rule: whole and MIG flavors, cohorts
with borrowing and lending limits, non-preemptible and protected classes, gangs, elastic and
topology jobs, node failures and cancellations.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

WHOLE = "gpu"
OTHER = "gpu-b"
SLICE = "gpu-1g"
FLAVORS = [
    {"name": WHOLE, "resource": "nvidia.com/gpu", "gpu_equivalent": 1.0, "price_per_hour": "3"},
    {"name": OTHER, "resource": "nvidia.com/gpu", "gpu_equivalent": 1.0, "price_per_hour": "1"},
    {"name": SLICE, "resource": "nvidia.com/mig-1g.10gb", "gpu_equivalent": 0.142857},
]
HORIZON = 20000  # every scenario stops here (some jobs never end)


def _node_gpus() -> st.SearchStrategy[dict[str, int]]:
    return st.one_of(
        st.builds(lambda n: {WHOLE: n}, st.sampled_from([4, 8])),
        st.builds(lambda n: {OTHER: n}, st.sampled_from([2, 4])),
        st.just({SLICE: 7}),
        st.just({SLICE: 3, WHOLE: 4}),  # a node exposing whole GPUs and MIG slices
    )


@st.composite
def _clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 2))
    total = draw(st.integers(max(1, count), 8))
    nodes = [
        {"name": f"n{i}", "gpus": draw(_node_gpus()), "labels": {"rack": f"r{i % 2}"}}
        for i in range(total)
    ]
    cut = draw(st.integers(1, total - 1)) if count == 2 and total > 1 else total
    clusters = [{"name": "c0", "nodes": nodes[:cut]}]
    if nodes[cut:]:
        clusters.append({"name": "c1", "nodes": nodes[cut:]})
    return clusters


@st.composite
def _classes(draw: st.DrawFn) -> list[dict[str, Any]]:
    classes = [
        {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
        {
            "name": "std",
            "priority": 100,
            "preemptible": True,
            "can_borrow": draw(st.booleans()),
            "min_runtime": draw(st.sampled_from([0, 0, 100, 600])),
            "grace_period": draw(st.sampled_from([0, 0, 20])),
        },
        {
            "name": "low",
            "priority": 10,
            "preemptible": True,
            "can_borrow": True,
            "grace_period": draw(st.sampled_from([0, 15])),
        },
    ]
    if draw(st.booleans()):
        classes[2]["max_runtime"] = draw(st.sampled_from([500, 3000]))
    drop = draw(st.sampled_from([None, "prod", "low"]))
    return [c for c in classes if c["name"] != drop]


@st.composite
def _quota(draw: st.DrawFn) -> dict[str, Any]:
    nominal = draw(st.integers(0, 16))
    quota: dict[str, Any] = {"nominal": nominal}
    if draw(st.booleans()):
        quota["borrowing_limit"] = draw(st.integers(0, 8))
    if draw(st.booleans()):
        quota["lending_limit"] = draw(st.integers(0, nominal))
    return quota


@st.composite
def _queues(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 4))
    queues = []
    for i in range(count):
        queue: dict[str, Any] = {"name": f"q{i}"}
        cohort = draw(st.sampled_from([None, "x", "x", "y"]))
        if cohort is not None:
            queue["cohort"] = cohort
        if draw(st.booleans()):
            queue["weight"] = draw(st.sampled_from([1, 2, 0.5]))
        flavors = draw(st.lists(st.sampled_from([WHOLE, OTHER, SLICE]), unique=True))
        queue["quotas"] = {f: draw(_quota()) for f in flavors}
        queues.append(queue)
    return queues


@st.composite
def _job(draw: st.DrawFn, index: int, queues: list[str], classes: list[str]) -> dict[str, Any]:
    job: dict[str, Any] = {
        "name": f"j{index:02d}",
        "queue": draw(st.sampled_from(queues)),
        "class": draw(st.sampled_from(classes)),
        "submit_at": draw(st.integers(0, 3000)),
    }
    kind = draw(st.sampled_from(["whole", "whole", "either", "slice"]))
    if kind == "slice":
        job["workers"] = draw(st.integers(1, 4))
        job["gpus_per_worker"] = draw(st.integers(1, 2))
        job["flavor"] = SLICE
    else:
        job["workers"] = draw(st.sampled_from([1, 1, 1, 2, 2, 3, 4]))
        job["gpus_per_worker"] = draw(st.sampled_from([1, 2, 4, 8]))
        if kind == "either":
            job["flavors"] = draw(st.permutations([WHOLE, OTHER]))
        else:
            job["flavor"] = WHOLE
    job["duration"] = draw(st.one_of(st.integers(1, 4000), st.just(None)))
    if draw(st.booleans()):
        job["estimated_runtime"] = draw(st.integers(1, 5000))
    if job["workers"] > 1 and draw(st.integers(0, 3)) == 0:
        job["min_workers"] = draw(st.integers(1, job["workers"]))
    if job["workers"] > 1 and draw(st.integers(0, 3)) == 0:
        job["topology"] = {draw(st.sampled_from(["required", "preferred"])): "rack"}
    if draw(st.integers(0, 4)) == 0:
        job["checkpoint_interval"] = draw(st.sampled_from([100, 1000]))
    return job


@st.composite
def _events(draw: st.DrawFn, nodes: list[str], jobs: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for node in draw(st.lists(st.sampled_from(nodes), max_size=2, unique=True)):
        at = draw(st.integers(1, 4000))
        events.append({"at": at, "node": node, "action": "fail"})
        if draw(st.booleans()):
            events.append({"at": at + draw(st.integers(1, 3000)), "node": node,
                           "action": "recover"})  # fmt: skip
    if draw(st.booleans()):
        node = draw(st.sampled_from(nodes))
        at = draw(st.integers(0, 3000))
        events.append({"at": at, "node": node,
                       "action": draw(st.sampled_from(["cordon", "drain"]))})  # fmt: skip
        events.append({"at": at + draw(st.integers(1, 2000)), "node": node,
                       "action": "uncordon"})  # fmt: skip
    for job in draw(st.lists(st.sampled_from(jobs), max_size=3, unique=True)):
        events.append({"at": draw(st.integers(0, 5000)), "job": job, "action": "cancel"})
    return events


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A small random scenario as plain data (what a YAML file would hold)."""
    clusters = draw(_clusters())
    classes = draw(_classes())
    queues = draw(_queues())
    count = draw(st.integers(1, 30))
    jobs = [
        draw(_job(i, [q["name"] for q in queues], [c["name"] for c in classes]))
        for i in range(count)
    ]
    nodes = [n["name"] for c in clusters for n in c["nodes"]]
    return {
        "name": "random",
        "cycle_interval": draw(st.sampled_from([5, 10, 60])),
        "until": HORIZON,
        "flavors": FLAVORS,
        "topology_levels": ["rack"],
        "clusters": clusters,
        "service_classes": classes,
        "queues": queues,
        "jobs": jobs,
        "events": draw(_events(nodes, [j["name"] for j in jobs])),
    }


@st.composite
def _cohort_quotas(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flavor in draw(st.lists(st.sampled_from([WHOLE, OTHER, SLICE]), unique=True)):
        quota: dict[str, Any] = {"nominal": draw(st.integers(0, 8))}
        if draw(st.booleans()):
            quota["borrowing_limit"] = draw(st.integers(0, 8))
        if draw(st.booleans()):
            quota["lending_limit"] = draw(st.integers(0, 16))  # may exceed its own nominal
        out[flavor] = quota
    return out


@st.composite
def tree_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A random scenario whose queues sit in a cohort tree (docs/SCHEDULING.md section 2a):
    org -> departments d0, d1 -> (sometimes) a group g0 under d0, with random quotas at every
    level; each queue hangs under a department or the group, or stays in flat cohort y."""
    data = draw(scenarios())
    cohorts: list[dict[str, Any]] = [{"name": "org", "quotas": draw(_cohort_quotas())}]
    for name in ("d0", "d1"):
        cohorts.append({"name": name, "parent": "org", "quotas": draw(_cohort_quotas())})
        if draw(st.booleans()):
            cohorts[-1]["weight"] = draw(st.sampled_from([0.5, 2]))
    homes = ["d0", "d1"]
    if draw(st.booleans()):
        cohorts.append({"name": "g0", "parent": "d0", "quotas": draw(_cohort_quotas())})
        homes.append("g0")
    for queue in data["queues"]:
        queue["cohort"] = draw(st.sampled_from([*homes, *homes, "y"]))
        # most jobs ask for whole GPUs: a small quota there makes the levels compete for them
        queue["quotas"].setdefault(WHOLE, {"nominal": draw(st.integers(0, 8))})
    data["cohorts"] = cohorts
    data["name"] = "random-tree"
    return data


@st.composite
def contended_tree_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """Four teams in a three-level tree fighting over one flavor: org -> d0 (t0, and g0 with
    t1), d1 (t2, t3); small quotas at every level, long jobs, so that teams borrow inside a
    department, departments borrow from org, and reclaim and fair sharing happen at each
    level."""

    def small_quota(nominal_max: int) -> dict[str, Any]:
        quota: dict[str, Any] = {"nominal": draw(st.integers(0, nominal_max))}
        if draw(st.booleans()):
            quota["borrowing_limit"] = draw(st.integers(0, 6))
        if draw(st.booleans()):
            quota["lending_limit"] = draw(st.integers(0, 8))
        return quota

    cohorts: list[dict[str, Any]] = [
        {"name": "org", "quotas": {WHOLE: {"nominal": draw(st.integers(0, 4))}}},
        {"name": "d0", "parent": "org", "quotas": {WHOLE: small_quota(2)}},
        {"name": "d1", "parent": "org", "quotas": {WHOLE: small_quota(2)}},
        {"name": "g0", "parent": "d0", "quotas": {WHOLE: small_quota(2)}},
    ]
    queues = []
    for name, home in (("t0", "d0"), ("t1", "g0"), ("t2", "d1"), ("t3", "d1")):
        quota = {"nominal": draw(st.integers(0, 6))}
        if draw(st.integers(0, 3)) == 0:
            quota["lending_limit"] = draw(st.integers(0, quota["nominal"]))
        queues.append({"name": name, "cohort": home, "quotas": {WHOLE: quota}})
    classes = [
        {"name": "std", "priority": 100, "grace_period": draw(st.sampled_from([0, 20]))},
        {"name": "low", "priority": 10, "min_runtime": draw(st.sampled_from([0, 100]))},
        {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
    ]
    jobs = []
    for i in range(draw(st.integers(4, 30))):
        job: dict[str, Any] = {
            "name": f"j{i:02d}",
            "queue": draw(st.sampled_from(["t0", "t1", "t2", "t3"])),
            "class": draw(st.sampled_from(["std", "std", "low", "prod"])),
            "submit_at": draw(st.integers(0, 2000)),
            "workers": draw(st.sampled_from([1, 1, 2])),
            "gpus_per_worker": draw(st.sampled_from([1, 1, 2, 4])),
            "flavor": WHOLE,
            "duration": draw(st.one_of(st.integers(200, 5000), st.just(None))),
        }
        if job["workers"] > 1 and draw(st.integers(0, 3)) == 0:
            job["min_workers"] = 1
        jobs.append(job)
    nodes = [{"name": f"n{i}", "gpus": {WHOLE: 8}} for i in range(draw(st.integers(1, 4)))]
    return {
        "name": "contended-tree",
        "cycle_interval": 10,
        "until": HORIZON,
        "flavors": FLAVORS,
        "clusters": [{"name": "c0", "nodes": nodes}],
        "service_classes": classes,
        "cohorts": cohorts,
        "queues": queues,
        "jobs": jobs,
    }
