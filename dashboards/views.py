"""Dashboard pages and the JSON endpoints that refresh them.

Each dashboard is one `build` function: (request, now, range) -> payload, the same payload the
page embeds and `/dashboards/<slug>/data/` returns: `charts` (id, Plotly figure, table fallback),
`tables` (plain tables shown under the charts) and `notes`. Access per role through
gpuplatform.access: cluster-wide dashboards for platform admins and finance; the team dashboard
for the team's members (and admins and finance, for any team). Other teams are 404.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from accounting import rating
from accounting.job_money import team_costs
from dashboards import data, figures
from dashboards.plain import CohortRow, FairShareRow, ShareTreeRow, TeamJob
from dashboards.sshare import share_tree
from gpuplatform import access
from gpusched.engine.tree_usage import NodeUsage
from queues.models import Flavor, Team
from queues.services.queue_status import SHARE_MEANING, share_label

Payload = dict[str, Any]
# plotly.js with only the trace types the figures use (scripts/build_plotly_bundle.sh): 1.2 MB
# where the plotly package's full bundle is 4.8 MB
PLOTLY_JS = Path(settings.BASE_DIR) / "static" / "vendor" / "plotly" / "plotly-gpuplatform.min.js"
REFRESH_SECONDS = 15


class BadParameter(ValueError):
    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class Dashboard:
    slug: str
    title: str
    description: str
    build: Callable[[HttpRequest, datetime, data.Range], Payload]
    has_range: bool = False
    for_team: bool = False


def _payload(
    charts: list[dict[str, Any]],
    tables: list[dict[str, Any]] | None = None,
    notes: list[str] | None = None,
) -> Payload:
    return {"charts": charts, "tables": tables or [], "notes": notes or []}


def _range(request: HttpRequest) -> data.Range:
    name = request.GET.get("range", data.DEFAULT_RANGE)
    if name not in data.RANGES:
        raise BadParameter(
            "range", f"range={name!r} is not a range; choose one of {', '.join(data.RANGES)}."
        )
    return data.RANGES[name]


# --- the dashboards ---------------------------------------------------------------------------
def build_cluster(request: HttpRequest, now: datetime, span: data.Range) -> Payload:
    series = data.usage_series(now, span)
    return _payload(
        [
            figures.chart("usage", figures.usage_over_time(series)),
            figures.chart("flavors", figures.flavor_utilization(data.flavor_utilization(now))),
        ]
    )


def _fair_share_table(rows: list[FairShareRow]) -> dict[str, Any]:
    def status(row: FairShareRow) -> str:
        if row.over_share:
            return "over its share: borrowing, may be preempted by fair sharing"
        if row.starved:
            return "starved: waiting while within its quota"
        return "within its share"

    return {
        "id": "fair-share",
        "caption": f"Fair share per queue: who is over and who is starved. {SHARE_MEANING}",
        "columns": [
            "Queue", "Weight", "Share", "Current usage (GPU-equivalents)", "Pending jobs",
            "Status", "Decayed usage (GPU-equivalent-hours)", "Usage of the decayed total (%)",
            "Weight of the total (%)", "Slurm-style factor", "Score (lower runs first)",
        ],
        "rows": [
            [
                r.queue, round(r.weight, 2), share_label(r.share), round(r.current_usage, 3),
                r.pending, status(r), round(r.decayed_usage_hours, 2),
                round(100 * r.usage_fraction, 2), round(100 * r.share_fraction, 2),
                round(r.factor, 3), round(r.score, 3),
            ]
            for r in rows
        ],
    }  # fmt: skip


def _cohort_table(rows: list[CohortRow]) -> dict[str, Any]:
    def listed(pairs: tuple[tuple[str, int], ...]) -> str:
        return ", ".join(f"{queue} {units}" for queue, units in pairs) or "nobody"

    return {
        "id": "cohorts",
        "caption": (
            "Cohorts now: who lends to whom. Per GPU type, the pool is what the member queues "
            "may lend of their nominal quotas; the lenders' unused nominal is what the borrowers "
            "use above theirs or, in a cohort tree, what the cohort lends its parent (the cohort "
            "tree table above has every level)."
        ),
        "columns": ["Cohort", "GPU type", "Pool", "Lent by (units)", "Borrowed by (units)"],
        "rows": [
            [r.cohort, r.flavor, r.pool, listed(r.lenders), listed(r.borrowers)] for r in rows
        ],
    }


TREE_INDENT = "\u2003"  # an em space per level: seen as indentation, not read aloud


def _tree_table(rows: list[NodeUsage]) -> dict[str, Any]:
    def kind(row: NodeUsage) -> str:
        if row.is_queue:
            return "queue"
        return "root cohort" if row.depth == 0 else f"cohort, level {row.depth + 1}"

    return {
        "id": "cohort-tree",
        "caption": (
            "Cohort tree now (organisation, department, team queue), per node and GPU type. "
            "Nominal: a queue's nominal quota; a cohort's own nominal plus what its children "
            "lend it. Used: a queue's GPUs; a cohort's, the part of its children's use their "
            "reserved quota does not cover. Borrowed: used above nominal, taken from the "
            "parent. Lent: unused nominal that the rest of the parent's subtree uses now. Held: "
            "what the queues below hold together."
        ),
        "columns": [
            "Node", "Kind", "Under", "GPU type", "Nominal", "Used", "Borrowed", "Lent",
            "Held by its queues",
        ],
        "rows": [
            [
                TREE_INDENT * r.depth + r.name, kind(r), " / ".join(r.path[:-1]) or "(top)",
                r.flavor, r.nominal, r.used, r.borrowed, r.lent, r.held,
            ]
            for r in rows
        ],
    }  # fmt: skip


def build_quotas(request: HttpRequest, now: datetime, span: data.Range) -> Payload:
    statuses = data.all_queue_statuses(now)
    fair = data.fair_share_rows(statuses)
    return _payload(
        [
            figures.chart("quota", figures.quota_usage(data.quota_rows(statuses))),
            figures.chart("share-now", figures.queue_shares(fair)),
            figures.chart("share", figures.usage_vs_share(fair)),
        ],
        [
            _fair_share_table(fair),
            _tree_table(data.cohort_tree_rows(now)),
            _cohort_table(data.cohort_rows(statuses)),
        ],
    )


def _share_tree_table(rows: list[ShareTreeRow], half_life_days: float) -> dict[str, Any]:
    def percent(value: float) -> str:
        return f"{100 * value:.1f}"

    return {
        "id": "share-tree",
        "caption": (
            "Fair share per cohort and queue, as Slurm's sshare: each cohort's totals, then its "
            "queues. Nominal (GPU-equivalents) is the queue's shares and its part of the "
            "cohort's nominal its normalized shares; raw usage is its decayed GPU-equivalent-"
            f"hours (halved every {half_life_days:g} days), effective usage its part of the "
            f"cohort's. {SHARE_MEANING}"
        ),
        "columns": [
            "Cohort", "Queue", "Weight", "Nominal (GPU-eq)", "Norm. shares (%)",
            "Raw usage (GPU-eq-hours)", "Effective usage (%)", "Share", "In use now (GPU-eq)",
            "Borrowed now (GPU-eq)", "Lent now (GPU-eq)",
        ],
        "rows": [
            [
                r.cohort, r.queue or "(cohort total)",
                "" if r.weight is None else round(r.weight, 2), round(r.nominal, 3),
                percent(r.norm_shares), round(r.raw_usage_hours, 2), percent(r.effective_usage),
                "" if r.share is None else share_label(r.share), round(r.in_use, 3),
                round(r.borrowed, 3), round(r.lent, 3),
            ]
            for r in rows
        ],
    }  # fmt: skip


def build_fairshare(request: HttpRequest, now: datetime, span: data.Range) -> Payload:
    statuses = data.all_queue_statuses(now)
    equivalents = dict(Flavor.objects.values_list("name", "gpu_equivalent"))
    half_life_days = settings.FAIRSHARE_HALF_LIFE / 86400
    rows = share_tree(statuses, equivalents)
    return _payload(
        [figures.chart("share-tree", figures.share_tree_bars(rows))],
        [
            _share_tree_table(rows, half_life_days),
            _tree_table(data.cohort_tree_rows(now)),
            _cohort_table(data.cohort_rows(statuses)),
        ],
    )


def build_mig(request: HttpRequest, now: datetime, span: data.Range) -> Payload:
    """Slots name their job for the teams whose jobs the user sees (finance: the team only)."""
    nodes = data.node_slots(now, set(access.job_teams(request.user).values_list("name", flat=True)))
    mig = [n for n in nodes if n.is_mig]
    whole = [n for n in nodes if not n.is_mig]
    charts, notes = [], []
    if mig:
        charts.append(figures.chart("mig", figures.slice_map(mig, "MIG slices per node")))
    else:
        notes.append("No node exposes MIG slices.")
    if whole:
        charts.append(figures.chart("whole", figures.slice_map(whole, "Whole GPUs per node")))
    return _payload(charts, notes=notes)


def build_health(request: HttpRequest, now: datetime, span: data.Range) -> Payload:
    waits = data.wait_rows(now, days=7)
    return _payload(
        [
            figures.chart("pending", figures.pending_jobs(waits)),
            figures.chart("waits", figures.wait_times(waits, days=7)),
            figures.chart("preemptions", figures.preemptions(data.preemption_series(now))),
        ]
    )


def build_charges(request: HttpRequest, now: datetime, span: data.Range) -> Payload:
    try:
        costs = data.monthly_costs(now, 6)
        burns = data.burn_downs(now)
    except rating.RatingError as error:
        return _payload([], notes=[f"Charges cannot be computed: {error}"])
    charts = [
        figures.chart("team-costs", figures.monthly_costs(costs["team"], "team")),
        figures.chart("flavor-costs", figures.monthly_costs(costs["flavor"], "flavor")),
    ]
    notes = []
    if burns:
        month = f"{rating.month_start(now):%Y-%m}"
        charts.append(figures.chart("burn-down", figures.budget_burn_down(burns, month)))
    else:
        notes.append("No team has a budget for this month.")
    return _payload(charts, notes=notes)


def _jobs_table(jobs: list[TeamJob]) -> dict[str, Any]:
    return {
        "id": "positions",
        "caption": "Pending jobs of the team and their place in the queue (yours marked)",
        "columns": ["Job", "Queue", "Owner", "Position", "Why pending"],
        "rows": [
            [
                f"#{j.job_id} {j.name}" + (" (yours)" if j.mine else ""),
                j.queue,
                j.owner,
                (
                    f"{j.position} of {j.pending_in_queue}"
                    if j.position is not None
                    else "not ranked yet"
                ),
                j.message,
            ]
            for j in jobs
        ],
    }


def _costs_table(team: Team, viewer: Any, now: datetime, with_users: bool) -> dict[str, Any]:
    """Per user only for who sees the team's jobs (finance: the total, as for the jobs)."""
    try:
        costs = team_costs(team, viewer, now)
    except rating.RatingError as error:
        return {"id": "costs", "caption": f"Costs cannot be computed: {error}", "columns": [],
                "rows": []}  # fmt: skip
    return {
        "id": "costs",
        "caption": (
            f"Costs of team {costs.team} in {costs.month} so far ({costs.currency}, up to the "
            "usage ledger's last accrual, as on the chargeback page): per user (researchers "
            "see their own row, team admins every member's) and the team's total"
        ),
        "columns": ["User", "GPU-hours", f"Cost ({costs.currency})"],
        "rows": [[user, hours, cost] for user, hours, cost in costs.users if with_users]
        + [[f"Team {costs.team} (all members)", "", costs.total]],
    }


def build_team(request: HttpRequest, now: datetime, span: data.Range) -> Payload:
    """Usage, quota and fair share; the pending jobs table only for who sees the team's jobs
    (its members, platform admins), not for finance."""
    team = team_of(request)
    series = data.usage_series(now, span, team_ids=[team.pk], by="flavor", with_capacity=False)
    with_jobs = access.job_teams(request.user).filter(pk=team.pk).exists()
    statuses = data.team_statuses(team, now, with_jobs=with_jobs)
    usage = figures.usage_over_time(series)
    usage["layout"]["title"]["text"] = f"Team {team.name}: " + usage["layout"]["title"]["text"]
    quota = figures.quota_usage(data.quota_rows(statuses))
    quota["layout"]["title"]["text"] = f"Team {team.name}: quota per queue and flavor"
    mine = {s.queue for s in statuses}
    fair_rows = [r for r in data.fair_share_rows(data.all_queue_statuses(now)) if r.queue in mine]
    fair = figures.queue_shares(fair_rows)
    charts = [
        figures.chart("usage", usage),
        figures.chart("quota", quota),
        figures.chart("share-now", fair),
    ]
    costs = _costs_table(team, request.user, now, with_users=with_jobs)
    if not with_jobs:
        pending = sum(s.pending_count for s in statuses)
        return _payload(
            charts,
            [costs],
            notes=[
                f"{pending} pending job(s). Job names, owners and why they wait are shown to "
                "the team's members and platform admins."
            ],
        )
    jobs = data.team_jobs(statuses, request.user.get_username())
    return _payload(charts, [_jobs_table(jobs), costs])


DASHBOARDS = {
    d.slug: d
    for d in (
        Dashboard(
            "cluster", "Cluster overview",
            "GPUs allocated by team against capacity and failed GPUs; utilization per flavor.",
            build_cluster, has_range=True,
        ),
        Dashboard(
            "quotas", "Quotas and fair share",
            "Nominal, used, borrowed and lent per queue; decayed usage and the fair-share factor.",
            build_quotas,
        ),
        Dashboard(
            "fairshare", "Fair-share tree (sshare)",
            "Per cohort and queue, like Slurm's sshare: nominal shares, decayed and effective "
            "usage, the scheduler's share, borrowed and lent now.",
            build_fairshare,
        ),
        Dashboard(
            "mig", "GPU and MIG slice map",
            "Every GPU and MIG slice per node: free, or which team's job holds it.", build_mig,
        ),
        Dashboard(
            "health", "Queue health",
            "Pending jobs, wait times (p50/p95) and preemptions per day by reason.",
            build_health,
        ),
        Dashboard(
            "charges", "Charges",
            "Cost per team and per flavor per month, and this month's budget burn-down.",
            build_charges,
        ),
        Dashboard(
            "team", "Team view",
            "Your team's usage, quota and fair share, and where your jobs wait.",
            build_team, has_range=True, for_team=True,
        ),
    )
}  # fmt: skip


# --- access -----------------------------------------------------------------------------------
def team_of(request: HttpRequest) -> Team:
    """The team the team dashboard shows: `?team=<id>` (404 if not visible), else the user's
    first team."""
    teams = access.visible_teams(request.user)
    raw = request.GET.get("team")
    if raw:
        if not raw.isdigit():
            raise BadParameter("team", f"team={raw!r} is not a team id.")
        return get_object_or_404(teams, pk=int(raw))
    first = access.member_teams(request.user).order_by("name").first() or teams.first()
    if first is None:
        raise Http404("No team to show.")
    return first


def _dashboard_for(request: HttpRequest, slug: str) -> Dashboard:
    dashboard = DASHBOARDS.get(slug)
    if dashboard is None:
        raise Http404(f"No dashboard {slug!r}.")
    user = request.user
    allowed = (
        access.visible_teams(user).exists()
        if dashboard.for_team
        else access.is_platform_admin_or_finance(user)
    )
    if not allowed:
        raise PermissionDenied("This dashboard is for platform admins and finance.")
    return dashboard


def _available(request: HttpRequest) -> list[Dashboard]:
    platform = access.is_platform_admin_or_finance(request.user)
    teams = access.visible_teams(request.user).exists()
    return [d for d in DASHBOARDS.values() if (teams if d.for_team else platform)]


# --- views ------------------------------------------------------------------------------------
@login_required
@require_GET
def index(request: HttpRequest) -> HttpResponse:
    dashboards = _available(request)
    if not dashboards:
        raise PermissionDenied("Dashboards are for team members, platform admins and finance.")
    return render(request, "dashboards/index.html", {"dashboards": dashboards})


@login_required
@require_GET
def page(request: HttpRequest, slug: str) -> HttpResponse:
    dashboard = _dashboard_for(request, slug)
    try:
        span = _range(request)
        payload = dashboard.build(request, timezone.now(), span)
    except BadParameter as error:
        context = {"title": "Bad dashboard parameter", "message": str(error)}
        return render(request, "error.html", context, status=400)
    context: dict[str, Any] = {
        "dashboard": dashboard,
        "dashboards": _available(request),
        "payload": payload,
        "span": span,
        "ranges": list(data.RANGES.values()) if dashboard.has_range else [],
        "data_url": reverse("dashboard-data", args=[slug]),
        "refresh_seconds": REFRESH_SECONDS,
    }
    if dashboard.for_team:
        context["team"] = team_of(request)
        context["teams"] = list(access.visible_teams(request.user).order_by("name"))
    return render(request, "dashboards/page.html", context)


@login_required
@require_GET
def data_json(request: HttpRequest, slug: str) -> JsonResponse:
    dashboard = _dashboard_for(request, slug)
    try:
        span = _range(request)
        now = timezone.now()
        payload = dashboard.build(request, now, span)
    except BadParameter as error:
        return JsonResponse({"errors": {error.parameter: [str(error)]}}, status=400)
    return JsonResponse(payload | {"generated_at": now.isoformat()})


@require_GET
def plotly_js(request: HttpRequest) -> FileResponse:
    """The site's partial plotly.js bundle (served locally; no CDN)."""
    response = FileResponse(PLOTLY_JS.open("rb"), content_type="text/javascript")
    response["Cache-Control"] = "public, max-age=86400"
    return response
