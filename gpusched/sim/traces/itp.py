"""Microsoft ITP 2021 (from the ElasticFlow artifact) -> scenario dict.

Rules (see also gpusched/sim/traces/README.md):

- Each selected cluster file (``cluster01`` ... ``cluster10``) becomes a tenant: a queue of that
  name in the cohort ``itp``. The files share one clock, so their jobs are merged by
  ``submission_time`` onto one shared cluster ``itp`` of 8-GPU nodes.
- Cluster size: ``nodes`` if given; otherwise the smallest node count at which the selected
  jobs' offered load (the mean GPUs they would hold during the span of their submissions, at
  least one hour, if each started at once) is at most ``load`` of the capacity, and at least
  enough nodes for the largest gang.
- Quotas: the cluster's GPUs are split over the tenants in proportion to their GPU-hours demand
  among the selected jobs (largest remainder, so the nominals add up to the capacity); a tenant
  with no demand in the window gets 0 and borrows.
- A job of ``num_gpu`` GPUs becomes a gang shaped by :func:`~gpusched.sim.traces.common.gang_shape`
  (8-GPU workers above 8). ``duration`` is the trace's; ``estimated_runtime`` the same, or a
  seeded log-normal noisy estimate with ``noise`` = sigma > 0.
- ``start``/``end`` select jobs by ``submission_time`` (start <= t < end); times are shifted so
  the first selected job is submitted at 0; ``max_jobs`` keeps the earliest jobs. The files are
  sorted by time, so reading stops as soon as the window or ``max_jobs`` is full.
- One service class ``std``: preemptible and may borrow.
"""

from __future__ import annotations

import csv
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusched.sim.traces.common import (
    DEFAULT_CYCLE_INTERVAL,
    NODE_GPUS,
    WHOLE_GPU_RESOURCE,
    ImportStats,
    TraceImport,
    TraceOptionError,
    apportion,
    check_cycle_interval,
    check_non_negative,
    check_positive_int,
    check_window,
    gang_shape,
    noisy_estimate,
    number,
    parse_number,
    rebase,
    require_file,
    scenario_dict,
    std_service_class,
    traces_dir,
    whole_seconds,
)

TRACE = "itp"
FLAVOR = "gpu"
COHORT = "itp"
CLUSTER = "itp"
CLUSTERS = tuple(f"cluster{i:02d}" for i in range(1, 11))
DEFAULT_LOAD = 0.9
MIN_SPAN = 3600.0


@dataclass(frozen=True, slots=True)
class _Row:
    t: float
    tenant_index: int
    line: int
    tenant: str
    job_id: str
    num_gpus: int
    duration: int


def import_itp(
    trace_dir: Path | None = None,
    *,
    clusters: list[str] | None = None,
    nodes: int | None = None,
    load: float = DEFAULT_LOAD,
    start: float | None = None,
    end: float | None = None,
    max_jobs: int | None = None,
    noise: float = 0.0,
    seed: int = 0,
    cycle_interval: float = DEFAULT_CYCLE_INTERVAL,
    name: str | None = None,
) -> TraceImport:
    folder = trace_dir if trace_dir is not None else traces_dir() / "microsoft-itp-2021"
    tenants = _select_clusters(clusters)
    check_positive_int(TRACE, "nodes", nodes)
    if isinstance(load, bool) or not isinstance(load, int | float) or not load > 0:
        raise TraceOptionError(f"{TRACE}: option 'load': must be a number > 0, got {load!r}")
    lo, hi = check_window(TRACE, start, end)
    check_positive_int(TRACE, "max_jobs", max_jobs)
    sigma = check_non_negative(TRACE, "noise", noise)
    interval = check_cycle_interval(TRACE, cycle_interval)

    stats = ImportStats()
    paths = [require_file(TRACE, folder / f"{t}.csv") for t in tenants]
    streams = [
        _rows(path, i, tenant, stats)
        for i, (tenant, path) in enumerate(zip(tenants, paths, strict=True))
    ]
    selected: list[_Row] = []
    capacity = None if nodes is None else nodes * NODE_GPUS
    for row in heapq.merge(*streams, key=lambda r: (r.t, r.tenant_index, r.line)):
        if row.t < lo:
            stats.skip("outside_window")
            continue
        if row.t >= hi or (max_jobs is not None and len(selected) >= max_jobs):
            break  # files are sorted by time: nothing later can be selected
        if capacity is not None and row.num_gpus > capacity:
            stats.skip("larger_than_cluster")
            continue
        selected.append(row)

    node_count = nodes if nodes is not None else auto_nodes(selected, load)
    demand = dict.fromkeys(tenants, 0.0)
    for row in selected:
        demand[row.tenant] += row.num_gpus * row.duration
    nominal = apportion(node_count * NODE_GPUS, demand)

    jobs = [_job(row, lo, sigma, seed) for row in selected]
    rebase(jobs)
    stats.jobs = len(jobs)
    scenario = scenario_dict(
        name=name or _default_name(tenants, start, end, max_jobs),
        cycle_interval=interval,
        flavors=[{"name": FLAVOR, "resource": WHOLE_GPU_RESOURCE, "gpu_equivalent": 1.0}],
        clusters=[
            {
                "name": CLUSTER,
                "nodes": [{"name_prefix": "n", "count": node_count, "gpus": {FLAVOR: NODE_GPUS}}],
            }
        ],
        service_classes=[std_service_class()],
        queues=[
            {
                "name": tenant,
                "team": tenant,
                "cohort": COHORT,
                "quotas": {FLAVOR: {"nominal": nominal[tenant]}},
            }
            for tenant in tenants
        ],
        jobs=jobs,
    )
    return TraceImport(scenario=scenario, stats=stats)


def auto_nodes(rows: list[_Row], load: float) -> int:
    """Smallest 8-GPU node count with offered load <= ``load`` that fits the largest gang.

    The offered load is the mean number of GPUs the jobs would hold during their submission
    span if each started at once: sum of gpus x (the part of its run inside the span) / span.
    Counting only the part inside the span keeps a few weeks-long jobs from inflating it.
    """
    if not rows:
        return 1
    first = min(r.t for r in rows)
    span = max(MIN_SPAN, max(r.t for r in rows) - first)
    busy = sum(r.num_gpus * max(0.0, min(r.t + r.duration, first + span) - r.t) for r in rows)
    by_load = math.ceil(busy / span / load / NODE_GPUS)
    by_gang = math.ceil(max(r.num_gpus for r in rows) / NODE_GPUS)
    return max(1, by_load, by_gang)


def _select_clusters(clusters: list[str] | None) -> list[str]:
    if clusters is None:
        return list(CLUSTERS)
    if not clusters:
        raise TraceOptionError(f"{TRACE}: option 'clusters': select at least one cluster")
    for c in clusters:
        if c not in CLUSTERS:
            raise TraceOptionError(
                f"{TRACE}: option 'clusters': unknown cluster {c!r} (known: {', '.join(CLUSTERS)})"
            )
    if len(set(clusters)) != len(clusters):
        raise TraceOptionError(f"{TRACE}: option 'clusters': a cluster is listed twice")
    return list(clusters)


def _rows(path: Path, index: int, tenant: str, stats: ImportStats) -> Iterator[_Row]:
    """The usable rows of one cluster file, lazily (the merge pulls only what it needs)."""
    with path.open(newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            stats.rows_read += 1
            t = parse_number(TRACE, path, line, "submission_time", row["submission_time"])
            gpus = parse_number(TRACE, path, line, "num_gpu", row["num_gpu"])
            duration = parse_number(TRACE, path, line, "duration", row["duration"])
            if t is None:
                stats.skip("no_submission_time")
                continue
            if gpus is None or gpus < 1 or not gpus.is_integer():
                stats.skip("no_gpus")
                continue
            if duration is None or duration <= 0:
                stats.skip("no_duration")
                continue
            yield _Row(t, index, line, tenant, row["job_id"], int(gpus), whole_seconds(duration))


def _job(row: _Row, lo: float, sigma: float, seed: int) -> dict[str, Any]:
    workers, per_worker = gang_shape(row.num_gpus)
    name = f"{row.tenant}-{row.job_id}"
    return {
        "name": name,
        "queue": row.tenant,
        "class": "std",
        "submit_at": number(row.t - lo),
        "workers": workers,
        "gpus_per_worker": per_worker,
        "flavor": FLAVOR,
        "duration": row.duration,
        "estimated_runtime": noisy_estimate(row.duration, sigma, seed, name),
    }


def _default_name(
    tenants: list[str], start: float | None, end: float | None, max_jobs: int | None
) -> str:
    parts = [TRACE, "all-clusters" if tenants == list(CLUSTERS) else "-".join(tenants)]
    if start is not None or end is not None:
        parts.append(f"t{number(start or 0)}-{'end' if end is None else number(end)}")
    if max_jobs is not None:
        parts.append(f"max{max_jobs}")
    return "-".join(str(p) for p in parts)
