"""``gpuplatform/access.py`` builds on the models, never the other way round, and each
permission has one name there."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import AnonymousUser, User

from gpuplatform import access

ROOT = Path(__file__).resolve().parents[2]
IMPORTS_ACCESS = re.compile(r"gpuplatform\.access|from gpuplatform import .*\baccess\b")
IMPORTS_AN_APP = re.compile(r"^\s*(from|import) (queues|accounting|audit|dashboards|demo)\b", re.M)


def model_modules() -> list[Path]:
    models = sorted((ROOT / "queues" / "models").glob("*.py"))
    return [*models, *(ROOT / app / "models.py" for app in ("accounting", "audit", "tokens"))]


def test_no_model_imports_the_access_rules() -> None:
    importing = [
        str(path.relative_to(ROOT))
        for path in model_modules()
        if path.exists() and IMPORTS_ACCESS.search(path.read_text(encoding="utf-8"))
    ]
    assert importing == []


def test_the_roles_import_no_app() -> None:
    assert not IMPORTS_AN_APP.search((ROOT / "gpuplatform" / "roles.py").read_text("utf-8"))


def _user_predicates() -> dict[str, Callable[..., bool]]:
    """access's public ``is_*``/``can_*`` rules that take only the user."""
    return {
        name: rule
        for name, rule in vars(access).items()
        if name.startswith(("is_", "can_"))
        and callable(rule)
        and list(inspect.signature(rule).parameters) == ["user"]
    }


@pytest.mark.django_db
def test_each_permission_has_one_name(
    platform_admin: User,
    finance_user: User,
    team_admin_a: User,
    researcher_a: User,
    outsider: User,
) -> None:
    """No two rules answer alike for every persona: a second name for one permission (say
    ``can_write_catalog`` beside ``is_platform_admin``) fails here."""
    personas = [platform_admin, finance_user, team_admin_a, researcher_a, outsider, AnonymousUser()]
    answers: dict[tuple[bool, ...], list[str]] = {}
    for name, rule in sorted(_user_predicates().items()):
        answers.setdefault(tuple(bool(rule(user)) for user in personas), []).append(name)
    assert len(_user_predicates()) >= 6
    assert [names for names in answers.values() if len(names) > 1] == []
