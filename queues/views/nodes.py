"""A node's page for platform admins: its GPUs per type, MIG layout, state and the jobs holding
GPUs on it, with cordon / drain / uncordon / fail / recover (queues.services.nodes), each
audited (who, when, old -> new)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

import audit
from audit.history import history_for
from dashboards.data import holdings
from gpuplatform import access
from queues.models import Flavor, Node
from queues.services.nodes import NODE_ACTIONS, apply_node_action


@login_required
def node_detail(request: HttpRequest, pk: int) -> HttpResponse:
    access.require_platform_admin(request.user)
    node = get_object_or_404(Node.objects.select_related("cluster"), pk=pk)
    names = dict(Flavor.objects.values_list("pk", "name"))
    jobs = sorted(
        (
            {
                "id": h.job_id, "name": h.name, "team": h.team, "flavor": names[h.flavor_id],
                "gpus": h.units_by_node[node.name], "stopping": h.stopping,
            }
            for h in holdings(timezone.now())
            if h.cluster_id == node.cluster_id and node.name in h.units_by_node
        ),
        key=lambda row: row["id"],
    )  # fmt: skip
    return render(
        request,
        "queues/node_detail.html",
        {
            "node": node,
            "capacity": [
                (name, units, units - node.usable_capacity().get(name, units))
                for name, units in sorted((node.capacity or {}).items())
            ],
            "mig_config": (node.labels or {}).get("nvidia.com/mig.config", ""),
            "jobs": jobs,
            "history": list(history_for(node)[:50]),
        },
    )


@login_required
@require_POST
def node_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    access.require_platform_admin(request.user)
    if action not in NODE_ACTIONS:
        raise Http404("No such action.")
    node = get_object_or_404(Node.objects.select_related("cluster"), pk=pk)
    before, after = apply_node_action(node, action)
    if after:
        audit.record_changes(request.user, node, before, after, label=f"node {node}")
    said = NODE_ACTIONS[action].said
    messages.success(request, f"Node {node.cluster}/{node.name} {said}.")
    return redirect("node-detail", pk=node.pk)
