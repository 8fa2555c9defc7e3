"""JOB_SUBMIT_RATE is checked at start-up."""

from __future__ import annotations

import pytest

from tests.gpuplatform.test_settings import start_django


def test_a_malformed_submission_rate_stops_start_up_naming_the_variable() -> None:
    result = start_django(JOB_SUBMIT_RATE="lots")
    assert result.returncode != 0
    assert "JOB_SUBMIT_RATE='lots' is not a rate" in result.stderr


@pytest.mark.parametrize("rate", ["5/s", "10000/day"])
def test_well_formed_submission_rates_start(rate: str) -> None:
    result = start_django(JOB_SUBMIT_RATE=rate)
    assert result.returncode == 0, result.stderr
