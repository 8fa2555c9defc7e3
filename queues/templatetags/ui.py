"""Template helpers for accessible forms and readable numbers."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.forms import BoundField
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag
def widget(field: BoundField) -> SafeString:
    """The field's input, described by its help text and its errors (aria-describedby), and
    marked aria-invalid when it has errors."""
    ids = []
    if field.help_text:
        ids.append(f"{field.auto_id}_help")
    if field.errors:
        ids.append(f"{field.auto_id}_errors")
    attrs: dict[str, Any] = {}
    if ids:
        attrs["aria-describedby"] = " ".join(ids)
    if field.errors:
        attrs["aria-invalid"] = "true"
    return field.as_widget(attrs=attrs)


@register.simple_tag
def form_field(field: BoundField) -> SafeString:
    """Label, input, help text and errors of one field (templates/ui/field.html)."""
    return SafeString(render_to_string("ui/field.html", {"field": field}))


POSITION_PREFIX = re.compile(r"^#\d+ in queue \S+\. ")


@register.filter
def without_position(message: str) -> str:
    """The why-pending sentence without its leading "#3 in queue team/q. " (for tables that
    show the position in a column of their own)."""
    return POSITION_PREFIX.sub("", message or "", count=1)


@register.filter
def duration(seconds: float | int | None) -> str:
    """3725 -> '1 h 2 min'; empty for None."""
    if seconds is None:
        return ""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"


@register.simple_tag(takes_context=True)
def sort_link(context: template.Context, column: str, label: str) -> SafeString:
    """A column header link that sorts by ``column`` (toggling the direction), keeping the
    other query parameters; an arrow marks the sorted column (and ``aria_sort`` its th)."""
    from django.utils.html import format_html

    request = context["request"]
    params = request.GET.copy()
    current = params.get("sort", "")
    descending = current == f"-{column}"
    new = column if descending else f"-{column}" if current == column else column
    params["sort"] = new
    params.pop("page", None)
    arrow = ""
    if current == column:
        arrow = " ▲"
    elif descending:
        arrow = " ▼"
    return format_html('<a href="?{}">{}{}</a>', params.urlencode(), label, arrow)


@register.simple_tag(takes_context=True)
def aria_sort(context: template.Context, column: str) -> SafeString:
    """``aria-sort`` for the th of ``column`` when the list is sorted by it."""
    current = context["request"].GET.get("sort", "")
    if current == column:
        return SafeString(' aria-sort="ascending"')
    if current == f"-{column}":
        return SafeString(' aria-sort="descending"')
    return SafeString("")
