"""The jobs list's rows are written in Python (``ROW``): byte for byte what the template's row
printed, whatever the cells hold."""

from __future__ import annotations

from typing import Any

import pytest
from django.template import Context, Template

from queues.views.jobs import _row_html

TEMPLATE_ROW = (  # the loop's body in templates/queues/job_list.html before ROW
    '\n    <tr><td><a href="{{ row.url }}">{{ row.name }}</a> <span class="muted">#{{ row.pk }}'
    "</span></td>\n"
    "      <td>{{ row.queue }}</td><td>{{ row.owner }}</td>\n"
    '      <td>{{ row.service_class }}</td><td><span class="state state-{{ row.state }}">'
    "{{ row.state_label }}</span></td>\n"
    "      <td>{{ row.workers }} × {{ row.gpus_per_worker }}</td>\n"  # noqa: RUF001
    "      <td>{{ row.gpu_type }}</td><td>{{ row.wait }}</td>\n"
    "      <td>{{ row.runtime }}</td>\n"
    "      <td>{{ row.preemption_count }}</td>\n"
    '      <td class="num">{{ row.cost }}</td>\n'
    '      <td><time datetime="{{ row.submitted_iso }}">{{ row.submitted }}</time></td></tr>\n'
    "    "
)
PLAIN = {
    "url": "/jobs/12/",
    "pk": 12,
    "name": "train",
    "queue": "team-a/main",
    "owner": "alice",
    "service_class": "production",
    "state": "running",
    "state_label": "Running",
    "workers": 2,
    "gpus_per_worker": 8,
    "gpu_type": "h100 or a100-80gb",
    "wait": "5 min so far",
    "runtime": "—",
    "preemption_count": 0,
    "cost": "12.34",
    "submitted_iso": "2026-11-26T10:00:00.123456+00:00",
    "submitted": "2026-11-26 10:00",
}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"name": "<script>\"x\" & 'y'</script>", "owner": "o'brien&co", "pk": 1234567},
        {"workers": 10_000, "preemption_count": 12_345, "gpu_type": "a<b>", "cost": "—"},
    ],
)
def test_a_row_is_what_the_template_printed(changes: dict[str, Any]) -> None:
    row = PLAIN | changes
    assert _row_html(row) == Template(TEMPLATE_ROW).render(Context({"row": row}))
