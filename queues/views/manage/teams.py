"""Teams and their memberships: platform admins edit both, team admins their teams' members."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

import audit
from audit.history import history_for_many
from audit.values import audited_values
from gpuplatform import access
from queues.forms.manage import MembershipFormSet, TeamForm
from queues.models import Membership, Team

MEMBER_FIELDS = ("user", "role")


@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    if not access.can_open_manage_pages(request.user):
        raise PermissionDenied("Only platform admins and team admins manage teams.")
    teams = access.manageable_teams(request.user).prefetch_related("memberships__user")
    return render(
        request,
        "manage/team_list.html",
        {"teams": teams, "is_platform_admin": access.is_platform_admin(request.user)},
    )


@login_required
def team_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    if pk is None:
        access.require_platform_admin(request.user)
        team = Team()
    else:
        team = access.managed_team_or_404(request.user, pk)
    edit_team = access.is_platform_admin(request.user)
    before = audited_values(team, Team.AUDITED_FIELDS)
    members_before = {
        m.pk: (m, audited_values(m, MEMBER_FIELDS))
        for m in (team.memberships.select_related("user", "team") if team.pk else [])
    }
    data = request.POST or None
    form = TeamForm(data, instance=team) if edit_team else None
    formset = MembershipFormSet(data, instance=team, prefix="members")
    if request.method == "POST" and (form is None or form.is_valid()) and formset.is_valid():
        with transaction.atomic():
            saved = form.save() if form is not None else team
            formset.instance = saved
            formset.save()
            _record(request.user, saved, before, members_before)
        messages.success(request, f"Saved team {saved}.")
        return redirect("manage-team-edit", pk=saved.pk)
    history = []
    if team.pk:
        history = list(history_for_many([team, *[m for m, _ in members_before.values()]])[:100])
    return render(
        request,
        "manage/team_edit.html",
        {"team": team, "form": form, "formset": formset, "history": history},
    )


def _record(actor: Any, team: Team, before: dict[str, Any], members_before: dict[int, Any]) -> None:
    audit.record_changes(actor, team, before, audited_values(team, Team.AUDITED_FIELDS))
    current = {m.pk: m for m in Membership.objects.filter(team=team).select_related("user", "team")}
    for pk, (old, values) in members_before.items():
        new = audited_values(current[pk], MEMBER_FIELDS) if pk in current else {}
        audit.record_changes(actor, current.get(pk, old), values, new)
    for pk, member in current.items():
        if pk not in members_before:
            audit.record_changes(actor, member, {}, audited_values(member, MEMBER_FIELDS))
