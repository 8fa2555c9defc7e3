"""Every page and every API operation, as every role, on its own and other teams' objects
(issue 26): the answer is the one the matrix below says, and a URL or operation the matrix does
not list fails the test, so a new view cannot skip the access rules.

Columns (access_world.ROLES): anonymous, outsider (no team), researcher of team A, team admin
of A, researcher of B, finance, platform admin. Cells are HTTP statuses: 200/201/204 done,
302 to the login page (pages, anonymous), 400 allowed but the (deliberately minimal) body is
refused by validation, 401 not signed in (API), 403 forbidden, 404 hidden (another team's
object, or a page only platform admins know), 405 method not allowed. No answer may hold the
name of a job the role may not see (team A's job to team B, finance or an outsider: the
pending jobs of a queue's status, a dashboard, an estimate). Objects are named in
braces: ``{job_a}`` is team A's job, ``{job_b}`` team B's, ``{token_a}`` researcher A's token.
Writes run in a transaction that is rolled back, so every request sees the same world.

Adding a view or an operation: add its rows (a page: ``"METHOD /url/"``; an operation of the
OpenAPI schema: ``"METHOD /api/v1/path/{id}/ object"``) with the answers the access rules
(gpuplatform/access.py) call for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from http.cookies import SimpleCookie
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from dashboards.views import DASHBOARDS
from queues.views.manage.generic import SECTIONS
from tests.security.access_matrix_rows import API, BODIES, LISTS, PAGES
from tests.security.access_world import JOB_NAMES, ROLES, build_world, clients

pytestmark = pytest.mark.django_db

PLACEHOLDER = re.compile(r"\{(\w+)\}")
SLUG_REGISTRIES: dict[str, set[str]] = {
    "dashboard": set(DASHBOARDS),
    "dashboard-data": set(DASHBOARDS),
    "manage-object-list": set(SECTIONS),
    "manage-object-new": set(SECTIONS),
    "manage-object-edit": set(SECTIONS),
}
"""URL names with a slug: every slug of their registry needs a row."""


# --- what exists: the URLconf and the schema -------------------------------------------------
def url_patterns() -> Iterator[tuple[str, str]]:
    """(route, name) of every URL pattern, admin site and DRF's format suffixes left out (the
    admin site has one rule, tested by its rows; a suffix serves the same view)."""

    def walk(patterns: list[Any], prefix: str, namespace: str) -> Iterator[tuple[str, str]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace or namespace
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                if namespace != "admin" and "format" not in route:
                    yield route, str(pattern.name)

    yield from walk(get_resolver().url_patterns, "", "")


def schema_operations() -> set[tuple[str, str]]:
    schema = Client().get("/api/v1/schema/", {"format": "json"}).json()
    return {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }


def openapi_path(route: str) -> str:
    """``api/v1/^jobs/(?P<pk>[^/.]+)/cancel/$`` -> ``/api/v1/jobs/{id}/cancel/``."""
    path = route.replace("^", "").replace("$", "")
    return "/" + re.sub(r"\(\?P<pk>[^)]*\)", "{id}", path)


def api_row(key: str) -> tuple[str, str, str | None]:
    method, path, *obj = key.split()
    return method, path, obj[0] if obj else None


def uncovered() -> list[str]:
    """Every page, API operation and list of the URLconf and the schema without its rows, and
    every row of an operation the schema does not have."""
    operations = schema_operations()
    in_rows = {api_row(key)[:2] for key in API}
    problems = [f"operation without a row in API: {m} {p}" for m, p in operations - in_rows]
    problems += [f"row of no operation: {m} {p}" for m, p in in_rows - operations]
    collections = {path for method, path in operations if method == "GET" and "{" not in path}
    problems += [f"list without a row in LISTS: {path}" for path in collections - set(LISTS)]
    covered: set[tuple[str, str]] = set()
    for key in PAGES:
        match = resolve(PLACEHOLDER.sub("1", key.split()[1]).split("?")[0])
        covered.add((str(match.url_name), match.kwargs.get("slug", "")))
    api_paths = {path for _, path in operations}
    for route, name in url_patterns():
        if openapi_path(route) in api_paths:
            continue  # an API operation: its rows are in API
        for slug in SLUG_REGISTRIES.get(name, {""}):
            if (name, slug) not in covered:
                label = f"{name} {slug}".strip()
                problems.append(f"page without a row in PAGES: {route} ({label})")
    if not any(key.split()[1] == "/admin/" for key in PAGES):
        problems.append("no row for the admin site")
    return sorted(problems)


def test_the_matrix_covers_every_url_and_every_operation() -> None:
    assert uncovered() == []


def test_a_new_view_or_operation_without_rows_fails_the_matrix(settings: Any) -> None:
    """The guard itself: a page and a viewset added to the URLconf are reported."""
    settings.ROOT_URLCONF = "tests.security.unlisted_urls"
    problems = uncovered()
    assert "page without a row in PAGES: unlisted-report/ (unlisted-report)" in problems
    assert "operation without a row in API: GET /api/v1/unlisted/{id}/" in problems
    assert "list without a row in LISTS: /api/v1/unlisted/" in problems


# --- what each role gets ---------------------------------------------------------------------
HIDDEN_JOBS = {
    role: [name for name, seen_by in JOB_NAMES.items() if role not in seen_by] for role in ROLES
}
"""The world's job names each role must never read anywhere (access_world.JOB_NAMES)."""


def expected(cells: str) -> dict[str, int]:
    codes = cells.split()
    assert len(codes) == len(ROLES), cells
    return {role: int(code) for role, code in zip(ROLES, codes, strict=True)}


def _answer(client: Client, method: str, url: str, body: Any) -> tuple[int, str]:
    """The status and text of one request, whatever it changed rolled back (the session cookie
    too: a sign-out must not sign the role out of the rows after it)."""
    cookies = SimpleCookie(client.cookies)
    with transaction.atomic():
        if method == "GET":
            response = client.get(url)
        elif url.startswith("/api/"):
            response = client.generic(
                method, url, data=_json(body), content_type="application/json"
            )
        else:
            response = getattr(client, method.lower())(url, body or {})
        transaction.set_rollback(True)
    client.cookies = cookies
    streamed = getattr(response, "streaming", False)
    return int(response.status_code), "" if streamed else response.content.decode(errors="replace")


def _json(body: Any) -> str:
    return json.dumps(body if body is not None else {})


@pytest.fixture
def world(
    request: pytest.FixtureRequest, settings: Any, platform_admin: User, finance_user: User,
    researcher_a: User, team_admin_a: User, researcher_b: User, outsider: User,
) -> tuple[dict[str, int], dict[str, Any]]:  # fmt: skip
    settings.JOB_SUBMIT_RATE = "100000/minute"
    users = {
        "outsider": outsider, "researcher_a": researcher_a, "team_admin_a": team_admin_a,
        "researcher_b": researcher_b, "finance": finance_user, "platform_admin": platform_admin,
    }  # fmt: skip
    names = ("queue_a", "queue_b", "sim_cluster", "flavor_h100", "make_job", "service_class_std")
    fixtures = {name: request.getfixturevalue(name) for name in names}
    return build_world(users, fixtures), clients(users)  # type: ignore[arg-type]


def _walk(
    rows: dict[str, str],
    split: Callable[[str], tuple[str, str]],
    ids: dict[str, int],
    by_role: dict[str, Any],
) -> list[str]:
    wrong = []
    for key, cells in rows.items():
        method, url = split(key)
        body = BODIES.get(key)
        body = body(ids) if callable(body) else body
        for role, code in expected(cells).items():
            got, text = _answer(by_role[role], method, url, body)
            if got != code:
                wrong.append(f"{key} as {role}: {got}, the matrix says {code}")
            leaked = [name for name in HIDDEN_JOBS[role] if name in text]
            if leaked:
                wrong.append(f"{key} as {role}: names {leaked}, a job of another team")
    return wrong


def _page(ids: dict[str, int]) -> Callable[[str], tuple[str, str]]:
    def split(key: str) -> tuple[str, str]:
        method, template = key.split()
        return method, template.format(**ids)

    return split


def _operation(ids: dict[str, int]) -> Callable[[str], tuple[str, str]]:
    def split(key: str) -> tuple[str, str]:
        method, path, obj = api_row(key)  # obj: the object of {id}, else the body's label
        return method, path.replace("{id}", str(ids[obj])) if "{id}" in path else path

    return split


def test_every_page_answers_each_role_as_the_matrix_says(
    world: tuple[dict[str, int], dict[str, Any]],
) -> None:
    ids, by_role = world
    assert _walk(PAGES, _page(ids), ids, by_role) == []


def test_every_api_operation_answers_each_role_as_the_matrix_says(
    world: tuple[dict[str, int], dict[str, Any]],
) -> None:
    ids, by_role = world
    assert _walk(API, _operation(ids), ids, by_role) == []


PERIODS = {
    "/api/v1/chargeback/": {"start": "2026-03-01", "end": "2026-04-01"},
    "/api/v1/accounting/jobs/": {"start": "2026-03-01", "end": "2026-04-01"},
    "/api/v1/allocation/": {"window": "2026-03-01T00:00:00Z,2026-04-01T00:00:00Z"},
}
"""The reports (no pagination, unknown parameters refused): the world's month."""


def _listed(client: Client, path: str) -> set[int]:
    query = PERIODS.get(path, {"page_size": 500})
    body = client.get(path, query).json()
    if isinstance(body, dict) and "rows" in body:  # chargeback: a team's name stands for it
        return {row["team"] for row in body["rows"]}  # type: ignore[misc]
    if isinstance(body, dict) and "data" in body:  # allocation: by team by default
        return {item["properties"]["team"] for one in body["data"] for item in one.values()}  # type: ignore[misc]
    rows = body["results"] if isinstance(body, dict) and "results" in body else body
    return {row["id"] for row in rows} if isinstance(rows, list) else set()


def test_every_list_shows_each_role_only_what_the_matrix_says(
    world: tuple[dict[str, int], dict[str, Any]],
) -> None:
    """Lists answer 200 to many roles: what they hold must not cross team lines either. Among
    the world's named objects of the list's kind, each role gets exactly those of its cell
    (``-``: none; names comma-separated)."""
    ids, by_role = world
    names = {**ids, "team-a": "team-a", "team-b": "team-b"}
    wrong = []
    for path, (kinds, cells) in LISTS.items():
        known = {names[kind] for kind in kinds}
        for role, cell in zip(ROLES, cells.split(), strict=True):
            if role == "anonymous":
                continue  # 401 (the API matrix)
            want = set() if cell == "-" else {names[name] for name in cell.split(",")}
            got = _listed(by_role[role], path) & known
            if got != want:
                wrong.append(f"{path} as {role}: {sorted(map(str, got))}, the matrix says {cell}")
    assert wrong == []
