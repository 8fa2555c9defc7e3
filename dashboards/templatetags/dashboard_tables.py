"""``{% data_table table %}``: a dashboard's table fallback as HTML.

Built in Python rather than with template loops: a month of hourly buckets is 720 rows, and the
template engine would spend most of the page's time on them."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


def _cell(value: Any) -> str:
    return "" if value is None else escape(str(value))


@register.simple_tag
def data_table(table: dict[str, Any], table_id: str) -> SafeString:
    head = "".join(f'<th scope="col">{_cell(c)}</th>' for c in table["columns"])
    rows = [
        f'<tr><th scope="row">{_cell(row[0])}</th>'
        + "".join(f"<td>{_cell(c)}</td>" for c in row[1:])
        + "</tr>"
        for row in table["rows"]
    ]
    if not rows:
        rows = [f'<tr><td colspan="{len(table["columns"])}">No data.</td></tr>']
    return mark_safe(  # every cell and heading is escaped above
        f'<table class="compact" data-table-id="{escape(table_id)}">'
        f"<caption>{_cell(table['caption'])}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
