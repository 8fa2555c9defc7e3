"""The cohort tree on the quotas and fair-share dashboards and on the queue pages
(docs/SCHEDULING.md section 2a, docs/DASHBOARDS.md): numbers per node from the engine."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from gpusched.engine.model import Cohort as EngineCohort
from gpusched.engine.model import Queue as EngineQueue
from gpusched.engine.model import Quota as EngineQuota
from gpusched.engine.quota import QuotaState, QuotaStatics
from queues.models import Queue
from queues.services.queue_status import queue_status

EM = "\u2003"


def _engine_state() -> QuotaState:
    """The same set-up straight in the engine, for the cohorts' capacity and usage."""
    queues = [
        EngineQueue("team-a/main", quotas={"h100": EngineQuota(8)}, cohort="research"),
        EngineQueue("team-b/main", quotas={"h100": EngineQuota(8)}, cohort="research"),
        EngineQueue("team-b/bio", quotas={"h100": EngineQuota(6)}, cohort="biology"),
    ]
    cohorts = [
        EngineCohort("org"),
        EngineCohort("biology", parent="org"),
        EngineCohort("research", parent="org", quotas={"h100": EngineQuota(0, 4, 2)}),
    ]
    usage = {("team-a/main", "h100"): 12, ("team-b/bio", "h100"): 8}
    return QuotaState(queues, usage, QuotaStatics(queues, cohorts))


@pytest.mark.usefixtures("three_levels")
@pytest.mark.parametrize("slug", ["quotas", "fairshare"])
def test_the_tree_shows_every_level_with_the_engines_numbers(
    client: Client, platform_admin: User, slug: str
) -> None:
    client.force_login(platform_admin)
    body = client.get(reverse("dashboard-data", args=[slug])).json()
    table = {t["id"]: t for t in body["tables"]}["cohort-tree"]
    # Node, kind, under, GPU type, nominal, used, borrowed, lent, held
    assert table["rows"] == [
        ["org", "root cohort", "(top)", "h100", 8, 8, 0, 0, 20],
        [EM + "biology", "cohort, level 2", "org", "h100", 6, 8, 2, 0, 8],
        [EM * 2 + "team-b/bio", "queue", "org / biology", "h100", 6, 8, 2, 0, 8],
        [EM + "research", "cohort, level 2", "org", "h100", 16, 12, 0, 2, 12],
        [EM * 2 + "team-a/main", "queue", "org / research", "h100", 8, 12, 4, 0, 12],
        [EM * 2 + "team-b/main", "queue", "org / research", "h100", 8, 0, 0, 6, 0],
    ]
    engine = _engine_state()
    by_node = {row[0].strip(EM): row for row in table["rows"]}
    for name in ("org", "biology", "research"):
        assert by_node[name][4] == engine.tree.cohort_limits(name, "h100").nominal
        assert by_node[name][5] == engine.pool_used[(name, "h100")]
    page = client.get(reverse("dashboard", args=[slug])).text
    assert 'data-table-id="cohort-tree"' in page


@pytest.mark.usefixtures("three_levels")
def test_a_queue_page_counts_what_its_cohort_lends_up_the_tree(
    client: Client, platform_admin: User, queue_b: Queue
) -> None:
    """team-b/main's idle 8 lend 4 to team-a/main in its cohort and, through research, 2 to
    biology: lent 6 (read as a flat cohort it was 4)."""
    status = queue_status(queue_b)
    assert [(f.flavor, f.used, f.borrowed, f.lent) for f in status.flavors] == [("h100", 0, 0, 6)]
    assert status.cohort_parents == ("org",)
    client.force_login(platform_admin)
    page = client.get(reverse("queue-detail", args=[queue_b.pk])).text
    assert "under <strong>org</strong>" in page
    api = client.get(f"/api/v1/queues/{queue_b.pk}/status/").json()
    assert api["cohort_parents"] == ["org"] and api["flavors"][0]["lent"] == 6
