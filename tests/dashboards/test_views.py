"""Dashboard pages and JSON endpoints: who may open which, what they carry, and a number of
queries that does not grow with the data."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from dashboards.views import DASHBOARDS
from queues.models import Job, Membership, Node, Queue, Team

pytestmark = pytest.mark.django_db

PLATFORM = ["cluster", "quotas", "fairshare", "mig", "health", "charges"]


@pytest.fixture
def world(grow: Callable[[int], None], queue_a: Queue, queue_b: Queue) -> None:
    grow(1)


def login(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("slug", PLATFORM)
@pytest.mark.parametrize("persona", ["platform_admin", "finance_user"])
def test_admins_and_finance_see_every_platform_dashboard(
    client: Client, request: pytest.FixtureRequest, slug: str, persona: str
) -> None:
    user = request.getfixturevalue(persona)
    response = login(client, user).get(reverse("dashboard", args=[slug]))
    assert response.status_code == 200
    assert DASHBOARDS[slug].title in response.text
    payload = response.context["payload"]
    for chart in payload["charts"]:
        assert f'id="plot-{chart["id"]}"' in response.text
        assert chart["table"]["caption"] in response.text  # the table fallback is on the page


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("slug", PLATFORM)
@pytest.mark.parametrize("persona", ["researcher_a", "team_admin_a", "outsider"])
def test_researchers_and_outsiders_cannot_open_platform_dashboards(
    client: Client, request: pytest.FixtureRequest, slug: str, persona: str
) -> None:
    user = request.getfixturevalue(persona)
    login(client, user)
    assert client.get(reverse("dashboard", args=[slug])).status_code == 403
    assert client.get(reverse("dashboard-data", args=[slug])).status_code == 403


def test_anonymous_visitors_are_sent_to_log_in(client: Client) -> None:
    response = client.get(reverse("dashboard", args=["cluster"]))
    assert response.status_code == 302 and reverse("login") in response["Location"]


@pytest.mark.usefixtures("world")
def test_researcher_sees_their_teams_view_and_not_another_team(
    client: Client, researcher_a: User, team_b: Team
) -> None:
    login(client, researcher_a)
    response = client.get(reverse("dashboard", args=["team"]))
    assert response.status_code == 200
    assert "Team view: team-a" in response.text
    other = client.get(reverse("dashboard", args=["team"]), {"team": team_b.pk})
    assert other.status_code == 404
    data = client.get(reverse("dashboard-data", args=["team"]), {"team": team_b.pk})
    assert data.status_code == 404


@pytest.mark.usefixtures("world")
def test_team_view_lists_the_researchers_pending_jobs_with_their_position(
    client: Client,
    researcher_a: User,
    queue_a: Queue,
    make_job: Callable[..., Job],
    cycle: Callable[[datetime], Any],
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a, name="mine")
    login(client, researcher_a)
    table, _costs = client.get(reverse("dashboard", args=["team"])).context["payload"]["tables"]
    mine = [f"#{job.pk} mine (yours)", "team-a/main", researcher_a.username]
    assert [*mine, "not ranked yet", ""] in table["rows"]
    Node.objects.update(schedulable=False)  # every node cordoned: it waits
    cycle(timezone.now())  # and the engine ranks it
    table, _costs = client.get(reverse("dashboard", args=["team"])).context["payload"]["tables"]
    [row] = [row for row in table["rows"] if row[:3] == mine]
    assert row[3] == "1 of 1"
    assert row[4].startswith("#1 in queue team-a/main.")


@pytest.mark.usefixtures("world")
def test_admin_may_open_any_teams_view(client: Client, platform_admin: User, team_b: Team) -> None:
    response = login(client, platform_admin).get(
        reverse("dashboard", args=["team"]), {"team": team_b.pk}
    )
    assert response.status_code == 200 and "Team view: team-b" in response.text


def test_outsider_has_no_dashboards(client: Client, outsider: User) -> None:
    login(client, outsider)
    assert client.get(reverse("dashboards")).status_code == 403
    assert client.get(reverse("dashboard", args=["team"])).status_code == 403


@pytest.mark.usefixtures("world")
def test_index_lists_only_the_dashboards_of_the_role(
    client: Client, platform_admin: User, researcher_a: User
) -> None:
    admin_page = login(client, platform_admin).get(reverse("dashboards")).text
    assert all(reverse("dashboard", args=[slug]) in admin_page for slug in DASHBOARDS)
    client.logout()
    page = login(client, researcher_a).get(reverse("dashboards")).text
    assert reverse("dashboard", args=["team"]) in page
    assert reverse("dashboard", args=["cluster"]) not in page


@pytest.mark.usefixtures("world")
def test_navigation_links_dashboards_for_members_and_not_for_outsiders(
    client: Client, researcher_a: User, outsider: User
) -> None:
    link = f'href="{reverse("dashboards")}"'
    assert link in login(client, researcher_a).get(reverse("home")).text
    client.logout()
    assert link not in login(client, outsider).get(reverse("home")).text


@pytest.mark.usefixtures("world")
def test_json_endpoint_returns_the_figures_and_tables_of_the_page(
    client: Client, platform_admin: User
) -> None:
    response = login(client, platform_admin).get(
        reverse("dashboard-data", args=["cluster"]), {"range": "week"}
    )
    assert response.status_code == 200
    body = response.json()
    usage = next(c for c in body["charts"] if c["id"] == "usage")
    assert usage["figure"]["layout"]["title"]["text"].startswith(
        "GPUs allocated by team, last week (1 h averages)"
    )
    names = [t["name"] for t in usage["figure"]["data"]]
    assert "grown-1" in names and "Capacity" in names and "Failed" in names
    assert len(usage["figure"]["data"][0]["x"]) == 7 * 24
    assert usage["table"]["rows"][0][0] == usage["figure"]["data"][0]["x"][0]
    assert "generated_at" in body


@pytest.mark.usefixtures("world")
def test_json_endpoint_of_charges_has_costs_per_team_and_a_burn_down(
    client: Client, finance_user: User
) -> None:
    body = login(client, finance_user).get(reverse("dashboard-data", args=["charges"])).json()
    charts = {c["id"]: c for c in body["charts"]}
    assert set(charts) == {"team-costs", "flavor-costs", "burn-down"}
    team_costs = {t["name"]: t["y"] for t in charts["team-costs"]["figure"]["data"]}
    assert sum(team_costs["grown-1"]) > 0
    assert charts["burn-down"]["figure"]["data"][0]["name"] == "grown-1 remaining"


@pytest.mark.usefixtures("world")
def test_an_unknown_range_is_a_400_naming_the_parameter(
    client: Client, platform_admin: User
) -> None:
    login(client, platform_admin)
    response = client.get(reverse("dashboard-data", args=["cluster"]), {"range": "year"})
    assert response.status_code == 400
    assert "range" in response.json()["errors"]
    page = client.get(reverse("dashboard", args=["cluster"]), {"range": "year"})
    assert page.status_code == 400 and "range=" in page.text


@pytest.mark.usefixtures("world")
def test_a_team_that_is_not_a_number_is_a_400(client: Client, researcher_a: User) -> None:
    response = login(client, researcher_a).get(
        reverse("dashboard-data", args=["team"]), {"team": "abc"}
    )
    assert response.status_code == 400 and "team" in response.json()["errors"]


def test_an_unknown_dashboard_is_a_404(client: Client, platform_admin: User) -> None:
    assert login(client, platform_admin).get("/dashboards/nope/").status_code == 404


def test_plotly_is_served_locally(client: Client) -> None:
    response = client.get(reverse("plotly-js"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript"
    head = next(iter(response.streaming_content))
    assert b"plotly" in head.lower()


@pytest.mark.usefixtures("world")
def test_pages_load_plotly_from_the_site_not_a_cdn(client: Client, platform_admin: User) -> None:
    text = login(client, platform_admin).get(reverse("dashboard", args=["quotas"])).text
    assert f'<script src="{reverse("plotly-js")}"></script>' in text
    assert "cdn" not in text.lower()


def _queries(client: Client, url: str, params: dict[str, Any]) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params)
    assert response.status_code == 200
    return len(queries)


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("slug", [*PLATFORM, "team"])
def test_pages_and_endpoints_run_a_fixed_number_of_queries(
    client: Client,
    platform_admin: User,
    researcher_a: User,
    team_a: Team,
    grow: Callable[[int], None],
    slug: str,
) -> None:
    Membership.objects.get_or_create(user=platform_admin, team=team_a)
    login(client, platform_admin)
    params = {"range": "week"}
    urls = [reverse("dashboard", args=[slug]), reverse("dashboard-data", args=[slug])]
    before = [_queries(client, url, params) for url in urls]
    grow(4)
    assert [_queries(client, url, params) for url in urls] == before


def test_quotas_dashboard_has_the_cohort_table_and_the_one_meaning_of_share(
    client: Client, platform_admin: User, running_job: Callable[..., Job], queue_a: Queue,
    queue_b: Queue, researcher_a: User, nodes: list[object],
) -> None:  # fmt: skip
    running_job(queue=queue_a, owner=researcher_a, node="n1", workers=1, gpus_per_worker=8)
    running_job(queue=queue_a, owner=researcher_a, node="n1", workers=1, gpus_per_worker=4)
    login(client, platform_admin)
    body = client.get(reverse("dashboard-data", args=["quotas"])).json()
    tables = {t["id"]: t for t in body["tables"]}
    assert tables["cohorts"]["rows"] == [["research", "h100", 16, "team-b/main 4", "team-a/main 4"]]
    fair = {row[0]: row for row in tables["fair-share"]["rows"]}
    assert fair["team-a/main"][2] == "0.25" and fair["team-a/main"][5].startswith("over its share")
    assert "share is the scheduler's own" in tables["fair-share"]["caption"]


def test_fairshare_tree_reads_like_sshare_with_the_engines_share(
    client: Client, platform_admin: User, running_job: Callable[..., Job], queue_a: Queue,
    queue_b: Queue, researcher_a: User, nodes: list[object], settings: Any,
) -> None:  # fmt: skip
    """Team A runs 12 GPUs on a nominal of 8 (4 borrowed from B): the cohort row sums, each
    queue's parts of the cohort, and the share the quotas dashboard shows."""
    settings.FAIRSHARE_HALF_LIFE = 2 * 86400
    running_job(queue=queue_a, owner=researcher_a, node="n1", workers=1, gpus_per_worker=8)
    running_job(queue=queue_a, owner=researcher_a, node="n1", workers=1, gpus_per_worker=4)
    Queue.objects.filter(pk=queue_a.pk).update(decayed_usage=3 * 3600.0)  # 3 GPU-hours
    Queue.objects.filter(pk=queue_b.pk).update(decayed_usage=1 * 3600.0, weight=2.0)
    login(client, platform_admin)
    body = client.get(reverse("dashboard-data", args=["fairshare"])).json()
    table = {t["id"]: t for t in body["tables"]}["share-tree"]
    assert table["rows"] == [
        ["research", "(cohort total)", "", 16.0, "100.0", 4.0, "100.0", "", 12.0, 4.0, 4.0],
        ["research", "team-a/main", 1.0, 8.0, "50.0", 3.0, "75.0", "0.25", 12.0, 4.0, 0.0],
        ["research", "team-b/main", 2.0, 8.0, "50.0", 1.0, "25.0", "0 (within its quota)", 0, 0, 4],
    ]
    quotas = client.get(reverse("dashboard-data", args=["quotas"])).json()
    fair = {row[0]: row for row in {t["id"]: t for t in quotas["tables"]}["fair-share"]["rows"]}
    assert fair["team-a/main"][2] == "0.25"  # the same share on both pages
    assert "halved every 2 days" in table["caption"]
    assert "share is the scheduler's own" in table["caption"]
    page = client.get(reverse("dashboard", args=["fairshare"])).text
    assert "Fair-share tree (sshare)" in page and "team-b/main" in page
    index = client.get(reverse("dashboards")).text
    assert reverse("dashboard", args=["fairshare"]) in index
