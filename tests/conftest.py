"""Shared fixtures: the personas of docs/ARCHITECTURE.md "Roles" and a small world around them.

Personas: ``platform_admin``, ``researcher_a`` (member of team A), ``team_admin_a``,
``researcher_b`` (team B), ``finance_user``, ``outsider`` (no team). World: ``team_a``,
``team_b``, ``queue_a``, ``queue_b`` (both in cohort ``cohort``, each with an 8-GPU H100 quota),
``flavor_h100``, ``service_class_std``; ``make_job(...)`` creates a pending job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache

from gpuplatform.access import FINANCE_GROUP, PLATFORM_ADMIN_GROUP
from queues.models import (
    Cluster,
    Cohort,
    Flavor,
    Job,
    Membership,
    Node,
    Queue,
    Quota,
    ServiceClass,
    Team,
)
from queues.services import CycleReport, run_cycle

PASSWORD = "persona-password-123"


def _user(username: str, *groups: str) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """The default cache (a per-process memory cache) holds the submission throttle's and the
    login failures' counts: each test starts with none."""
    cache.clear()


@pytest.fixture(autouse=True)
def catalog_cached(settings: Any) -> None:
    """The submission catalog is kept in the cache as production keeps it in Redis (it is off by
    default without a shared cache); the test process is the only one, so its memory cache is
    shared by everything a test does (queues/models/catalog.py)."""
    settings.CATALOG_CACHE_SECONDS = 300


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    """Password hashing at full strength makes every persona cost ~0.5 s; tests need no strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def persona_password() -> str:
    """The password of every persona fixture (for logging in through the login page)."""
    return PASSWORD


@pytest.fixture
def team_a(db: None) -> Team:
    return Team.objects.create(name="team-a", description="Team A")


@pytest.fixture
def team_b(db: None) -> Team:
    return Team.objects.create(name="team-b", description="Team B")


@pytest.fixture
def cohort(db: None) -> Cohort:
    return Cohort.objects.create(name="research")


@pytest.fixture
def flavor_h100(db: None) -> Flavor:
    return Flavor.objects.create(
        name="h100",
        resource="nvidia.com/gpu",
        gpu_model="NVIDIA-H100-80GB-HBM3",
        gpu_equivalent=1.0,
        node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    )


@pytest.fixture
def service_class_std(db: None) -> ServiceClass:
    return ServiceClass.objects.create(
        name="standard", priority=100, preemptible=True, can_borrow=True
    )


@pytest.fixture
def queue_a(team_a: Team, cohort: Cohort, flavor_h100: Flavor) -> Queue:
    queue = Queue.objects.create(team=team_a, name="main", cohort=cohort)
    Quota.objects.create(queue=queue, flavor=flavor_h100, nominal=8)
    return queue


@pytest.fixture
def queue_b(team_b: Team, cohort: Cohort, flavor_h100: Flavor) -> Queue:
    queue = Queue.objects.create(team=team_b, name="main", cohort=cohort)
    Quota.objects.create(queue=queue, flavor=flavor_h100, nominal=8)
    return queue


@pytest.fixture
def platform_admin(db: None) -> User:
    return _user("pat-admin", PLATFORM_ADMIN_GROUP)


@pytest.fixture
def finance_user(db: None) -> User:
    return _user("fin-finance", FINANCE_GROUP)


@pytest.fixture
def researcher_a(team_a: Team) -> User:
    user = _user("rae-researcher-a")
    Membership.objects.create(user=user, team=team_a, role=Membership.Role.MEMBER)
    return user


@pytest.fixture
def team_admin_a(team_a: Team) -> User:
    user = _user("tad-team-admin-a")
    Membership.objects.create(user=user, team=team_a, role=Membership.Role.TEAM_ADMIN)
    return user


@pytest.fixture
def researcher_b(team_b: Team) -> User:
    user = _user("rob-researcher-b")
    Membership.objects.create(user=user, team=team_b, role=Membership.Role.MEMBER)
    return user


@pytest.fixture
def outsider(db: None) -> User:
    return _user("oscar-outsider")


@pytest.fixture
def make_job(service_class_std: ServiceClass, flavor_h100: Flavor) -> Callable[..., Job]:
    """``make_job(queue=..., owner=..., **fields)``: a saved pending job accepting H100s."""

    def make(*, queue: Queue, owner: User, **fields: Any) -> Job:
        fields.setdefault("name", "train")
        fields.setdefault("image", "pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime")
        fields.setdefault("service_class", service_class_std)
        job = Job.objects.create(queue=queue, owner=owner, **fields)
        job.set_acceptable_flavors([flavor_h100])
        return job

    return make


@pytest.fixture
def sim_cluster(flavor_h100: Flavor) -> Cluster:
    """A simulated cluster with two 8-GPU H100 nodes, ``n1`` (rack r1) and ``n2`` (rack r2)."""
    cluster = Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)
    for i in (1, 2):
        Node.objects.create(
            cluster=cluster,
            name=f"n{i}",
            capacity={"h100": 8},
            labels={"rack": f"r{i}", "kubernetes.io/hostname": f"n{i}"},
        )
    return cluster


@pytest.fixture
def cycle(
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> Callable[[datetime], CycleReport]:
    """``cycle(at)``: one live cycle at ``at``, its after-commit side effects carried out."""

    def run(at: datetime) -> CycleReport:
        with django_capture_on_commit_callbacks(execute=True):
            return run_cycle(now=at)

    return run


# --- Browser (tests marked ``browser``) ---------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, one per test module (skipped without it; in CI, a failure)."""
    from tests.browser import launch_chromium

    with launch_chromium() as chromium:
        yield chromium


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (own cookies), 1280 x 900."""
    from tests.browser import new_page

    with new_page(browser) as fresh:
        yield fresh
