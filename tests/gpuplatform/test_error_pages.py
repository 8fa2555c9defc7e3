"""Error pages (issue 24): a 403 and a 404 are site pages that say what happened (not Django's
bare heading or its debug URL list), and a bad dashboard parameter answers an HTML page naming
it, not plain text."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_403_is_a_site_page_that_says_why(client: Client, researcher_a: User) -> None:
    client.force_login(researcher_a)
    response = client.get(reverse("manage-queues"))
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="site-header"' in html and "<h1>Not allowed</h1>" in html
    assert "ask a platform admin for the role" in html


def test_404_is_a_site_page_without_the_url_list(
    client: Client, researcher_a: User, settings: Any
) -> None:
    settings.DEBUG = False
    client.force_login(researcher_a)
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html and 'class="site-header"' in html
    assert "URLconf" not in html


def test_bad_dashboard_parameter_is_an_html_page_naming_it(
    client: Client, platform_admin: User
) -> None:
    client.force_login(platform_admin)
    response = client.get(reverse("dashboard", args=["cluster"]), {"range": "fortnight"})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "<h1>Bad dashboard parameter</h1>" in html
    assert "range=&#x27;fortnight&#x27; is not a range; choose one of" in html
