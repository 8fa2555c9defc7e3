"""The chargeback CSV and the per-job CSV read every amount as a number, with Python's csv module
and with LibreOffice (`soffice --headless --convert-to xlsx`, the xlsx's cells read from its
XML) (issue 25). Without LibreOffice the spreadsheet test is skipped, except in CI (CI=...)
where it fails: the machine needs the Debian package libreoffice-calc-nogui."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import zipfile
from decimal import Decimal
from pathlib import Path
from xml.etree import ElementTree

import pytest
from rest_framework.test import APIClient

from accounting.ledger import accrue_usage
from tests.accounting.helpers import T0, at

PERIOD = {"start": "2026-03-01", "end": "2026-05-01"}
AMOUNTS = {
    "chargeback": ("gpu_hours", "gpu_equivalent_hours", "cost"),
    "jobs": ("gpu_hours", "gpu_equivalent_hours", "rate", "multiplier", "effective_rate", "cost"),
    "allocation": ("gpu_hours", "gpu_equivalent_hours", "gpu_cost", "shared_cost", "total_cost"),
}
URLS = {
    "chargeback": "/api/v1/chargeback/",
    "jobs": "/api/v1/accounting/jobs/",
    "allocation": "/api/v1/allocation/",
}
SHEET = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")


@pytest.fixture
def usage(script, queue_a, queue_b, researcher_a, researcher_b, h100_price):
    """a1: 2 GPUs for 2 h 20 min; b1: 3 GPUs across the end of March (thousands of hours would
    not change the point: every amount is a plain decimal number)."""
    a1 = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1").run(at(0))
    accrue_usage(at(1))
    a1.end(at(2 + 1 / 3))
    b1 = script(queue=queue_b, owner=researcher_b, gpus_per_worker=3, name="b1")
    b1.run(T0.replace(day=31, hour=21, minute=7))
    accrue_usage(T0.replace(day=31, hour=23))
    b1.end(T0.replace(month=4, day=1, hour=5, minute=41))
    accrue_usage(T0.replace(month=4, day=1, hour=6))


def download(user, kind: str, **params: str) -> str:
    client = APIClient()
    client.force_authenticate(user)
    query = {**PERIOD, **params, "format": "csv"}
    if kind == "jobs":
        query.pop("group_by", None)  # one row per job and month
    if kind == "allocation":  # OpenCost's parameters
        window = f"{query.pop('start')},{query.pop('end')}"
        query["window"] = ",".join(
            f"{moment}T00:00:00Z" if len(moment) == 10 else moment for moment in window.split(",")
        )
        query["aggregate"] = query.pop("group_by", "team")
        query["step"] = "week"
    response = client.get(URLS[kind], query)
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


@pytest.mark.parametrize("kind", ["chargeback", "jobs"])
def test_pythons_csv_module_reads_every_amount_as_a_number(usage, finance_user, kind):
    table = list(csv.DictReader(io.StringIO(download(finance_user, kind, group_by="team"))))

    assert len(table) >= 3  # rows and the TOTAL line
    for row in table:
        for column in AMOUNTS[kind]:
            if row[column] or row is not table[-1]:
                assert Decimal(row[column]).is_finite(), (column, row[column])
        assert row["currency"] == "USD"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", row["period_start"])


def test_the_per_job_csv_adds_up_to_the_chargeback_to_the_cent_per_team(usage, finance_user):
    """A period that cuts a1 in two (from 10:30) and b1 at the month's end."""
    period = {"start": "2026-03-02T10:30:00Z", "end": "2026-04-01T03:00:00Z"}
    jobs = list(csv.DictReader(io.StringIO(download(finance_user, "jobs", **period))))
    chargeback = csv.DictReader(io.StringIO(download(finance_user, "chargeback", **period)))

    per_team: dict[str, Decimal] = {}
    for row in jobs[:-1]:
        per_team[row["team"]] = per_team.get(row["team"], Decimal(0)) + Decimal(row["cost"])
    expected = {row["team"]: Decimal(row["cost"]) for row in chargeback if row["team"] != "TOTAL"}
    assert per_team == expected
    assert Decimal(jobs[-1]["cost"]) == sum(expected.values())


def column_index(reference: str) -> int:
    """0 for "A7", 25 for "Z7", 26 for "AA7" (empty cells are not written: place by name)."""
    index = 0
    for letter in re.match(r"[A-Z]+", reference)[0]:  # type: ignore[index]
        index = index * 26 + ord(letter) - ord("A") + 1
    return index - 1


def spreadsheet_cells(xlsx: Path) -> list[dict[int, tuple[str, str]]]:
    """Each row's cells by column as (type, text): "n" for a number, "s", "str" or
    "inlineStr" for text."""
    with zipfile.ZipFile(xlsx) as archive:
        strings = []
        if "xl/sharedStrings.xml" in archive.namelist():
            shared = ElementTree.fromstring(archive.read("xl/sharedStrings.xml"))
            strings = ["".join(t.text or "" for t in si.iter(f"{SHEET}t")) for si in shared]
        sheet = ElementTree.fromstring(archive.read("xl/worksheets/sheet1.xml"))
    rows = []
    for row in sheet.iter(f"{SHEET}row"):
        cells = {}
        for cell in row.iter(f"{SHEET}c"):
            kind = cell.get("t", "n")
            value = cell.find(f"{SHEET}v")
            text = value.text if value is not None and value.text else ""
            cells[column_index(cell.get("r", ""))] = (
                kind,
                strings[int(text)] if kind == "s" else text,
            )
        rows.append(cells)
    return rows


@pytest.mark.skipif(
    SOFFICE is None and not os.environ.get("CI"),
    reason="LibreOffice is not installed (Debian: libreoffice-calc-nogui)",
)
@pytest.mark.parametrize("kind", ["chargeback", "jobs", "allocation"])
def test_libreoffice_reads_every_amount_as_a_number(usage, finance_user, kind, tmp_path):
    assert SOFFICE, (
        "LibreOffice (soffice) is required in CI: apt-get install libreoffice-calc-nogui"
    )
    text = download(finance_user, kind, group_by="team,user")
    source = tmp_path / f"{kind}.csv"
    source.write_text(text, encoding="utf-8")

    subprocess.run(
        [
            SOFFICE, "--headless", "--norestore",
            f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}",
            "--convert-to", "xlsx", "--outdir", str(tmp_path), str(source),
        ],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip

    rows = spreadsheet_cells(tmp_path / f"{kind}.xlsx")
    lines = list(csv.reader(io.StringIO(text)))
    header = lines[0]
    assert [rows[0][index][1] for index in range(len(header))] == header
    assert len(rows) == len(lines)
    for cells, line in zip(rows[1:], lines[1:], strict=True):
        for column in AMOUNTS[kind]:
            index = header.index(column)
            if not line[index]:  # the TOTAL line has no rate
                continue
            kind_of, value = cells[index]
            assert kind_of == "n", (column, line[index], kind_of, value)
            assert Decimal(value) == Decimal(line[index]), column
        assert cells[header.index("currency")] == ("s", "USD")
