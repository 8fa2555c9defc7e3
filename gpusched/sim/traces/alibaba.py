"""Alibaba cluster-trace-gpu-v2023 ("OpenB") -> scenario dict.

Rules (see also gpusched/sim/traces/README.md):

- Nodes: ``openb_node_list_gpu_node.csv``, one scenario node per row named by ``sn``, in the one
  cluster ``openb``. Each GPU model is a whole-GPU flavor named by the lower-cased model
  (``V100M16`` -> ``v100m16``, resource ``nvidia.com/gpu``).
- Jobs: pods with ``num_gpu`` > 0 or ``gpu_milli`` > 0; CPU-only pods are skipped. A pod is one
  worker with ``num_gpu`` GPUs on one node.
- Acceptable flavors: the models of ``gpu_spec`` (``|``-separated) that the cluster has, ordered
  by :data:`MODEL_PREFERENCE`; an empty spec accepts every model in that order. The preference
  is by how plentiful the model is in the node list (most GPUs first), so unconstrained pods
  spread over the common models and leave the scarce ones to pods that need them.
- Service classes by ``qos``: LS -> ``prod`` (priority 1000, not preemptible, no borrowing),
  Burstable / Guaranteed -> ``std`` (100, preemptible, may borrow), BE -> ``spot`` (10,
  preemptible, may borrow).
- Times: submit = ``creation_time``; duration = ``deletion_time`` - ``scheduled_time``, or -
  ``creation_time`` when the pod was never scheduled in the trace. Pods with no creation or
  deletion time, or a non-positive duration, are skipped and counted. ``multigpu50`` has no time
  columns: its pods that also appear in the default list take that row's times, qos and spec;
  the 909 extra multi-GPU pods take the times and qos of a default pod chosen by a stable hash
  of their name (counted as ``times_from_donor``).
- GPU-share pods (``gpu_milli`` < 1000): ``share="round"`` gives them one whole GPU;
  ``share="mig"`` gives them ceil(gpu_milli / 1000 x 7) slices of the flavor ``<model>-1g``
  (gpu_equivalent 1/7). Then a ``mig_fraction`` of each model's nodes, spread evenly in name
  order, exposes 7 slices per GPU instead of whole GPUs; whole-GPU pods never use slices.
- ``node_fraction`` keeps only that share of each model's nodes (evenly spread in name order):
  the full node list is far larger than the pods ever use at once, so benchmarks shrink it.
  Pods that fit no kept node of an acceptable model are skipped (``no_node_fits``).
- A ``prod`` pod cannot borrow, so it keeps only the flavors its tenant's nominal can hold;
  with none left (a small ``node_fraction``) it is skipped as ``prod_over_tenant_quota``
  instead of waiting forever.
- Tenants: the trace has none, so pod ``name`` -> stable hash mod ``tenants`` -> queue
  ``tenant-<i>`` in cohort ``openb``; every tenant's nominal per flavor is an equal share of the
  cluster's capacity (largest remainder, so the shares add up to the capacity).
- ``start``/``end`` select pods by ``creation_time``; times are shifted so the first selected
  pod is submitted at 0; ``max_jobs`` keeps the earliest pods.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gpusched.sim.traces.common import (
    DEFAULT_CYCLE_INTERVAL,
    WHOLE_GPU_RESOURCE,
    Earliest,
    ImportStats,
    TraceImport,
    TraceOptionError,
    apportion,
    check_cycle_interval,
    check_fraction,
    check_non_negative,
    check_positive_int,
    check_window,
    noisy_estimate,
    number,
    parse_number,
    rebase,
    require_file,
    scenario_dict,
    stable_hash,
    traces_dir,
    whole_seconds,
)

TRACE = "alibaba"
CLUSTER = "openb"
COHORT = "openb"
POD_LISTS = ("default", "multigpu50", "gpushare100", "gpuspec33")
SHARE_MODES = ("round", "mig")
MODEL_PREFERENCE = ("G2", "T4", "G3", "P100", "V100M32", "V100M16", "A10")
"""Fixed order for acceptable models: most GPUs in the node list first (G2 4392, T4 842,
G3 312, P100 265, V100M32 204, V100M16 195, A10 2). Models not listed come after, by name."""

SLICES_PER_GPU = 7
SLICE_SUFFIX = "-1g"
SLICE_RESOURCE = "nvidia.com/mig-1g"
SLICE_EQUIVALENT = 0.142857

QOS_CLASS: Mapping[str, str] = MappingProxyType(
    {"LS": "prod", "Burstable": "std", "Guaranteed": "std", "BE": "spot"}
)
SERVICE_CLASSES: tuple[Mapping[str, Any], ...] = (
    MappingProxyType({"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False}),
    MappingProxyType({"name": "std", "priority": 100, "preemptible": True, "can_borrow": True}),
    MappingProxyType({"name": "spot", "priority": 10, "preemptible": True, "can_borrow": True}),
)


@dataclass(frozen=True, slots=True)
class _Node:
    name: str
    model: str
    gpus: int
    sliced: bool


@dataclass(frozen=True, slots=True)
class _Times:
    creation: float
    duration: float
    qos: str
    spec: str


def whole_flavor(model: str) -> str:
    return model.lower()


def slice_flavor(model: str) -> str:
    return model.lower() + SLICE_SUFFIX


def slices_for(gpu_milli: float) -> int:
    """MIG-like 1/7 slices a GPU share needs: ceil(gpu_milli / 1000 x 7), at least 1."""
    return max(1, math.ceil(round(gpu_milli * SLICES_PER_GPU / 1000, 9)))


def model_order(models: set[str]) -> list[str]:
    known = [m for m in MODEL_PREFERENCE if m in models]
    return known + sorted(models - set(MODEL_PREFERENCE))


def import_alibaba(
    trace_dir: Path | None = None,
    *,
    pod_list: str = "default",
    share: str = "round",
    mig_fraction: float = 0.25,
    node_fraction: float = 1.0,
    tenants: int = 4,
    start: float | None = None,
    end: float | None = None,
    max_jobs: int | None = None,
    noise: float = 0.0,
    seed: int = 0,
    cycle_interval: float = DEFAULT_CYCLE_INTERVAL,
    name: str | None = None,
) -> TraceImport:
    folder = trace_dir if trace_dir is not None else traces_dir() / "alibaba-openb-2023"
    if pod_list not in POD_LISTS:
        raise TraceOptionError(
            f"{TRACE}: option 'pod_list': must be one of {', '.join(POD_LISTS)}, got {pod_list!r}"
        )
    if share not in SHARE_MODES:
        raise TraceOptionError(
            f"{TRACE}: option 'share': must be one of {', '.join(SHARE_MODES)}, got {share!r}"
        )
    fraction = check_fraction(TRACE, "mig_fraction", mig_fraction)
    keep = check_fraction(TRACE, "node_fraction", node_fraction)
    if keep == 0:
        raise TraceOptionError(f"{TRACE}: option 'node_fraction': must be greater than 0")
    check_positive_int(TRACE, "tenants", tenants)
    lo, hi = check_window(TRACE, start, end)
    check_positive_int(TRACE, "max_jobs", max_jobs)
    sigma = check_non_negative(TRACE, "noise", noise)
    interval = check_cycle_interval(TRACE, cycle_interval)

    nodes = read_nodes(
        folder / "openb_node_list_gpu_node.csv", fraction if share == "mig" else 0, keep
    )
    models = model_order({n.model for n in nodes})
    whole_max = {
        m: max((n.gpus for n in nodes if n.model == m and not n.sliced), default=0) for m in models
    }
    slice_max = {
        m: max((n.gpus * SLICES_PER_GPU for n in nodes if n.model == m and n.sliced), default=0)
        for m in models
    }

    flavors_out, capacity = _flavors_and_capacity(nodes, models)
    queue_names = [f"tenant-{i}" for i in range(tenants)]
    shares = {f: apportion(cap, dict.fromkeys(queue_names, 1.0)) for f, cap in capacity.items()}

    stats = ImportStats()
    pods_path = require_file(TRACE, folder / f"openb_pod_list_{pod_list}.csv")
    borrowed: dict[str, _Times | None] | None = None
    donors: list[_Times] = []
    kept: Earliest[dict[str, Any]] = Earliest(max_jobs, stats)
    with pods_path.open(newline="") as f:
        reader = csv.DictReader(f)
        if "creation_time" not in (reader.fieldnames or []):
            borrowed, donors = _default_times(folder)
        for line, row in enumerate(reader, start=2):
            stats.rows_read += 1
            pod = row["name"]
            num_gpu = parse_number(TRACE, pods_path, line, "num_gpu", row["num_gpu"]) or 0.0
            milli = parse_number(TRACE, pods_path, line, "gpu_milli", row["gpu_milli"]) or 0.0
            if num_gpu <= 0 and milli <= 0:
                stats.skip("cpu_only")
                continue
            times = _times(row, pods_path, line, borrowed, donors, stats)
            if times is None:
                continue
            if not lo <= times.creation < hi:
                stats.skip("outside_window")
                continue
            if times.qos not in QOS_CLASS:
                stats.skip("unknown_qos")
                continue
            acceptable = _acceptable_models(times.spec, models)
            if not acceptable:
                stats.skip("gpu_spec_not_in_cluster")
                continue
            shared = milli < 1000 and num_gpu <= 1
            if shared and share == "mig":
                per_worker = slices_for(milli)
                flavors = [slice_flavor(m) for m in acceptable if slice_max[m] >= per_worker]
            else:
                per_worker = 1 if shared else int(num_gpu)
                flavors = [whole_flavor(m) for m in acceptable if whole_max[m] >= per_worker]
            if not flavors:
                stats.skip("no_node_fits")
                continue
            queue = f"tenant-{stable_hash(pod) % tenants}"
            service_class = QOS_CLASS[times.qos]
            if service_class == "prod":  # cannot borrow: only flavors its own quota can hold
                flavors = [f for f in flavors if shares[f][queue] >= per_worker]
                if not flavors:
                    stats.skip("prod_over_tenant_quota")
                    continue
            duration = whole_seconds(times.duration)
            job: dict[str, Any] = {
                "name": pod,
                "queue": queue,
                "class": service_class,
                "submit_at": number(times.creation - lo),
                "workers": 1,
                "gpus_per_worker": per_worker,
            }
            if len(flavors) == 1:
                job["flavor"] = flavors[0]
            else:
                job["flavors"] = flavors
            job["duration"] = duration
            job["estimated_runtime"] = noisy_estimate(duration, sigma, seed, pod)
            kept.add((times.creation, line), job)

    jobs = kept.items()
    rebase(jobs)
    stats.jobs = len(jobs)

    scenario = scenario_dict(
        name=name or _default_name(pod_list, share, fraction, keep, start, end, max_jobs),
        cycle_interval=interval,
        flavors=flavors_out,
        clusters=[{"name": CLUSTER, "nodes": [_node_entry(n) for n in nodes]}],
        service_classes=SERVICE_CLASSES,
        queues=[
            {
                "name": q,
                "team": q,
                "cohort": COHORT,
                "quotas": {f: {"nominal": shares[f][q]} for f in capacity},
            }
            for q in queue_names
        ],
        jobs=jobs,
    )
    return TraceImport(scenario=scenario, stats=stats)


def read_nodes(path: Path, mig_fraction: float, node_fraction: float = 1.0) -> list[_Node]:
    """GPU nodes in file order. ``node_fraction`` of each model's nodes are kept, and then
    ``mig_fraction`` of each model's kept nodes expose slices; both pick nodes evenly spread
    in name order (node i of n is picked when floor((i+1)f) > floor(i f))."""
    rows: list[tuple[str, str, int]] = []
    with require_file(TRACE, path).open(newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            gpus = parse_number(TRACE, path, line, "gpu", row["gpu"])
            if gpus is None or gpus < 1 or not gpus.is_integer() or not row["model"]:
                continue
            rows.append((row["sn"], row["model"], int(gpus)))
    kept = _spread_pick(rows, node_fraction)
    rows = [r for r in rows if r[0] in kept]
    sliced = _spread_pick(rows, mig_fraction)
    return [_Node(sn, model, gpus, sn in sliced) for sn, model, gpus in rows]


def _spread_pick(rows: list[tuple[str, str, int]], fraction: float) -> set[str]:
    picked: set[str] = set()
    for model in {m for _, m, _ in rows}:
        names = sorted(sn for sn, m, _ in rows if m == model)
        for i, sn in enumerate(names):
            if math.floor((i + 1) * fraction) > math.floor(i * fraction):
                picked.add(sn)
    return picked


def _node_entry(node: _Node) -> dict[str, Any]:
    if node.sliced:
        gpus = {slice_flavor(node.model): node.gpus * SLICES_PER_GPU}
    else:
        gpus = {whole_flavor(node.model): node.gpus}
    return {"name": node.name, "gpus": gpus, "labels": {"gpu-model": node.model}}


def _flavors_and_capacity(
    nodes: list[_Node], models: list[str]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    flavors: list[dict[str, Any]] = []
    capacity: dict[str, int] = {}
    for model in models:
        whole = sum(n.gpus for n in nodes if n.model == model and not n.sliced)
        if whole:
            flavors.append(
                {"name": whole_flavor(model), "resource": WHOLE_GPU_RESOURCE, "gpu_equivalent": 1.0}
            )
            capacity[whole_flavor(model)] = whole
    for model in models:
        slices = sum(n.gpus * SLICES_PER_GPU for n in nodes if n.model == model and n.sliced)
        if slices:
            flavors.append(
                {
                    "name": slice_flavor(model),
                    "resource": SLICE_RESOURCE,
                    "gpu_equivalent": SLICE_EQUIVALENT,
                }
            )
            capacity[slice_flavor(model)] = slices
    return flavors, capacity


def _acceptable_models(spec: str, models: list[str]) -> list[str]:
    wanted = {m for m in spec.split("|") if m}
    if not wanted:
        return list(models)
    return [m for m in models if m in wanted]


def _times(
    row: dict[str, str],
    path: Path,
    line: int,
    borrowed: dict[str, _Times | None] | None,
    donors: list[_Times],
    stats: ImportStats,
) -> _Times | None:
    if borrowed is not None:
        if row["name"] in borrowed:
            known = borrowed[row["name"]]
            if known is None:
                stats.skip("no_times")
            return known
        if not donors:
            stats.skip("no_times")
            return None
        stats.adjust("times_from_donor")
        donor = donors[stable_hash(row["name"]) % len(donors)]
        return _Times(donor.creation, donor.duration, donor.qos, "")
    return _row_times(row, path, line, stats)


def _row_times(row: dict[str, str], path: Path, line: int, stats: ImportStats) -> _Times | None:
    creation = parse_number(TRACE, path, line, "creation_time", row.get("creation_time"))
    deletion = parse_number(TRACE, path, line, "deletion_time", row.get("deletion_time"))
    scheduled = parse_number(TRACE, path, line, "scheduled_time", row.get("scheduled_time"))
    if creation is None or deletion is None:
        stats.skip("no_times")
        return None
    began = scheduled if scheduled is not None else creation
    if scheduled is None:
        stats.adjust("never_scheduled_in_trace")
    if deletion - began <= 0:
        stats.skip("no_duration")
        return None
    return _Times(creation, deletion - began, row.get("qos") or "", row.get("gpu_spec") or "")


def _default_times(folder: Path) -> tuple[dict[str, _Times | None], list[_Times]]:
    """Times of the default pod list by name, and the GPU pods among them as donors."""
    path = require_file(TRACE, folder / "openb_pod_list_default.csv")
    scratch = ImportStats()
    by_name: dict[str, _Times | None] = {}
    donors: list[_Times] = []
    with path.open(newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            times = _row_times(row, path, line, scratch)
            by_name[row["name"]] = times
            if times is not None and row["num_gpu"] not in ("", "0"):
                donors.append(times)
    return by_name, donors


def _default_name(
    pod_list: str,
    share: str,
    fraction: float,
    keep: float,
    start: float | None,
    end: float | None,
    max_jobs: int | None,
) -> str:
    parts = [TRACE, pod_list, share if share == "round" else f"mig{number(fraction)}"]
    if keep != 1:
        parts.append(f"nodes{number(keep)}")
    if start is not None or end is not None:
        parts.append(f"t{number(start or 0)}-{'end' if end is None else number(end)}")
    if max_jobs is not None:
        parts.append(f"max{max_jobs}")
    return "-".join(str(p) for p in parts)
