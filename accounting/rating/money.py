"""The one place where amounts and hours are rounded.

Rule: every money amount is rounded exactly once, by `quantize_money`, at the moment it becomes a
line (a `Charge`, a cluster's idle cost, an idle share). Everything above a line (job totals,
group rows, statement totals) is a plain sum of rounded lines and is never rounded again, so a
total always equals the sum of its lines to the cent. Splitting an interval into more lines can
therefore move its total by at most half a minor unit per line.

Hours are quantized the same way (per line, then summed) to `HOURS_QUANTUM` = 0.000001 h (3.6 ms),
ROUND_HALF_EVEN. Seconds are never rounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Context, Decimal, localcontext
from fractions import Fraction

from accounting.rating.model import RatingError

DEFAULT_MINOR_UNITS = 2
HOURS_QUANTUM = Decimal("0.000001")
SECONDS_PER_HOUR = Decimal(3600)
# Precision for intermediate products: wide enough that a product of a few user-given Decimals
# is exact and a division by 3600 is off by far less than any quantum we round to.
WORK_CONTEXT = Context(prec=60)


def quantize_money(amount: Decimal, minor_units: int = DEFAULT_MINOR_UNITS) -> Decimal:
    """Round `amount` to `minor_units` decimal places (2 = cents), ROUND_HALF_EVEN."""
    return amount.quantize(Decimal(1).scaleb(-minor_units), rounding=ROUND_HALF_EVEN)


def quantize_hours(hours: Decimal) -> Decimal:
    """Round hours to HOURS_QUANTUM, ROUND_HALF_EVEN."""
    return hours.quantize(HOURS_QUANTUM, rounding=ROUND_HALF_EVEN)


def exact_seconds(delta: timedelta) -> Decimal:
    """The length of `delta` in seconds, exact to the microsecond."""
    whole = delta.days * 86_400 + delta.seconds
    return Decimal(whole) + Decimal(delta.microseconds).scaleb(-6)


def hours_of(quantity: Decimal, seconds: Decimal) -> Decimal:
    """`quantity` x seconds / 3600, unrounded (60 significant digits)."""
    with localcontext(WORK_CONTEXT):
        return quantity * seconds / SECONDS_PER_HOUR


def product(*factors: Decimal) -> Decimal:
    """Exact product of Decimals (60 significant digits)."""
    result = Decimal(1)
    with localcontext(WORK_CONTEXT):
        for factor in factors:
            result = result * factor
    return result


def allocate_largest_remainder(
    total: Decimal, weights: Sequence[Decimal], minor_units: int = DEFAULT_MINOR_UNITS
) -> list[Decimal]:
    """Split the money amount `total` into shares proportional to `weights`, in whole minor
    units, so that the shares sum to `total` exactly (largest-remainder / Hamilton method).

    Each share is the exact proportional amount rounded down to a minor unit; the minor units
    left over go one each to the largest remainders, ties to the earlier weight. No share is ever
    more than one minor unit away from its exact proportion.
    """
    if quantize_money(total, minor_units) != total:
        raise RatingError(f"total to allocate must already be rounded to money, got {total}")
    if not weights:
        raise RatingError("cannot allocate an amount over no weights")
    if any(weight < 0 for weight in weights):
        raise RatingError(f"allocation weights must be zero or more, got {list(weights)}")
    weight_sum = sum((Fraction(weight) for weight in weights), Fraction(0))
    if weight_sum == 0:
        raise RatingError("cannot allocate an amount over weights that are all zero")
    total_minor = int(total.scaleb(minor_units))
    exact = [Fraction(total_minor) * Fraction(weight) / weight_sum for weight in weights]
    shares = [share.numerator // share.denominator for share in exact]  # floor, also if negative
    left_over = total_minor - sum(shares)
    by_remainder = sorted(range(len(exact)), key=lambda i: (-(exact[i] - shares[i]), i))
    for index in by_remainder[:left_over]:
        shares[index] += 1
    return [quantize_money(Decimal(share).scaleb(-minor_units), minor_units) for share in shares]
