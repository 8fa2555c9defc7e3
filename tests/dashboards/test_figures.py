"""The figure builders are pure: known plain data in, the right traces, stacking and titles out.
No Django and no database here."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import plotly.graph_objects as go
import pytest

from dashboards import figures
from dashboards.plain import (
    BurnDown,
    FairShareRow,
    FlavorUtilization,
    MonthlyCosts,
    NodeSlots,
    PreemptionSeries,
    QuotaRow,
    Slot,
    UsageSeries,
    WaitRow,
    percentile,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def titles(fig: dict[str, Any]) -> tuple[str, str, str]:
    layout = fig["layout"]
    return (
        layout["title"]["text"],
        layout["xaxis"]["title"]["text"],
        layout["yaxis"]["title"]["text"],
    )


def series() -> UsageSeries:
    return UsageSeries(
        range_label="last hour",
        bucket_seconds=300,
        buckets=(T0, T0 + timedelta(minutes=5)),
        stacks={"team-a": (2.0, 3.5), "team-b": (1.0, 0.0)},
        capacity=(16.0, 16.0),
        failed=(0.0, 8.0),
    )


def fair_rows() -> list[FairShareRow]:
    return [
        FairShareRow("team-a/main", 1.0, 10.0, 0.8, 0.5, 2 ** (-0.8 / 0.5), 1.2, 4.0, 0, 0.5),
        FairShareRow("team-b/main", 1.0, 2.5, 0.2, 0.5, 2 ** (-0.2 / 0.5), 0.3, 0.0, 3, 0.0),
    ]


def test_usage_over_time_stacks_one_area_per_team_under_capacity_and_failed_lines() -> None:
    fig = figures.usage_over_time(series())
    names = [t["name"] for t in fig["data"]]
    assert names == ["team-a", "team-b", "Capacity", "Failed"]
    assert [t.get("stackgroup") for t in fig["data"]] == ["usage", "usage", None, None]
    assert fig["data"][0]["x"] == ["2026-03-02 09:00", "2026-03-02 09:05"]
    assert fig["data"][0]["y"] == [2.0, 3.5]
    assert fig["data"][3]["y"] == [0.0, 8.0]
    assert titles(fig) == (
        "GPUs allocated by team, last hour (5 min averages)",
        "Time (UTC)",
        "GPUs allocated (GPU-equivalents)",
    )


def test_usage_over_time_names_hourly_buckets_in_hours() -> None:
    hourly = UsageSeries("last week", 3600, (T0,), {"h100": (1.0,)}, stacked_by="flavor")
    fig = figures.usage_over_time(hourly)
    assert titles(fig)[0] == "GPUs allocated by flavor, last week (1 h averages)"
    assert [t["name"] for t in fig["data"]] == ["h100"]  # no capacity lines without samples


def test_flavor_utilization_stacks_used_free_and_failed_units() -> None:
    fig = figures.flavor_utilization(
        [FlavorUtilization("h100", 16, 6, 8), FlavorUtilization("h100-1g.10gb", 14, 7, 0)]
    )
    assert fig["layout"]["barmode"] == "stack"
    assert [(t["name"], t["y"]) for t in fig["data"]] == [
        ("Used", [6, 7]),
        ("Free", [2, 7]),
        ("Failed", [8, 0]),
    ]
    assert fig["data"][0]["text"] == ["75 %", "50 %"]
    assert titles(fig) == ("Current utilization per flavor", "Flavor", "Units (GPUs or MIG slices)")


def test_quota_usage_groups_nominal_used_borrowed_and_lent_per_queue_and_flavor() -> None:
    fig = figures.quota_usage(
        [QuotaRow("team-a/main", "h100", 8, 12, 4, 0), QuotaRow("team-b/main", "h100", 8, 4, 0, 4)]
    )
    assert fig["layout"]["barmode"] == "group"
    assert fig["data"][0]["x"] == ["team-a/main · h100", "team-b/main · h100"]
    assert {t["name"]: t["y"] for t in fig["data"]} == {
        "Nominal": [8, 8],
        "Used": [12, 4],
        "Borrowed": [4, 0],
        "Lent": [0, 4],
    }
    assert titles(fig)[2] == "Units (GPUs or MIG slices)"


def test_queue_shares_plot_the_engines_share_and_colour_over_and_starved_queues() -> None:
    fig = figures.queue_shares(fair_rows())
    trace = fig["data"][0]
    assert trace["x"] == ["team-a/main", "team-b/main"]
    assert trace["y"] == [0.5, 0.0]
    assert trace["marker"]["color"] == [figures.FAILED_COLOUR, "#ff7f0e"]  # over, starved
    assert "GPUs above nominal quota / cohort pool / weight" in titles(fig)[0]


def test_usage_vs_share_shows_both_fractions_in_percent() -> None:
    fig = figures.usage_vs_share(fair_rows())
    assert [(t["name"], t["y"]) for t in fig["data"]] == [
        ("Decayed usage share", [80.0, 20.0]),
        ("Fair share (weight)", [50.0, 50.0]),
    ]
    assert titles(fig)[2] == "Share of all queues (%)"


def test_slice_map_has_one_row_per_node_and_flavor_and_a_cell_per_slice() -> None:
    nodes = [
        NodeSlots(
            "sim/mig-1", "h100-1g.10gb", "all-1g.10gb", True, True,
            (Slot("team-a", "#3 infer"), Slot("team-b", "#4 nb"), Slot()),
        ),
        NodeSlots("sim/gpu-1", "h100", "", False, False, (Slot(), Slot())),
    ]  # fmt: skip
    fig = figures.slice_map(nodes, "MIG slices per node")
    heat = fig["data"][0]
    assert heat["type"] == "heatmap"
    assert heat["y"] == ["sim/mig-1 · h100-1g.10gb [all-1g.10gb]", "sim/gpu-1 · h100"]
    assert heat["x"] == [1, 2, 3]
    assert heat["z"] == [[2, 3, 0], [1, 1, None]]  # teams 2.., free 0, failed node 1, padding
    assert heat["text"][0] == ["team-a #3 infer", "team-b #4 nb", "free"]
    assert heat["text"][1] == ["failed", "failed", ""]
    legend = [t["name"] for t in fig["data"][1:]]
    assert legend == ["team-a", "team-b", "free", "failed node"]
    assert titles(fig) == (
        "MIG slices per node",
        "Slot (one GPU or MIG slice)",
        "Node · flavor [MIG configuration]",
    )


def test_wait_times_and_pending_jobs_per_queue_and_class() -> None:
    rows = [
        WaitRow("team-a/main", "standard", 2, 10, 1.5, 30.0),
        WaitRow("team-a/main", "spot", 0, 0, None, None),
    ]
    waits = figures.wait_times(rows, days=7)
    assert [(t["name"], t["y"]) for t in waits["data"]] == [
        ("p50 wait", [1.5, None]),
        ("p95 wait", [30.0, None]),
    ]
    assert titles(waits)[2] == "Wait (minutes)"
    pending = figures.pending_jobs(rows)
    assert pending["data"][0]["y"] == [2, 0]
    assert titles(pending)[2] == "Jobs (count)"


def test_preemptions_stack_one_trace_per_reason_per_day() -> None:
    fig = figures.preemptions(
        PreemptionSeries(
            days=(date(2026, 3, 1), date(2026, 3, 2)),
            by_reason={"fair-share": (0, 2), "reclaim": (1, 1)},
        )
    )
    assert fig["layout"]["barmode"] == "stack"
    assert [(t["name"], t["x"], t["y"]) for t in fig["data"]] == [
        ("fair-share", ["2026-03-01", "2026-03-02"], [0, 2]),
        ("reclaim", ["2026-03-01", "2026-03-02"], [1, 1]),
    ]
    assert titles(fig) == ("Preemptions per day by reason", "Day (UTC)", "Preemptions (count)")


def test_monthly_costs_stack_teams_per_month_in_the_currency() -> None:
    costs = MonthlyCosts("USD", ("2026-02", "2026-03"), {"team-a": (10.0, 20.5), "team-b": (0, 3)})
    fig = figures.monthly_costs(costs, "team")
    assert fig["layout"]["barmode"] == "stack"
    assert [(t["name"], t["y"]) for t in fig["data"]] == [
        ("team-a", [10.0, 20.5]),
        ("team-b", [0, 3]),
    ]
    assert titles(fig) == ("Cost per team per month", "Month (UTC)", "Cost (USD)")


def test_budget_burn_down_draws_remaining_and_even_spend_per_team() -> None:
    burn = BurnDown(
        "team-a", "USD", 100.0, (date(2026, 3, 1), date(2026, 3, 2)), (90.0, 70.0), (96.77, 93.55)
    )
    fig = figures.budget_burn_down([burn], "2026-03")
    assert [(t["name"], t["y"]) for t in fig["data"]] == [
        ("team-a remaining", [90.0, 70.0]),
        ("team-a even spend", [96.77, 93.55]),
    ]
    assert titles(fig) == (
        "Budget burn-down, 2026-03",
        "Day (UTC, end of day)",
        "Budget left (USD)",
    )


def test_table_fallback_holds_the_figures_numbers() -> None:
    table = figures.table_of(figures.usage_over_time(series()))
    assert table["caption"] == "GPUs allocated by team, last hour (5 min averages)"
    assert table["columns"] == [
        "Time (UTC)",
        "team-a — GPUs allocated (GPU-equivalents)",
        "team-b — GPUs allocated (GPU-equivalents)",
        "Capacity — GPUs allocated (GPU-equivalents)",
        "Failed — GPUs allocated (GPU-equivalents)",
    ]
    assert table["rows"] == [
        ["2026-03-02 09:00", 2.0, 1.0, 16.0, 0.0],
        ["2026-03-02 09:05", 3.5, 0.0, 16.0, 8.0],
    ]


def test_table_fallback_of_a_slice_map_lists_each_cell() -> None:
    nodes = [NodeSlots("sim/n1", "h100", "", True, False, (Slot("team-a", "#1 t"), Slot()))]
    table = figures.table_of(figures.slice_map(nodes, "Whole GPUs per node"))
    assert table["columns"] == ["Node · flavor [MIG configuration]", "Slot 1", "Slot 2"]
    assert table["rows"] == [["sim/n1 · h100", "team-a #1 t", "free"]]


FIGURES = [
    lambda: figures.usage_over_time(series()),
    lambda: figures.flavor_utilization([FlavorUtilization("h100", 8, 2, 0)]),
    lambda: figures.quota_usage([QuotaRow("a/q", "h100", 1, 1, 0, 0)]),
    lambda: figures.queue_shares(fair_rows()),
    lambda: figures.usage_vs_share(fair_rows()),
    lambda: figures.slice_map([NodeSlots("c/n", "h100", "", True, False, (Slot(),))], "Map"),
    lambda: figures.wait_times([WaitRow("a/q", "std", 1, 1, 1.0, 1.0)], 7),
    lambda: figures.preemptions(PreemptionSeries((date(2026, 3, 1),), {"reclaim": (1,)})),
    lambda: figures.monthly_costs(MonthlyCosts("USD", ("2026-03",), {"a": (1.0,)}), "team"),
]


@pytest.mark.parametrize("build", FIGURES)
def test_every_figure_is_valid_plotly(build: Any) -> None:
    fig = build()
    go.Figure(fig)  # raises on any property Plotly does not know
    assert all(titles(fig))


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert percentile(values, 50) == 10.0
    assert percentile(values, 95) == 19.0
    assert percentile([5.0], 95) == 5.0
    assert percentile([], 50) is None


@pytest.mark.parametrize("module", ["dashboards/figures.py", "dashboards/plain.py"])
def test_figure_builders_and_their_inputs_import_no_django(module: str) -> None:
    import ast
    from pathlib import Path

    source = (Path(__file__).resolve().parents[2] / module).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    allowed = {"__future__", "collections.abc", "dataclasses", "datetime", "math", "typing"}
    assert imported <= allowed | {"zlib", "dashboards.plain"}, imported
