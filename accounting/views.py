"""The finance page (chargeback per team for a period, drill-down, export links) and the prices
page (/manage/prices/: prices and class multipliers in force, scheduled, history; add a row)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

import audit
from accounting import rating
from accounting.chargeback import ParameterError, chargeback_report, parse_period, row_values
from accounting.forms import ClassMultiplierForm, FlavorPriceForm, NewRowForm
from accounting.models import ClassMultiplier, FlavorPrice, UsageRecord
from accounting.pricing import PRICE_FIELDS, gpu_equivalent_of, load_price_list
from audit.history import object_type
from audit.models import AuditEntry
from gpuplatform import access
from queues.models import Flavor, ServiceClass

DRILL_KEYS = ("queue", "flavor", "user")


@login_required
def chargeback_page(request: HttpRequest) -> HttpResponse:
    """Finance and platform admins only."""
    if not access.is_platform_admin_or_finance(request.user):
        raise PermissionDenied("Chargeback is for finance and platform admins.")
    params = request.GET
    now = timezone.now()
    context: dict[str, object] = {
        "drill_keys": DRILL_KEYS,
    }
    try:
        period = parse_period(params.get("start"), params.get("end"), now)
    except ParameterError as error:
        context["error"] = error.message
        period = parse_period(None, None, now)
    team = params.get("team", "")
    by = params.get("by", "queue")
    if by not in DRILL_KEYS:
        by = "queue"
    keys = ("team", by) if team else ("team",)
    records = access.filter_visible_usage(UsageRecord.objects.all(), request.user)
    if team:
        records = records.filter(team__name=team)
    try:
        report = chargeback_report(records, period, keys)
    except rating.RatingError as error:
        context["error"] = str(error)
        report = None
    query = {"start": f"{period.start:%Y-%m-%d}", "end": f"{period.end:%Y-%m-%d}"}
    api = reverse("chargeback-api")
    export = {**query, "group_by": ",".join(keys)} | ({"team": team} if team else {})
    context |= {
        "period": period,
        "start": query["start"],
        "end": query["end"],
        "team": team,
        "by": by,
        "keys": keys,
        "rows": [row_values(row.group, row.totals) for row in report.rows] if report else [],
        "totals": row_values({}, report.total) if report else None,
        "currency": report.currency if report else "",
        "base_query": urlencode(query),
        "csv_url": f"{api}?{urlencode(export | {'format': 'csv'})}",
        "json_url": f"{api}?{urlencode(export | {'format': 'json'})}",
    }
    return render(request, "accounting/chargeback.html", context)


# --- the prices page (/manage/prices/) --------------------------------------------------------
UNIT_PRICE_SHOWN = Decimal("0.000001")  # a derived MIG price, shown to the model's 6 places
PRICE_FORMS: dict[str, type[NewRowForm]] = {
    "price": FlavorPriceForm,
    "multiplier": ClassMultiplierForm,
}


@dataclass(frozen=True)
class HistoryRow:
    effective_from: datetime
    value: Decimal
    currency: str
    added_by: str
    added_at: datetime
    status: str  # "in force", "scheduled" or "past"


@dataclass(frozen=True)
class PriceSummary:
    """One flavor or service class: what is in force now, what comes next, and the history."""

    name: str
    now: str
    next: str
    history: list[HistoryRow]


def _authors(rows: Sequence[FlavorPrice | ClassMultiplier]) -> dict[tuple[str, str], AuditEntry]:
    """The audit entry that recorded each row's creation (one query for all rows)."""
    if not rows:
        return {}
    keys = {(object_type(row), str(row.pk)) for row in rows}
    entries = AuditEntry.objects.filter(
        object_type__in={kind for kind, _ in keys}, object_id__in={pk for _, pk in keys}
    ).order_by("at", "pk")
    found: dict[tuple[str, str], AuditEntry] = {}
    for entry in entries:
        found.setdefault((entry.object_type, entry.object_id), entry)
    return found


def _history(
    rows: Sequence[tuple[FlavorPrice | ClassMultiplier, Decimal, str]],
    authors: dict[tuple[str, str], AuditEntry],
    now: datetime,
) -> list[HistoryRow]:
    """Rows of one flavor or class, oldest first in `rows`; returned newest first."""
    in_force = max((r.effective_from for r, _, _ in rows if r.effective_from <= now), default=None)
    history = []
    for row, value, unit in rows:
        entry = authors.get((object_type(row), str(row.pk)))
        status = (
            "scheduled"
            if row.effective_from > now
            else ("in force" if row.effective_from == in_force else "past")
        )
        history.append(
            HistoryRow(
                effective_from=row.effective_from,
                value=value,
                currency=unit,
                added_by=(entry.actor_name or "system") if entry else "not recorded",
                added_at=entry.at if entry else row.created_at,
                status=status,
            )
        )
    return history[::-1]


def _price_text(price_list: rating.PriceList, flavor: Flavor, moment: datetime) -> str:
    """The price in force at `moment` in words; a MIG flavor priced from its whole-GPU flavor
    shows the derivation ("gpu_equivalent x parent price = X")."""
    unit = price_list.currency
    try:
        price = price_list.price_at(flavor.name, gpu_equivalent_of(flavor), moment)
    except rating.RatingError:
        return "no price in force"
    if price.priced_from == flavor.name:
        return f"{price.unit_price} {unit}"
    parent = price_list.price_at(price.priced_from, Decimal(1), moment).unit_price
    shown = price.unit_price.quantize(UNIT_PRICE_SHOWN, ROUND_HALF_EVEN)
    return f"{gpu_equivalent_of(flavor)} x {price.priced_from} price {parent} = {shown} {unit}"


def _flavor_summaries(
    flavors: Sequence[Flavor], price_list: rating.PriceList, now: datetime
) -> list[PriceSummary]:
    rows = list(FlavorPrice.objects.select_related("flavor").order_by("effective_from"))
    authors = _authors(rows)
    summaries = []
    for flavor in flavors:
        points = price_list.price_change_points(flavor.name)
        parent = price_list.mig_parents.get(flavor.name)
        if parent is not None:
            points += price_list.price_change_points(parent)
        upcoming = min((p for p in points if p > now), default=None)
        scheduled = _price_text(price_list, flavor, upcoming) if upcoming else ""
        own = [(r, r.price_per_unit_hour, r.currency) for r in rows if r.flavor_id == flavor.pk]
        summaries.append(
            PriceSummary(
                name=flavor.name,
                now=_price_text(price_list, flavor, now),
                next=(f"{scheduled} from {upcoming:%Y-%m-%d %H:%M} UTC" if upcoming else ""),
                history=_history(own, authors, now),
            )
        )
    return summaries


def _multiplier_summaries(
    classes: Sequence[ServiceClass], price_list: rating.PriceList, now: datetime
) -> list[PriceSummary]:
    rows = list(ClassMultiplier.objects.select_related("service_class").order_by("effective_from"))
    authors = _authors(rows)
    summaries = []
    for service_class in classes:
        own = [(r, r.multiplier, "") for r in rows if r.service_class_id == service_class.pk]
        started = any(r.effective_from <= now for r, _, _ in own)
        current = price_list.multiplier_at(service_class.name, now)
        upcoming = min(
            (r.effective_from for r, _, _ in own if r.effective_from > now), default=None
        )
        summaries.append(
            PriceSummary(
                name=service_class.name,
                now=f"x {current}" + ("" if started else " (the class's default multiplier)"),
                next=(
                    f"x {price_list.multiplier_at(service_class.name, upcoming)} "
                    f"from {upcoming:%Y-%m-%d %H:%M} UTC"
                    if upcoming
                    else ""
                ),
                history=_history(own, authors, now),
            )
        )
    return summaries


def _label(instance: FlavorPrice | ClassMultiplier) -> str:
    owner = instance.flavor if isinstance(instance, FlavorPrice) else instance.service_class
    kind = "Price" if isinstance(instance, FlavorPrice) else "Class multiplier"
    return f"{kind} of {owner} from {instance.effective_from:%Y-%m-%d %H:%M:%S} UTC"


def _record_new_row(actor: Any, instance: FlavorPrice | ClassMultiplier) -> None:
    after = {name: getattr(instance, name) for name in PRICE_FIELDS if hasattr(instance, name)}
    audit.record_changes(actor, instance, {}, after, label=_label(instance))


@login_required
def prices_page(request: HttpRequest) -> HttpResponse:
    """Prices and class multipliers: in force now, scheduled, history with authors. Platform
    admins add rows (a past date asks for confirmation); finance reads."""
    if not access.is_platform_admin_or_finance(request.user):
        raise PermissionDenied("Prices are for finance and platform admins.")
    platform_admin = access.is_platform_admin(request.user)
    row_forms = {}
    if platform_admin:
        row_forms = {kind: form(prefix=kind) for kind, form in PRICE_FORMS.items()}
    confirm = ""
    if request.method == "POST":
        if not platform_admin:
            raise PermissionDenied("Only platform admins add prices.")
        kind = request.POST.get("kind", "")
        if kind not in PRICE_FORMS:
            return HttpResponseBadRequest("kind must be 'price' or 'multiplier'.")
        form = PRICE_FORMS[kind](request.POST, prefix=kind)
        row_forms[kind] = form
        if form.is_valid():
            if form.is_in_the_past() and request.POST.get("confirm") != "yes":
                confirm = kind
            else:
                with transaction.atomic():
                    instance = form.save()
                    instance.refresh_from_db()  # the stored values (6 decimal places)
                    _record_new_row(request.user, instance)
                messages.success(request, f"Added: {_label(instance)}.")
                return redirect(f"{reverse('manage-prices')}#{kind}s")
    now = timezone.now()
    price_list = load_price_list()
    flavors = list(Flavor.objects.order_by("name"))
    classes = list(ServiceClass.objects.order_by("name"))
    context = {
        "is_platform_admin": platform_admin,
        "currency": price_list.currency,
        "now": now,
        "flavors": _flavor_summaries(flavors, price_list, now),
        "classes": _multiplier_summaries(classes, price_list, now),
        "price_form": row_forms.get("price"),
        "multiplier_form": row_forms.get("multiplier"),
        "confirm": confirm,
    }
    return render(request, "accounting/prices.html", context)
