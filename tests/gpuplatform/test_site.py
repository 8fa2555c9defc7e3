"""The site shell: login/logout, the home page, and navigation that shows each role only what
it may use; pages and the admin site refuse everyone else."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Job, Queue

pytestmark = pytest.mark.django_db

RESEARCHER_LINKS = ["Submit", "Jobs", "Queues"]


def nav_labels(client: Client) -> list[str]:
    response = client.get(reverse("home"))
    assert response.status_code == 200
    return [item.label for item in response.context["nav_items"]]


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def test_anonymous_visitor_is_sent_to_the_login_page(client: Client) -> None:
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_has_labelled_fields(client: Client) -> None:
    html = client.get(reverse("login")).content.decode()
    assert '<label for="id_username">Username</label>' in html
    assert '<label for="id_password">Password</label>' in html
    assert '<main id="main">' in html


def test_login_with_the_right_password_lands_on_home(
    client: Client, researcher_a: User, persona_password: str
) -> None:
    response = client.post(
        reverse("login"),
        {"username": researcher_a.username, "password": persona_password},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == reverse("home")
    assert f"Welcome, {researcher_a.username}" in response.content.decode()


def test_login_with_a_wrong_password_is_refused(client: Client, researcher_a: User) -> None:
    response = client.post(
        reverse("login"), {"username": researcher_a.username, "password": "wrong"}
    )
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_logout_ends_the_session(client: Client, researcher_a: User) -> None:
    logged_in(client, researcher_a)
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("home")).status_code == 302


def test_researcher_navigation_shows_submit_jobs_queues(client: Client, researcher_a: User) -> None:
    assert nav_labels(logged_in(client, researcher_a)) == [*RESEARCHER_LINKS, "Dashboards"]


def test_team_admin_navigation_adds_manage_for_membership(
    client: Client, team_admin_a: User
) -> None:
    assert nav_labels(logged_in(client, team_admin_a)) == [
        *RESEARCHER_LINKS,
        "Dashboards",
        "Manage",
    ]


def test_platform_admin_navigation_adds_chargeback_and_admin(
    client: Client, platform_admin: User
) -> None:
    assert nav_labels(logged_in(client, platform_admin)) == [
        *RESEARCHER_LINKS,
        "Chargeback",
        "Dashboards",
        "Manage",
        "Admin",
    ]


def test_finance_navigation_shows_only_chargeback_and_dashboards(
    client: Client, finance_user: User
) -> None:
    assert nav_labels(logged_in(client, finance_user)) == ["Chargeback", "Dashboards"]


def test_outsider_navigation_is_empty(client: Client, outsider: User) -> None:
    logged_in(client, outsider)
    assert nav_labels(client) == []
    assert "not a member of any team" in client.get(reverse("home")).content.decode()


def test_navigation_links_are_rendered_in_a_labelled_nav(
    client: Client, finance_user: User
) -> None:
    html = logged_in(client, finance_user).get(reverse("home")).content.decode()
    assert '<nav aria-label="Main">' in html
    assert f'href="{reverse("chargeback")}"' in html
    assert f'href="{reverse("jobs")}"' not in html
    assert 'href="/admin/"' not in html


@pytest.mark.parametrize("url", ["/admin/", "/admin/queues/job/", "/admin/queues/cluster/add/"])
def test_researcher_gets_403_on_admin_urls(client: Client, researcher_a: User, url: str) -> None:
    assert logged_in(client, researcher_a).get(url).status_code == 403


def test_finance_gets_403_on_admin_urls(client: Client, finance_user: User) -> None:
    assert logged_in(client, finance_user).get("/admin/queues/job/").status_code == 403


def test_anonymous_admin_visit_goes_to_the_site_login(client: Client) -> None:
    response = client.get("/admin/queues/job/", follow=True)
    assert response.redirect_chain[-1][0].startswith(reverse("login"))
    assert response.status_code == 200


def test_platform_admin_uses_the_admin_site(client: Client, platform_admin: User) -> None:
    logged_in(client, platform_admin)
    for url in ["/admin/", "/admin/queues/job/", "/admin/queues/queue/", "/admin/queues/cluster/"]:
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("page", ["submit", "jobs", "queues"])
def test_finance_and_outsider_cannot_open_researcher_pages(
    client: Client, finance_user: User, outsider: User, page: str
) -> None:
    assert logged_in(client, finance_user).get(reverse(page)).status_code == 403
    assert logged_in(Client(), outsider).get(reverse(page)).status_code == 403


def test_researcher_cannot_open_chargeback(client: Client, researcher_a: User) -> None:
    assert logged_in(client, researcher_a).get(reverse("chargeback")).status_code == 403


def test_jobs_page_lists_only_the_teams_jobs(
    client: Client,
    researcher_a: User,
    researcher_b: User,
    make_job: Callable[..., Job],
    queue_a: Queue,
    queue_b: Queue,
) -> None:
    make_job(queue=queue_a, owner=researcher_a, name="vision-train")
    make_job(queue=queue_b, owner=researcher_b, name="llm-train")
    html = logged_in(client, researcher_a).get(reverse("jobs")).content.decode()
    assert "vision-train" in html
    assert "llm-train" not in html


def test_queues_page_shows_the_teams_queue_and_quota(
    client: Client, researcher_a: User, queue_a: Queue, queue_b: Queue
) -> None:
    html = logged_in(client, researcher_a).get(reverse("queues")).content.decode()
    assert "team-a/main" in html
    assert "h100: 0 / 8" in html  # used / nominal
    assert "team-b/main" not in html


def test_stylesheet_is_served_locally(client: Client) -> None:
    html = client.get(reverse("login")).content.decode()
    assert 'href="/static/css/site.css"' in html
    assert 'href="http' not in html and 'src="http' not in html
