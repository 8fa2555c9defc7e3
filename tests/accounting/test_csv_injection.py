"""CSV exports escape cells a spreadsheet would run as formulas (issue 26): a leading ``=``,
``+``, ``-``, ``@``, tab or carriage return gets a ``'`` in front (gpuplatform/exports.py)."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from accounting.ledger import accrue_usage
from gpuplatform.exports import safe_cell
from queues.models import Membership
from tests.accounting.helpers import at

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-12.50", "-12.50"),
        ("team-a", "team-a"),
        ("", ""),
        (7, 7),
    ],
)
def test_a_cell_that_looks_like_a_formula_is_escaped(value: object, written: object) -> None:
    assert safe_cell(value) == written


def test_the_chargeback_csv_escapes_usernames_that_look_like_formulas(
    script, queue_a, team_a, h100_price, finance_user: User
) -> None:
    for name in ("@SUM(1+1)", "-2+3", "+cmd"):
        owner = User.objects.create_user(username=name, password="x-long-password-1")
        Membership.objects.create(user=owner, team=team_a)
        script(queue=queue_a, owner=owner, name="j").run(at(0))
    accrue_usage(at(2))
    client = APIClient()
    client.force_authenticate(finance_user)
    response = client.get(
        "/api/v1/chargeback/",
        {"start": "2026-03-01", "end": "2026-04-01", "group_by": "user", "format": "csv"},
    )
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    users = sorted(row[0] for row in rows[1:-1])
    assert users == ["'+cmd", "'-2+3", "'@SUM(1+1)"]
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
