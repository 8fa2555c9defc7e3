"""deploy/grafana/gpuplatform.json (issue 20): a valid dashboard whose every query reads only
metric names this platform's ``/metrics`` exposes after a real cycle (Kueue's and its own)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "gpuplatform.json"
METRIC = re.compile(r"\b((?:kueue|gpuplatform)_[a-z_]+)")


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def queries() -> list[str]:
    return [
        target["expr"] for panel in dashboard()["panels"] for target in panel.get("targets", [])
    ]


def test_the_dashboard_is_well_formed() -> None:
    board = dashboard()
    assert board["uid"] and board["title"] and board["schemaVersion"] >= 36
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps another panel"
                cells.add((x, y))
        for target in panel.get("targets", []):
            assert target["refId"] and target["datasource"]["uid"] == "${datasource}"
    names = {variable["name"] for variable in board["templating"]["list"]}
    assert names == {"datasource", "cluster_queue"}


def test_every_query_reads_metrics_the_platform_exposes(
    client, sim_cluster, queue_a, make_job, researcher_a, cycle
) -> None:
    make_job(queue=queue_a, owner=researcher_a, workers=1, gpus_per_worker=8)
    cycle(timezone.now())
    response = client.get("/metrics")
    exposed = {
        sample.name
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    } | {family.name for family in text_string_to_metric_families(response.content.decode())}
    used = {name for query in queries() for name in METRIC.findall(query)}
    assert {name for name in used if name.startswith("kueue_")} >= {
        "kueue_pending_workloads",
        "kueue_admitted_workloads_total",
        "kueue_admission_wait_time_seconds_bucket",
        "kueue_cluster_queue_nominal_quota",
        "kueue_cluster_queue_resource_usage",
        "kueue_cluster_queue_borrowing_limit",
        "kueue_evicted_workloads_total",
    }
    missing = sorted(used - exposed)
    # counters not yet incremented (no eviction, no sync error) have no sample: their family
    # is still declared (# TYPE), which text_string_to_metric_families returns without suffix
    missing = [name for name in missing if name.removesuffix("_total") not in exposed]
    assert missing == []
