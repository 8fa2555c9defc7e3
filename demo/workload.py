"""What the demo teams submit: one profile per team, drawn with a seeded random generator.

Shared by the history replay (``demo.history``) and the live traffic task (``demo.traffic``), so
the month of history and the live demo look alike. Pure Python (no Django): times in, job
requests out.

- team-a (alice): the heavy borrower -- big standard jobs on H100 beyond its quota, spot fillers.
- team-b (bob): steady -- production and standard jobs on A100, day and night alike.
- team-c (carol): bursty -- a little work, and on some days a burst of gangs (2 x 4 and a
  2 x 8 spot sweep) plus a production job that reclaims its nominal H100s from the borrowers.
- team-d (dave): MIG slices -- notebooks and small inference jobs on 1g.10gb / 3g.40gb.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

DEMO_SEED = 20261122


@dataclass(frozen=True)
class Shape:
    """One kind of job a team submits (``weight``: how often, relative to its other shapes)."""

    weight: float
    service_class: str
    flavors: tuple[str, ...]
    workers: int
    gpus_per_worker: int
    hours: tuple[float, float]  # run time, drawn uniformly (simulated hours)
    name: str


@dataclass(frozen=True)
class TeamProfile:
    team: str
    user: str
    queue: str
    peak_per_hour: float  # mean submissions per hour at daytime on a weekday
    night_factor: float  # share of the daytime rate at night and on weekends
    shapes: tuple[Shape, ...]
    burst_chance: float = 0.0  # per day: a burst of `burst` jobs at a random daytime hour
    burst: tuple[Shape, ...] = ()


@dataclass(frozen=True)
class JobRequest:
    team: str
    user: str
    queue: str
    service_class: str
    flavors: tuple[str, ...]
    workers: int
    gpus_per_worker: int
    runtime_seconds: int
    name: str


PROFILES: tuple[TeamProfile, ...] = (
    TeamProfile(
        team="team-a",
        user="alice",
        queue="main",
        peak_per_hour=0.7,
        night_factor=0.4,
        shapes=(
            Shape(4, "standard", ("h100", "a100-80gb"), 1, 8, (3, 8), "resnet-sweep"),
            Shape(1, "standard", ("h100",), 2, 8, (6, 12), "vit-pretrain"),
            Shape(3, "spot", ("h100", "a100-80gb"), 1, 4, (1, 3), "augment-search"),
        ),
    ),
    TeamProfile(
        team="team-b",
        user="bob",
        queue="main",
        peak_per_hour=0.45,
        night_factor=0.9,
        shapes=(
            Shape(1, "production", ("a100-80gb",), 1, 4, (4, 8), "llm-eval-nightly"),
            Shape(3, "standard", ("a100-80gb", "h100"), 1, 4, (2, 6), "tokenizer-train"),
        ),
    ),
    TeamProfile(
        team="team-c",
        user="carol",
        queue="main",
        peak_per_hour=0.2,
        night_factor=0.3,
        shapes=(Shape(1, "standard", ("h100",), 1, 1, (1, 2), "sim-debug"),),
        burst_chance=0.3,
        burst=(
            Shape(1, "production", ("h100",), 1, 8, (3, 6), "policy-release"),
            Shape(1, "standard", ("h100",), 2, 4, (4, 10), "rl-gang"),
            Shape(1, "standard", ("h100",), 2, 4, (4, 10), "rl-gang"),
            Shape(1, "spot", ("h100", "a100-80gb"), 2, 8, (2, 6), "rl-sweep"),
        ),
    ),
    TeamProfile(
        team="team-d",
        user="dave",
        queue="main",
        peak_per_hour=1.5,
        night_factor=0.15,
        shapes=(
            Shape(5, "standard", ("h100-1g.10gb",), 1, 1, (2, 10), "notebook"),
            Shape(2, "standard", ("h100-3g.40gb", "h100-1g.10gb"), 1, 1, (6, 24), "serve-canary"),
            Shape(2, "spot", ("h100-1g.10gb",), 1, 2, (1, 3), "batch-embed"),
        ),
    ),
)


def estimated_runtime(request: JobRequest) -> int:
    """What the researcher tells backfill (seconds): users over-estimate, the run takes
    ``runtime_seconds``."""
    return int(request.runtime_seconds * 1.25) // 600 * 600 + 600


def rate_factor(moment: datetime, night_factor: float) -> float:
    """Share of a team's peak rate at ``moment``: 1 on weekday daytime (08:00-20:00 UTC), at
    least half on weekend days, the team's night factor at night."""
    if not 8 <= moment.hour < 20:
        return night_factor
    return 1.0 if moment.weekday() < 5 else max(0.5, night_factor)


def poisson(rng: random.Random, mean: float) -> int:
    """A Poisson-distributed count (Knuth's method; the means here are small)."""
    if mean <= 0:
        return 0
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def _request(rng: random.Random, profile: TeamProfile, shape: Shape) -> JobRequest:
    low, high = shape.hours
    return JobRequest(
        team=profile.team,
        user=profile.user,
        queue=profile.queue,
        service_class=shape.service_class,
        flavors=shape.flavors,
        workers=shape.workers,
        gpus_per_worker=shape.gpus_per_worker,
        runtime_seconds=int(3600 * rng.uniform(low, high)),
        name=f"{shape.name}-{rng.randrange(16**4):04x}",
    )


def draw_requests(
    rng: random.Random, start: datetime, span: timedelta, clock: datetime | None = None
) -> list[JobRequest]:
    """The jobs the demo teams submit during ``span`` from ``start``. ``clock`` (default
    ``start``) picks the time of day and week that sets the rate."""
    moment = clock or start
    hours = span.total_seconds() / 3600
    out: list[JobRequest] = []
    for profile in PROFILES:
        rate = profile.peak_per_hour * rate_factor(moment, profile.night_factor)
        weights = [s.weight for s in profile.shapes]
        for _ in range(poisson(rng, rate * hours)):
            out.append(_request(rng, profile, rng.choices(profile.shapes, weights)[0]))
        # About `burst_chance` bursts per weekday, starting in its daytime hours.
        daytime = moment.weekday() < 5 and 8 <= moment.hour < 20
        if profile.burst and daytime and rng.random() < profile.burst_chance * hours / 12:
            out.extend(_request(rng, profile, shape) for shape in profile.burst)
    return out
