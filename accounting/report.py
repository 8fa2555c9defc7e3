"""The usage report page (/chargeback/report/, as Slurm's sreport): GPU-hours, cost and
utilization per team or department (the queue's cohort) over a period by day, week or month, a
stacked bar chart (server-side SVG) and the allocation API's CSV as export. Finance and
platform admins only.

Numbers are the allocation API's (`accounting.allocation`): cost per team per step from the
ledger, capacity and idle from the recorded capacity history (`accounting.idle`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from accounting import allocation, rating
from accounting.chargeback import ParameterError, parse_period
from accounting.idle import idle_lines
from accounting.models import UsageRecord
from accounting.pricing import currency
from dashboards.figures import colour_of
from gpuplatform import access

STEPS = ("day", "week", "month")
GROUPS = ("team", "department")
CHART_WIDTH, CHART_HEIGHT = 720, 240


@dataclass
class Line:
    start: str
    costs: dict[str, Decimal]
    gpu_hours: Decimal
    cost: Decimal
    capacity_hours: Decimal
    allocated_hours: Decimal
    bars: list[dict[str, Any]] = field(default_factory=list)

    @property
    def utilization(self) -> str:
        if not self.capacity_hours:
            return ""
        return f"{100 * self.allocated_hours / self.capacity_hours:.1f} %"


def _lines(period: allocation.Period, step: str, by: str) -> tuple[list[Line], list[str]]:
    records = UsageRecord.objects.all()
    parts = allocation.steps(period, allocation.parse_step(step))
    sets = allocation.allocation_sets(
        records,
        records,
        period,
        allocation.parse_step(step),
        (by,),
        accumulate=False,
        include_idle=False,
        share_idle=False,
    )
    lines: list[Line] = []
    groups: set[str] = set()
    for part, one in zip(parts, sets, strict=True):
        idle = idle_lines(part)
        costs = {name: rating.quantize_money(item.totals.cost) for name, item in one.items()}
        groups.update(costs)
        lines.append(
            Line(
                start=f"{part.start:%Y-%m-%d}",
                costs=costs,
                gpu_hours=rating.quantize_hours(
                    sum((i.totals.gpu_hours for i in one.values()), Decimal(0))
                ),
                cost=sum(costs.values(), Decimal(0)),
                capacity_hours=sum((i.capacity_gpu_equivalent_hours for i in idle), Decimal(0)),
                allocated_hours=sum((i.allocated_gpu_equivalent_hours for i in idle), Decimal(0)),
            )
        )
    return lines, sorted(groups)


def _chart(lines: list[Line], teams: list[str]) -> None:
    """Stacked bars (SVG coordinates) per line, tallest = chart height."""
    top = max((line.cost for line in lines), default=Decimal(0)) or Decimal(1)
    width = CHART_WIDTH / max(len(lines), 1)
    for index, line in enumerate(lines):
        y = Decimal(CHART_HEIGHT)
        for team in teams:
            height = Decimal(CHART_HEIGHT) * line.costs.get(team, Decimal(0)) / top
            if height <= 0:
                continue
            y -= height
            line.bars.append(
                {
                    "x": f"{index * width + 1:.1f}",
                    "y": f"{y:.1f}",
                    "width": f"{max(width - 2, 1):.1f}",
                    "height": f"{height:.1f}",
                    "colour": colour_of(team),
                    "title": f"{team} {line.start}: {line.costs[team]}",
                }
            )


@login_required
def report_page(request: HttpRequest) -> HttpResponse:
    if not access.is_platform_admin_or_finance(request.user):
        raise PermissionDenied("The usage report is for finance and platform admins.")
    now = timezone.now()
    step = request.GET.get("step", "day")
    by = request.GET.get("by", "team")
    error = ""
    if step not in STEPS:
        error, step = f"step={step!r}: choose day, week or month.", "day"
    if by not in GROUPS:
        error, by = f"by={by!r}: choose team or department.", "team"
    try:
        period = parse_period(request.GET.get("start"), request.GET.get("end"), now)
        lines, teams = _lines(period, step, by)
    except (ParameterError, rating.RatingError) as problem:
        error = str(problem)
        period = parse_period(None, None, now)
        lines, teams = [], []
    _chart(lines, teams)
    window = f"{period.start:%Y-%m-%dT%H:%M:%SZ},{period.end:%Y-%m-%dT%H:%M:%SZ}"
    export = {"window": window, "step": step, "aggregate": by, "format": "csv"}
    return render(
        request,
        "accounting/report.html",
        {
            "start": f"{period.start:%Y-%m-%d}",
            "end": f"{period.end:%Y-%m-%d}",
            "step": step,
            "steps": STEPS,
            "by": by,
            "groups": GROUPS,
            "lines": lines,
            "teams": [(team, colour_of(team)) for team in teams],
            "currency": currency(),
            "error": error,
            "csv_url": f"{reverse('allocation-api')}?{urlencode(export)}",
            "chart": {"width": CHART_WIDTH, "height": CHART_HEIGHT},
        },
    )
