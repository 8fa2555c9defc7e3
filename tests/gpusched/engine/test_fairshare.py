"""Fair share over time (SCHEDULING.md section 5)."""

from __future__ import annotations

import math

import pytest

from gpusched.engine import fairshare
from gpusched.engine.cycle import run_cycle
from tests.gpusched.engine_builders import nodes, pending, queue, snapshot

WEEK = 7 * 24 * 3600.0


def test_decayed_usage_halves_every_half_life_when_idle() -> None:
    assert fairshare.decay_usage(1000.0, 0.0, WEEK, WEEK) == pytest.approx(500.0)


def test_steady_usage_converges_to_rate_times_tau() -> None:
    h = fairshare.decay_usage(0.0, 8.0, 50 * WEEK, WEEK)
    assert h / fairshare.tau(WEEK) == pytest.approx(8.0, rel=1e-6)


def test_tau_turns_decayed_seconds_into_an_average_gpu_count() -> None:
    assert fairshare.tau(WEEK) == pytest.approx(WEEK / math.log(2))


def test_score_divides_by_weight() -> None:
    assert fairshare.score(0.0, 4.0, 2.0, WEEK) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("usage_fraction", "share_fraction", "factor"),
    [(0.25, 0.25, 0.5), (0.0, 0.25, 1.0), (0.5, 0.25, 0.25)],
)
def test_slurm_factor(usage_fraction: float, share_fraction: float, factor: float) -> None:
    assert fairshare.slurm_factor(usage_fraction, share_fraction) == pytest.approx(factor)


def test_slurm_factors_per_queue_use_fractions_of_usage_and_weight() -> None:
    factors = fairshare.slurm_factors({"a": 300.0, "b": 100.0}, {"a": 1.0, "b": 1.0})
    assert factors["a"] == pytest.approx(2 ** (-0.75 / 0.5))
    assert factors["b"] == pytest.approx(2 ** (-0.25 / 0.5))


def test_a_queue_that_ran_a_burst_last_week_waits_behind_one_that_did_not() -> None:
    burst = fairshare.decay_usage(0.0, 64.0, WEEK, WEEK)  # a week at 64 GPUs, just ended
    queues = [queue("busy", 4, decayed_usage=burst), queue("quiet", 4)]
    jobs = [
        pending("b", "busy", gpus=8, submitted_at=0),
        pending("q", "quiet", gpus=8, submitted_at=5),
    ]
    cohort = [queue("busy", 4, cohort="c", decayed_usage=burst), queue("quiet", 4, cohort="c")]
    result = run_cycle(snapshot(nodes("n", 1, {"h100": 8}), cohort, (), jobs))
    assert [a.job for a in result.admits] == ["q"]
    assert queues  # both queues equally at zero current usage
