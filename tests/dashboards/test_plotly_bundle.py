"""The dashboards load a partial plotly.js bundle: a quarter of the full one, and holding every
trace type the figures draw (a figure with a type the bundle lacks would draw nothing)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import plotly
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from dashboards.views import DASHBOARDS, PLOTLY_JS
from queues.models import Queue

pytestmark = pytest.mark.django_db

FULL_BUNDLE = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def bundled_traces() -> set[str]:
    head = PLOTLY_JS.read_text(encoding="utf-8")[:400]
    match = re.search(r"traces: ([a-z0-9,]+)", head)
    assert match, "the bundle's header names its traces (scripts/build_plotly_bundle.sh)"
    return set(match[1].split(","))


def test_the_served_bundle_is_the_partial_one_and_far_smaller_than_the_full(
    client: Client,
) -> None:
    response = client.get(reverse("plotly-js"))

    served = b"".join(response.streaming_content)
    assert served == PLOTLY_JS.read_bytes()
    assert len(served) < FULL_BUNDLE.stat().st_size / 3


def test_every_trace_type_a_dashboard_draws_is_in_the_bundle(
    client: Client,
    platform_admin: User,
    grow: Callable[[int], None],
    queue_a: Queue,
    queue_b: Queue,
) -> None:
    grow(2)
    client.force_login(platform_admin)
    drawn: set[str] = set()
    for slug, dashboard in DASHBOARDS.items():
        params = {"team": queue_a.team_id} if dashboard.for_team else {}
        response = client.get(reverse("dashboard", args=[slug]), params)
        assert response.status_code == 200, slug
        for chart in response.context["payload"]["charts"]:
            drawn |= {trace.get("type", "scatter") for trace in chart["figure"]["data"]}

    assert drawn, "the dashboards drew no figure: the world is empty"
    assert drawn <= bundled_traces(), f"rebuild the bundle with {sorted(drawn)}"
