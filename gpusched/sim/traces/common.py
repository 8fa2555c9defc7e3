"""Shared pieces of the trace importers: options, results, gang shapes, quotas, noise.

Everything here is pure stdlib and deterministic: the same trace files and options always give
the same scenario dict (no clock, no process-dependent hashing, no global random state).
"""

from __future__ import annotations

import hashlib
import heapq
import math
import os
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

ScenarioDict = dict[str, Any]

TRACES_ENV = "GPUPLATFORM_TRACES_DIR"
DEFAULT_TRACES_DIR = Path(__file__).resolve().parents[4] / "shared" / "traces"
"""``shared/traces`` beside the repository checkout (CI clones the repository with ``shared/``
next to it); ``$GPUPLATFORM_TRACES_DIR`` overrides it."""
DEFAULT_CYCLE_INTERVAL = 60.0
"""Periodic cycle for trace scenarios: traces span weeks, and the engine also runs a cycle at
every submit and finish, so a 60 s tick loses nothing and keeps long replays affordable."""

NODE_GPUS = 8
WHOLE_GPU_RESOURCE = "nvidia.com/gpu"


class TraceOptionError(ValueError):
    """An importer option or input file that cannot be used; the message names trace and option."""


@dataclass
class ImportStats:
    """What an importer read and what it left out, and why (reason -> count)."""

    rows_read: int = 0
    jobs: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    adjusted: Counter[str] = field(default_factory=Counter)
    """Kept jobs whose input needed a documented rule (e.g. times taken from a donor)."""

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def adjust(self, rule: str) -> None:
        self.adjusted[rule] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows_read,
            "jobs": self.jobs,
            "skipped": dict(sorted(self.skipped.items())),
            "adjusted": dict(sorted(self.adjusted.items())),
        }

    def summary(self) -> str:
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(self.skipped.items())) or "none"
        adjusted = ", ".join(f"{k}: {v}" for k, v in sorted(self.adjusted.items())) or "none"
        return (
            f"{self.rows_read} rows read, {self.jobs} jobs, skipped: {skipped}; "
            f"adjusted: {adjusted}"
        )


@dataclass
class TraceImport:
    """An importer's result: a scenario dict in the YAML shape of docs/SCENARIOS.md + stats."""

    scenario: ScenarioDict
    stats: ImportStats


T = TypeVar("T")
SortKey = tuple[float, ...]


class Earliest(Generic[T]):
    """Collects items by a unique sort key; with a limit keeps only the ``limit`` smallest keys
    (a bounded heap, so a long trace never holds more than ``limit`` jobs). Dropped items are
    counted as ``over_max_jobs`` in ``stats``."""

    def __init__(self, limit: int | None, stats: ImportStats) -> None:
        self._limit = limit
        self._stats = stats
        self._heap: list[tuple[SortKey, int, T]] = []  # keys negated when limited
        self._seq = 0

    def add(self, key: SortKey, item: T) -> None:
        self._seq += 1
        if self._limit is None:
            self._heap.append((key, self._seq, item))
            return
        entry = (tuple(-k for k in key), -self._seq, item)
        if len(self._heap) < self._limit:
            heapq.heappush(self._heap, entry)
            return
        self._stats.skip("over_max_jobs")
        if entry[:2] > self._heap[0][:2]:
            heapq.heapreplace(self._heap, entry)

    def items(self) -> list[T]:
        """The kept items, smallest key first."""
        if self._limit is None:
            return [item for _, _, item in sorted(self._heap, key=lambda e: e[:2])]
        return [item for _, _, item in sorted(self._heap, key=lambda e: e[:2], reverse=True)]


def traces_dir() -> Path:
    """Where the public traces live: ``$GPUPLATFORM_TRACES_DIR`` if set, else
    ``<repository root>/../shared/traces``."""
    return Path(os.environ.get(TRACES_ENV, str(DEFAULT_TRACES_DIR)))


def require_file(trace: str, path: Path) -> Path:
    if not path.is_file():
        raise TraceOptionError(f"{trace}: trace file not found: {path}")
    return path


# --- option validation -------------------------------------------------------------------------


def check_window(trace: str, start: float | None, end: float | None) -> tuple[float, float]:
    lo = 0.0 if start is None else float(start)
    hi = math.inf if end is None else float(end)
    if lo < 0:
        raise TraceOptionError(f"{trace}: option 'start': must be >= 0, got {start}")
    if hi <= lo:
        raise TraceOptionError(
            f"{trace}: option 'end': must be greater than 'start' ({lo:g}), got {end}"
        )
    return lo, hi


def check_positive_int(trace: str, name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TraceOptionError(f"{trace}: option '{name}': must be an integer >= 1, got {value!r}")
    return value


def check_non_negative(trace: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise TraceOptionError(f"{trace}: option '{name}': must be a number >= 0, got {value!r}")
    return float(value)


def check_fraction(trace: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise TraceOptionError(
            f"{trace}: option '{name}': must be a number between 0 and 1, got {value!r}"
        )
    return float(value)


def check_cycle_interval(trace: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise TraceOptionError(
            f"{trace}: option 'cycle_interval': must be a number > 0, got {value!r}"
        )
    return float(value)


def parse_number(trace: str, file: Path, line: int, column: str, text: str | None) -> float | None:
    """A numeric CSV cell; empty means missing (None); anything else non-numeric is an error."""
    if text is None or text.strip() == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise TraceOptionError(
            f"{trace}: {file.name} line {line}: column '{column}': not a number: {text!r}"
        ) from None
    if not math.isfinite(value):
        raise TraceOptionError(
            f"{trace}: {file.name} line {line}: column '{column}': not finite: {text!r}"
        )
    return value


# --- shapes, quotas, estimates -------------------------------------------------------------------


def gang_shape(num_gpus: int, node_gpus: int = NODE_GPUS) -> tuple[int, int]:
    """(workers, gpus_per_worker) for a job of ``num_gpus`` GPUs on ``node_gpus``-GPU nodes.

    The rule keeps the job's total exactly and every worker on one node: the worker size is the
    largest divisor of ``num_gpus`` that fits a node. So up to a node: one worker with all GPUs
    (6 -> 1 x 6); multiples of a node: whole-node workers (32 -> 4 x 8); other sizes above a node
    split into the fewest equal workers that fit a node (12 -> 2 x 6, 20 -> 4 x 5, 24 -> 3 x 8).
    """
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be >= 1, got {num_gpus}")
    size = max(d for d in range(1, min(num_gpus, node_gpus) + 1) if num_gpus % d == 0)
    return num_gpus // size, size


def apportion(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Split ``total`` integer units over keys proportionally to ``weights`` (largest remainder).

    The parts always sum to ``total``; ties on the remainder go to the key that sorts first.
    All-zero weights split equally.
    """
    keys = sorted(weights)
    if not keys:
        return {}
    weight_sum = sum(weights.values())
    if weight_sum <= 0:
        weights = dict.fromkeys(keys, 1.0)
        weight_sum = float(len(keys))
    exact = {k: total * weights[k] / weight_sum for k in keys}
    parts = {k: math.floor(exact[k]) for k in keys}
    left = total - sum(parts.values())
    for k in sorted(keys, key=lambda k: (-(exact[k] - parts[k]), k))[:left]:
        parts[k] += 1
    return parts


def stable_hash(text: str) -> int:
    """A process-independent hash (``hash()`` of a str changes with PYTHONHASHSEED)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def noisy_estimate(duration: int, sigma: float, seed: int, job_name: str) -> int:
    """The runtime a user would declare: the true duration, or with ``sigma`` > 0 a log-normal
    multiplicative error ``duration * exp(sigma * Z)``, Z ~ N(0, 1).

    Z is drawn from a generator seeded by (seed, job name), so a job's estimate does not depend
    on which other jobs a window or ``max_jobs`` selected.
    """
    if sigma == 0:
        return duration
    z = random.Random(f"{seed}:{job_name}").gauss(0.0, 1.0)
    return max(1, round(duration * math.exp(sigma * z)))


def whole_seconds(seconds: float) -> int:
    """Durations in the scenario are whole seconds, at least 1 (a job that ran ran)."""
    return max(1, round(seconds))


def number(value: float) -> int | float:
    """A YAML-friendly number: ints stay ints (``6.0`` -> ``6``)."""
    return int(value) if float(value).is_integer() else value


def std_service_class() -> dict[str, Any]:
    return {"name": "std", "priority": 100, "preemptible": True, "can_borrow": True}


def scenario_dict(
    *,
    name: str,
    cycle_interval: float,
    flavors: Sequence[Mapping[str, Any]],
    clusters: Sequence[Mapping[str, Any]],
    service_classes: Sequence[Mapping[str, Any]],
    queues: Sequence[Mapping[str, Any]],
    jobs: Iterable[Mapping[str, Any]],
) -> ScenarioDict:
    """The keys of docs/SCENARIOS.md, in the documented order."""
    return {
        "name": name,
        "cycle_interval": number(cycle_interval),
        "flavors": [dict(f) for f in flavors],
        "clusters": [dict(c) for c in clusters],
        "service_classes": [dict(s) for s in service_classes],
        "queues": [dict(q) for q in queues],
        "jobs": [dict(j) for j in jobs],
    }


def rebase(jobs: list[dict[str, Any]]) -> None:
    """Shift submit times so the first selected job is submitted at 0 (in place)."""
    if not jobs:
        return
    first = min(j["submit_at"] for j in jobs)
    for job in jobs:
        job["submit_at"] = number(job["submit_at"] - first)
