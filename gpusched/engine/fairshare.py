"""Fair share over time (docs/SCHEDULING.md section 5).

``H(q)`` is decayed GPU-equivalent-seconds, halved every ``half_life``. A queue's score is
``(H / tau + U) / weight`` with ``tau = half_life / ln 2`` (lower runs first). Dashboards also
show Slurm's factor ``2^(-usage_fraction / share_fraction)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

DEFAULT_HALF_LIFE = 7 * 24 * 3600.0


def tau(half_life: float) -> float:
    """Mean lifetime of decayed usage: turns decayed GPU-seconds into an average GPU count."""
    return half_life / math.log(2)


def decay_factor(elapsed: float, half_life: float) -> float:
    """What is left of decayed usage after ``elapsed`` seconds."""
    return math.exp(-elapsed / tau(half_life))


def decay_usage(
    h: float, rate: float, elapsed: float, half_life: float, keep: float | None = None
) -> float:
    """H after ``elapsed`` seconds at a constant ``rate`` of GPU-equivalents.

    Exact integral of ``dH/dt = rate - H / tau``: the old history halves every half-life and
    what ran in between is added with the decay it has already undergone. ``keep``: the
    ``decay_factor`` for these seconds, when the caller decays many queues at once.
    """
    if elapsed <= 0:
        return h
    if keep is None:
        keep = decay_factor(elapsed, half_life)
    return h * keep + rate * tau(half_life) * (1.0 - keep)


def score(decayed_usage: float, usage: float, weight: float, half_life: float) -> float:
    """Fair-share score of a queue: lower is served first."""
    return (decayed_usage / tau(half_life) + usage) / weight


def slurm_factor(usage_fraction: float, share_fraction: float) -> float:
    """Slurm's classic fair-share factor; 0.5 means exactly at its share, 1.0 unused."""
    if share_fraction <= 0:
        return 0.0
    return float(2.0 ** (-usage_fraction / share_fraction))


def slurm_factors(decayed: Mapping[str, float], weights: Mapping[str, float]) -> dict[str, float]:
    """Factor per queue: its fraction of all decayed usage against its fraction of all weight."""
    total_usage = sum(decayed.values())
    total_weight = sum(weights.values())
    out: dict[str, float] = {}
    for name, weight in weights.items():
        usage_fraction = decayed.get(name, 0.0) / total_usage if total_usage > 0 else 0.0
        share_fraction = weight / total_weight if total_weight > 0 else 0.0
        out[name] = slurm_factor(usage_fraction, share_fraction)
    return out
