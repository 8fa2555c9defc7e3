"""PURE figure builders: plain data (dashboards.plain) in, Plotly figure dicts out.

No Django and no ORM here. Every figure has a title and axis titles with units; `table_of`
derives the accessible table fallback from a figure, so the table always holds the figure's own
numbers. Colours are stable per name (a team keeps its colour across refreshes).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from dashboards.plain import (
    OTHER_WORKLOADS,
    BurnDown,
    FairShareRow,
    FlavorUtilization,
    MonthlyCosts,
    NodeSlots,
    PreemptionSeries,
    QuotaRow,
    ShareTreeRow,
    UsageSeries,
    WaitRow,
)

Figure = dict[str, Any]

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#6baed6", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
)  # fmt: skip
FREE_COLOUR = "#e8ecf2"
FAILED_COLOUR = "#a40000"
CAPACITY_COLOUR = "#1d2330"
OTHER_WORKLOADS_COLOUR = "#8a8f98"  # GPUs held by pods the platform did not create
GPU_EQ = "GPU-equivalents"


def colour_of(name: str) -> str:
    """A colour from the palette, fixed by the name (other workloads: always grey)."""
    if name == OTHER_WORKLOADS:
        return OTHER_WORKLOADS_COLOUR
    return PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]


def _r(value: float | None, places: int = 3) -> float | None:
    return None if value is None else round(float(value), places)


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title},
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "rangemode": "tozero", "automargin": True},
        "margin": {"l": 70, "r": 20, "t": 90, "b": 60},
        "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"},
        "height": 420,
        "showlegend": True,
    }
    for key, value in extra.items():
        if key in ("xaxis", "yaxis"):
            layout[key] |= value
        else:
            layout[key] = value
    return layout


# --- cluster overview -------------------------------------------------------------------------
def usage_over_time(series: UsageSeries) -> Figure:
    """Stacked areas of GPU-equivalents in use per team (or flavor), other workloads (pods the
    platform did not create) at the bottom, with capacity and failed GPU-equivalents as lines."""
    x = [_time(b) for b in series.buckets]
    data: list[dict[str, Any]] = []
    stacks = dict(series.stacks)
    if series.other:
        stacks = {OTHER_WORKLOADS: tuple(v or 0.0 for v in series.other), **stacks}
    for name, values in stacks.items():
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": x,
                "y": [_r(v) for v in values],
                "stackgroup": "usage",
                "line": {"width": 0.5, "color": colour_of(name), "shape": "hv"},
                "hovertemplate": f"{name}: %{{y:.2f}} {GPU_EQ}<extra></extra>",
            }
        )
    if series.capacity:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "Capacity",
                "x": x,
                "y": [_r(v) for v in series.capacity],
                "line": {"color": CAPACITY_COLOUR, "width": 2, "dash": "dash"},
                "marker": {"size": 3},
            }
        )
    if series.failed:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "Failed",
                "x": x,
                "y": [_r(v) for v in series.failed],
                "line": {"color": FAILED_COLOUR, "width": 2},
                "marker": {"size": 3},
            }
        )
    minutes = series.bucket_seconds // 60
    step = f"{minutes} min" if minutes < 60 else f"{minutes // 60} h"
    title = f"GPUs allocated by {series.stacked_by}, {series.range_label} ({step} averages)"
    return {
        "data": data,
        "layout": _layout(
            title, "Time (UTC)", f"GPUs allocated ({GPU_EQ})", xaxis={"type": "date"}
        ),
    }


def flavor_utilization(rows: Sequence[FlavorUtilization]) -> Figure:
    """Stacked bars per flavor: used, free, held by other workloads and failed units now."""
    x = [row.flavor for row in rows]
    parts = [
        ("Used", [row.used for row in rows], "#1f5fbf"),
        ("Free", [row.free for row in rows], "#9ab8e6"),
        ("Failed", [row.failed for row in rows], FAILED_COLOUR),
    ]
    if any(row.other for row in rows):
        parts.insert(2, ("Other workloads", [row.other for row in rows], OTHER_WORKLOADS_COLOUR))
    data = [
        {"type": "bar", "name": name, "x": x, "y": values, "marker": {"color": colour}}
        for name, values, colour in parts
    ]
    data[0]["text"] = [f"{row.percent_used:g} %" for row in rows]
    return {
        "data": data,
        "layout": _layout(
            "Current utilization per flavor",
            "Flavor",
            "Units (GPUs or MIG slices)",
            barmode="stack",
        ),
    }


# --- quotas and fair share --------------------------------------------------------------------
def quota_usage(rows: Sequence[QuotaRow]) -> Figure:
    """Grouped bars per queue and flavor: nominal, used, borrowed and lent units."""
    x = [f"{row.queue} · {row.flavor}" for row in rows]
    parts = (
        ("Nominal", [row.nominal for row in rows], "#7f7f7f"),
        ("Used", [row.used for row in rows], "#1f5fbf"),
        ("Borrowed", [row.borrowed for row in rows], "#ff7f0e"),
        ("Lent", [row.lent for row in rows], "#2ca02c"),
    )
    return {
        "data": [
            {"type": "bar", "name": name, "x": x, "y": values, "marker": {"color": colour}}
            for name, values, colour in parts
        ],
        "layout": _layout(
            "Quota per queue and flavor: nominal, used, borrowed, lent",
            "Queue · flavor",
            "Units (GPUs or MIG slices)",
            barmode="group",
        ),
    }


def queue_shares(rows: Sequence[FairShareRow]) -> Figure:
    """The engine's share per queue (the one meaning of "over its share", SHARE_MEANING):
    red over its share (borrowing; fair sharing may preempt it), orange starved (waiting within
    its quota), green within its share. A queue above its quota with no pool is drawn at the
    top of the axis."""
    x = [row.queue for row in rows]
    colours = [
        FAILED_COLOUR if row.over_share else "#ff7f0e" if row.starved else "#2ca02c" for row in rows
    ]
    finite = [row.share for row in rows if row.share != float("inf")]
    top = max([1.0, *finite])
    return {
        "data": [
            {
                "type": "bar",
                "name": "Share",
                "x": x,
                "y": [_r(top if row.share == float("inf") else row.share) for row in rows],
                "marker": {"color": colours},
            }
        ],
        "layout": _layout(
            "Share per queue: GPUs above nominal quota / cohort pool / weight "
            "(0 = within its quota; the highest share is preempted first)",
            "Queue",
            "Share (dimensionless)",
        ),
    }


def usage_vs_share(rows: Sequence[FairShareRow]) -> Figure:
    """Grouped bars per queue: its fraction of the decayed usage against its fraction of the
    weights, in percent."""
    x = [row.queue for row in rows]
    return {
        "data": [
            {
                "type": "bar",
                "name": "Decayed usage share",
                "x": x,
                "y": [_r(100 * row.usage_fraction, 2) for row in rows],
                "marker": {"color": "#1f5fbf"},
            },
            {
                "type": "bar",
                "name": "Fair share (weight)",
                "x": x,
                "y": [_r(100 * row.share_fraction, 2) for row in rows],
                "marker": {"color": "#7f7f7f"},
            },
        ],
        "layout": _layout(
            "Decayed usage against weight per queue (the ranking's history, not the share)",
            "Queue",
            "Share of all queues (%)",
            barmode="group",
        ),
    }


def share_tree_bars(rows: Sequence[ShareTreeRow]) -> Figure:
    """sshare's two columns side by side per queue: its part of its cohort's nominal
    (NormShares) and of its cohort's decayed usage (EffectvUsage), in percent."""
    queues = [row for row in rows if not row.is_cohort]
    x = [row.queue for row in queues]
    return {
        "data": [
            {
                "type": "bar",
                "name": "Effective usage (decayed, of the cohort's)",
                "x": x,
                "y": [_r(100 * row.effective_usage, 2) for row in queues],
                "marker": {"color": "#1f5fbf"},
            },
            {
                "type": "bar",
                "name": "Normalized shares (nominal, of the cohort's)",
                "x": x,
                "y": [_r(100 * row.norm_shares, 2) for row in queues],
                "marker": {"color": "#7f7f7f"},
            },
        ],
        "layout": _layout(
            "Effective usage against normalized shares per queue, within its cohort",
            "Queue",
            "Part of its cohort (%)",
            barmode="group",
        ),
    }


# --- MIG slice map ----------------------------------------------------------------------------
def slice_map(nodes: Sequence[NodeSlots], title: str) -> Figure:
    """A heatmap: one row per node and flavor, one cell per GPU or MIG slice, coloured by the
    team holding it (free cells light, cells of a failed node red); the hover names the job
    (when the slot carries it)."""
    teams = sorted({s.team for n in nodes for s in n.slots if s.team is not None})
    index = {team: i + 2 for i, team in enumerate(teams)}  # 0 free, 1 failed, 2.. teams
    width = max((len(n.slots) for n in nodes), default=0)
    y, z, text = [], [], []
    for n in nodes:
        config = f" [{n.mig_config}]" if n.mig_config else ""
        y.append(f"{n.node} · {n.flavor}{config}")
        row_z: list[int | None] = []
        row_text: list[str] = []
        for slot in n.slots:
            if slot.team is not None:
                row_z.append(index[slot.team])
                row_text.append(f"{slot.team} {slot.job}" if slot.job else slot.team)
            elif not n.ready:
                row_z.append(1)
                row_text.append("failed")
            else:
                row_z.append(0)
                row_text.append("free")
        row_z += [None] * (width - len(n.slots))
        row_text += [""] * (width - len(n.slots))
        z.append(row_z)
        text.append(row_text)
    colours = [FREE_COLOUR, FAILED_COLOUR] + [colour_of(team) for team in teams]
    top = max(len(colours) - 1, 1)
    scale = []
    for i, colour in enumerate(colours):
        scale += [[i / top if top else 0, colour], [i / top if top else 1, colour]]
    return {
        "data": [
            {
                "type": "heatmap",
                "name": title,
                "x": list(range(1, width + 1)),
                "y": y,
                "z": z,
                "text": text,
                "zmin": 0,
                "zmax": top,
                "colorscale": scale if len(colours) > 1 else [[0, FREE_COLOUR], [1, FREE_COLOUR]],
                "showscale": False,
                "xgap": 2,
                "ygap": 2,
                "hovertemplate": "%{y}, slot %{x}: %{text}<extra></extra>",
            }
        ]
        + [_legend_entry(name, colour_of(name)) for name in teams]
        + [_legend_entry("free", FREE_COLOUR), _legend_entry("failed node", FAILED_COLOUR)],
        "layout": _layout(
            title,
            "Slot (one GPU or MIG slice)",
            "Node · flavor [MIG configuration]",
            height=max(220, 60 + 34 * len(y)),
            yaxis={"automargin": True, "autorange": "reversed", "type": "category"},
            xaxis={"dtick": 1},
            margin={"l": 20, "r": 20, "t": 60, "b": 60},
        ),
    }


def _legend_entry(name: str, colour: str) -> dict[str, Any]:
    """A legend-only marker (heatmaps have no legend of their own)."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": [None],
        "y": [None],
        "marker": {"color": colour, "symbol": "square", "size": 12},
        "showlegend": True,
        "hoverinfo": "skip",
    }


# --- queue health -----------------------------------------------------------------------------
def wait_times(rows: Sequence[WaitRow], days: int) -> Figure:
    """Grouped bars per queue and class: p50 and p95 wait from submission to start."""
    x = [f"{row.queue} · {row.service_class}" for row in rows]
    return {
        "data": [
            {
                "type": "bar",
                "name": "p50 wait",
                "x": x,
                "y": [_r(row.p50_minutes, 1) for row in rows],
                "marker": {"color": "#1f5fbf"},
            },
            {
                "type": "bar",
                "name": "p95 wait",
                "x": x,
                "y": [_r(row.p95_minutes, 1) for row in rows],
                "marker": {"color": "#ff7f0e"},
            },
        ],
        "layout": _layout(
            f"Wait from submission to start, jobs started in the last {days} days",
            "Queue · service class",
            "Wait (minutes)",
            barmode="group",
        ),
    }


def pending_jobs(rows: Sequence[WaitRow]) -> Figure:
    x = [f"{row.queue} · {row.service_class}" for row in rows]
    return {
        "data": [
            {
                "type": "bar",
                "name": "Pending jobs",
                "x": x,
                "y": [row.pending for row in rows],
                "marker": {"color": "#8a5300"},
            }
        ],
        "layout": _layout("Pending jobs now", "Queue · service class", "Jobs (count)"),
    }


# one colour per stop reason, none shared (gpusched.engine.model.STOP_REASONS and the requeues)
REASON_COLOURS = {
    "priority": "#1f77b4",
    "reclaim": "#2ca02c",
    "fair-share": "#ff7f0e",
    "node-failure": FAILED_COLOUR,
    "node-drain": "#c49c94",
    "worker-failure": "#9467bd",
    "lost-workers": "#8c564b",
    "missing-workers": "#e377c2",
    "max-runtime": "#7f7f7f",
}
OTHER_REASON_COLOURS = ("#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#7b4173")


def reason_colour(reason: str) -> str:
    """The reason's own colour; another reason gets one no known reason uses."""
    if reason in REASON_COLOURS:
        return REASON_COLOURS[reason]
    return OTHER_REASON_COLOURS[zlib.crc32(reason.encode()) % len(OTHER_REASON_COLOURS)]


def preemptions(series: PreemptionSeries) -> Figure:
    """Stacked bars per UTC day: preemptions by reason."""
    x = [day.isoformat() for day in series.days]
    return {
        "data": [
            {
                "type": "bar",
                "name": reason,
                "x": x,
                "y": list(counts),
                "marker": {"color": reason_colour(reason)},
            }
            for reason, counts in series.by_reason.items()
        ],
        "layout": _layout(
            "Preemptions per day by reason",
            "Day (UTC)",
            "Preemptions (count)",
            barmode="stack",
            xaxis={"type": "category"},
        ),
    }


# --- charges ----------------------------------------------------------------------------------
def monthly_costs(costs: MonthlyCosts, grouped_by: str) -> Figure:
    """Stacked bars per month: cost per team (or flavor)."""
    return {
        "data": [
            {
                "type": "bar",
                "name": name,
                "x": list(costs.months),
                "y": [_r(v, 2) for v in values],
                "marker": {"color": colour_of(name)},
            }
            for name, values in costs.by_group.items()
        ],
        "layout": _layout(
            f"Cost per {grouped_by} per month",
            "Month (UTC)",
            f"Cost ({costs.currency})",
            barmode="stack",
            xaxis={"type": "category"},
        ),
    }


def budget_burn_down(burns: Sequence[BurnDown], month: str) -> Figure:
    """Per team with a budget: what is left at the end of each day, and an even spend."""
    data: list[dict[str, Any]] = []
    currency = burns[0].currency if burns else ""
    for burn in burns:
        x = [day.isoformat() for day in burn.days]
        colour = colour_of(burn.team)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{burn.team} remaining",
                "x": x,
                "y": [_r(v, 2) for v in burn.remaining],
                "line": {"color": colour},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{burn.team} even spend",
                "x": x,
                "y": [_r(v, 2) for v in burn.ideal],
                "line": {"color": colour, "dash": "dot"},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            f"Budget burn-down, {month}",
            "Day (UTC, end of day)",
            f"Budget left ({currency})" if currency else "Budget left",
            xaxis={"type": "category"},
            yaxis={"rangemode": "normal"},
        ),
    }


# --- the accessible table fallback ------------------------------------------------------------
def table_of(figure: Figure) -> dict[str, Any]:
    """The figure's numbers as a table: a caption, column headings and rows.

    x/y traces: one row per x value, one column per trace. Heatmaps: one row per y label, one
    column per x cell, holding the cell's text."""
    layout = figure["layout"]
    caption = layout["title"]["text"]
    x_title = layout["xaxis"]["title"]["text"]
    y_title = layout["yaxis"]["title"]["text"]
    traces = figure["data"]
    if traces and traces[0]["type"] == "heatmap":
        heat = traces[0]
        columns = [y_title] + [f"{x_title.split(' (')[0]} {x}" for x in heat["x"]]
        rows = [[label, *cells] for label, cells in zip(heat["y"], heat["text"], strict=True)]
        return {"caption": caption, "columns": columns, "rows": rows}
    order: dict[Any, None] = {}  # the x values in order of first appearance
    values: list[dict[Any, Any]] = []
    for trace in traces:
        cells = dict(zip(trace["x"], trace["y"], strict=True))
        order.update(dict.fromkeys(trace["x"]))
        values.append(cells)
    columns = [x_title] + [f"{trace['name']} — {y_title}" for trace in traces]
    rows = [[x, *("" if (v := cells.get(x)) is None else v for cells in values)] for x in order]
    return {"caption": caption, "columns": columns, "rows": rows}


def chart(chart_id: str, figure: Figure) -> dict[str, Any]:
    """What a page and its JSON endpoint carry per chart."""
    return {"id": chart_id, "figure": figure, "table": table_of(figure)}
