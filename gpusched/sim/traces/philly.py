"""Microsoft Philly (per virtual cluster, from the PCS artifact) -> scenario dict.

Rules (see also docs in gpusched/sim/traces/README.md):

- Each selected virtual cluster (VC) becomes a queue (team = the VC) in the cohort ``philly``
  with a nominal quota of ``vc_quota_nodes.csv`` nodes x 8 GPUs of the one flavor ``gpu``.
- The cluster ``philly`` has as many 8-GPU nodes as the selected VCs' quotas add up to.
- A job of ``num_gpus`` GPUs becomes a gang shaped by
  :func:`~gpusched.sim.traces.common.gang_shape`: up to 8 GPUs one worker with all of them;
  multiples of 8 whole-node workers of 8; other sizes above 8 the fewest equal workers that
  fit a node (12 -> 2 x 6), so the GPU total is exact.
- ``duration`` = ``duration_s``; ``estimated_runtime`` = the same, or a seeded log-normal noisy
  estimate with ``noise`` = sigma > 0.
- ``start``/``end`` select jobs by their VC's own ``submit_time`` (start <= t < end). Each VC's
  clock starts at 0 and the offsets between VCs are lost, so ``vc_offset`` seconds are added
  per VC index (the order of ``vcs``, else the quota file's order). Times are then shifted so
  the first selected job is submitted at 0. ``max_jobs`` keeps the earliest jobs after that.
- ``quota_scale`` multiplies every VC's quota (rounded, at least one node), and so the cluster:
  the quotas of this trace rarely make jobs wait, so a benchmark shrinks them to create
  contention (Philly's real mean queueing delay was about an hour).
- One service class ``std``: preemptible and may borrow.
- Skipped (and counted): jobs of VCs without a quota or not selected, outside the window,
  without a positive duration or GPU count, larger than the whole cluster, beyond ``max_jobs``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusched.sim.traces.common import (
    DEFAULT_CYCLE_INTERVAL,
    NODE_GPUS,
    WHOLE_GPU_RESOURCE,
    Earliest,
    ImportStats,
    TraceImport,
    TraceOptionError,
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

TRACE = "philly"
FLAVOR = "gpu"
COHORT = "philly"
CLUSTER = "philly"


@dataclass(frozen=True, slots=True)
class _Candidate:
    submit_at: float
    vc_index: int
    idx: int
    vc: str
    num_gpus: int
    duration: int


def read_vc_quotas(path: Path) -> dict[str, int]:
    """VC -> quota in 8-GPU nodes, in file order."""
    quotas: dict[str, int] = {}
    with require_file(TRACE, path).open(newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            nodes = parse_number(TRACE, path, line, "node num", row.get("node num"))
            if nodes is None or nodes < 0 or not nodes.is_integer():
                raise TraceOptionError(
                    f"{TRACE}: {path.name} line {line}: column 'node num': "
                    f"must be a whole number >= 0, got {row.get('node num')!r}"
                )
            quotas[row["vc"]] = int(nodes)
    return quotas


def import_philly(
    trace_dir: Path | None = None,
    *,
    start: float | None = None,
    end: float | None = None,
    vcs: list[str] | None = None,
    vc_offset: float = 0.0,
    max_jobs: int | None = None,
    noise: float = 0.0,
    seed: int = 0,
    quota_scale: float = 1.0,
    cycle_interval: float = DEFAULT_CYCLE_INTERVAL,
    name: str | None = None,
) -> TraceImport:
    folder = trace_dir if trace_dir is not None else traces_dir() / "philly-pcs"
    if isinstance(quota_scale, bool) or not isinstance(quota_scale, int | float):
        raise TraceOptionError(f"{TRACE}: option 'quota_scale': must be a number > 0")
    if not quota_scale > 0:
        raise TraceOptionError(
            f"{TRACE}: option 'quota_scale': must be a number > 0, got {quota_scale!r}"
        )
    lo, hi = check_window(TRACE, start, end)
    check_positive_int(TRACE, "max_jobs", max_jobs)
    offset = check_non_negative(TRACE, "vc_offset", vc_offset)
    sigma = check_non_negative(TRACE, "noise", noise)
    interval = check_cycle_interval(TRACE, cycle_interval)

    quotas = read_vc_quotas(folder / "vc_quota_nodes.csv")
    selected = _select_vcs(quotas, vcs)
    if quota_scale != 1:
        quotas = {vc: max(1, round(n * quota_scale)) if n else 0 for vc, n in quotas.items()}
    vc_index = {vc: i for i, vc in enumerate(selected)}
    capacity = sum(quotas[vc] for vc in selected) * NODE_GPUS

    stats = ImportStats()
    kept: Earliest[_Candidate] = Earliest(max_jobs, stats)
    jobs_path = require_file(TRACE, folder / "jobs.csv")
    with jobs_path.open(newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            stats.rows_read += 1
            vc = row["vc"]
            if vc not in vc_index:
                stats.skip("vc_without_quota" if vc not in quotas else "vc_not_selected")
                continue
            t = parse_number(TRACE, jobs_path, line, "submit_time", row["submit_time"])
            if t is None or not lo <= t < hi:
                stats.skip("outside_window")
                continue
            gpus = parse_number(TRACE, jobs_path, line, "num_gpus", row["num_gpus"])
            if gpus is None or gpus < 1 or not gpus.is_integer():
                stats.skip("no_gpus")
                continue
            if gpus > capacity:
                stats.skip("larger_than_cluster")
                continue
            duration = parse_number(TRACE, jobs_path, line, "duration_s", row["duration_s"])
            if duration is None or duration <= 0:
                stats.skip("no_duration")
                continue
            candidate = _Candidate(
                submit_at=t - lo + vc_index[vc] * offset,
                vc_index=vc_index[vc],
                idx=int(row["job_idx_in_vc"]),
                vc=vc,
                num_gpus=int(gpus),
                duration=whole_seconds(duration),
            )
            kept.add((candidate.submit_at, candidate.vc_index, candidate.idx), candidate)

    jobs = [_job(c, sigma, seed) for c in kept.items()]
    rebase(jobs)
    stats.jobs = len(jobs)

    nodes = capacity // NODE_GPUS
    label = name or _default_name(selected, quotas, start, end, max_jobs)
    if quota_scale != 1 and name is None:
        label += f"-q{number(quota_scale)}"
    scenario = scenario_dict(
        name=label,
        cycle_interval=interval,
        flavors=[{"name": FLAVOR, "resource": WHOLE_GPU_RESOURCE, "gpu_equivalent": 1.0}],
        clusters=[
            {
                "name": CLUSTER,
                "nodes": [{"name_prefix": "n", "count": nodes, "gpus": {FLAVOR: NODE_GPUS}}],
            }
        ],
        service_classes=[std_service_class()],
        queues=[
            {
                "name": vc,
                "team": vc,
                "cohort": COHORT,
                "quotas": {FLAVOR: {"nominal": quotas[vc] * NODE_GPUS}},
            }
            for vc in selected
        ],
        jobs=jobs,
    )
    return TraceImport(scenario=scenario, stats=stats)


def _select_vcs(quotas: dict[str, int], vcs: list[str] | None) -> list[str]:
    if vcs is None:
        return [vc for vc, nodes in quotas.items() if nodes > 0]
    if not vcs:
        raise TraceOptionError(f"{TRACE}: option 'vcs': select at least one VC")
    for vc in vcs:
        if vc not in quotas:
            known = ", ".join(sorted(quotas))
            raise TraceOptionError(
                f"{TRACE}: option 'vcs': {vc!r} has no quota in vc_quota_nodes.csv "
                f"(VCs with a quota: {known})"
            )
        if quotas[vc] == 0:
            raise TraceOptionError(f"{TRACE}: option 'vcs': {vc!r} has a quota of 0 nodes")
    if len(set(vcs)) != len(vcs):
        raise TraceOptionError(f"{TRACE}: option 'vcs': a VC is listed twice: {vcs}")
    return list(vcs)


def _job(c: _Candidate, sigma: float, seed: int) -> dict[str, Any]:
    workers, per_worker = gang_shape(c.num_gpus)
    name = f"{c.vc}-{c.idx}"
    return {
        "name": name,
        "queue": c.vc,
        "class": "std",
        "submit_at": number(c.submit_at),
        "workers": workers,
        "gpus_per_worker": per_worker,
        "flavor": FLAVOR,
        "duration": c.duration,
        "estimated_runtime": noisy_estimate(c.duration, sigma, seed, name),
    }


def _default_name(
    selected: list[str],
    quotas: dict[str, int],
    start: float | None,
    end: float | None,
    max_jobs: int | None,
) -> str:
    parts = [TRACE]
    vcs_with_quota = [vc for vc, n in quotas.items() if n > 0]
    parts.append("all-vcs" if selected == vcs_with_quota else "-".join(selected))
    if start is not None or end is not None:
        parts.append(f"t{number(start or 0)}-{'end' if end is None else number(end)}")
    if max_jobs is not None:
        parts.append(f"max{max_jobs}")
    return "-".join(str(p) for p in parts)
