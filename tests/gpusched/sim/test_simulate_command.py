"""``manage.py simulate`` and ``python -m gpusched.sim.simulate`` (SCENARIOS.md).

Both entry points replay the same scenario to the same report; bad input and unknown policies
fail with a clear message and a non-zero status; the Django command never touches the database.

No test here asks for the ``db`` fixture: pytest-django then refuses every database connection,
so a command that queried anything would fail with "Database access not allowed".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

ROOT = Path(__file__).resolve().parents[3]
BACKFILL_GANG = ROOT / "scenarios" / "backfill-gang.yaml"
TIMING = ("engine_seconds", "cycle_ms")
# a database nothing listens on: any connection attempt by a subprocess fails
UNREACHABLE_DB = "postgres://nobody:nothing@127.0.0.1:9/nodb"

BAD_SCENARIO = """\
name: bad
cycle_interval: 10
flavors:
  - {name: a100, resource: nvidia.com/gpu}
clusters:
  - name: main
    nodes:
      - {name: n1, gpus: {a100: 8}}
service_classes:
  - {name: std, priority: 100}
queues:
  - {name: q, quotas: {a100: {nominal: 8}}}
jobs:
  - {name: fine, queue: q, class: std, submit_at: 0, workers: 1, gpus_per_worker: 1,
     flavor: a100, duration: 10}
  - {name: broken, queue: q, class: std, submit_at: 0, workers: -2, gpus_per_worker: 1,
     flavor: a100, duration: 10}
"""


def _without_timing(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in TIMING}


def _module_cli(*args: str, database_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if database_url is not None:
        env["DATABASE_URL"] = database_url
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=False, env=env
    )


def _starts(report: dict[str, Any]) -> dict[str, float | None]:
    return {j["name"]: j["started_at"] for j in report["jobs"]}


@pytest.fixture
def bad_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "negative-workers.yaml"
    path.write_text(BAD_SCENARIO)
    return path


def test_the_database_is_off_limits_in_this_module() -> None:
    """The guard the other tests rely on: without the db fixture a connection attempt fails."""
    with pytest.raises(RuntimeError, match="Database access not allowed"):
        connections["default"].ensure_connection()


def test_django_command_and_module_cli_give_the_same_fifo_report(tmp_path: Path) -> None:
    by_django = tmp_path / "django.json"
    by_module = tmp_path / "module.json"
    stdout = StringIO()
    call_command(
        "simulate", str(BACKFILL_GANG), output=str(by_django), policy="fifo", stdout=stdout
    )
    assert stdout.getvalue() == ""  # the report went to the file, not stdout
    done = _module_cli(
        "-m",
        "gpusched.sim.simulate",
        str(BACKFILL_GANG),
        "--output",
        str(by_module),
        "--policy",
        "fifo",
    )
    assert done.returncode == 0, done.stderr
    django_report = json.loads(by_django.read_text())
    module_report = json.loads(by_module.read_text())

    for report in (django_report, module_report):
        assert report["scenario"] == "backfill-gang"
        assert report["policy"] == "fifo"
    assert _without_timing(django_report["summary"]) == _without_timing(module_report["summary"])
    assert django_report["jobs"] == module_report["jobs"]
    assert django_report["events"] == module_report["events"]
    assert django_report["queues"] == module_report["queues"]


def test_fifo_report_matches_the_scenario_readme(tmp_path: Path) -> None:
    """scenarios/README.md: `running` starts at 0 and `gang` at 1000 when it ends; with
    ``--policy fifo`` nothing is backfilled, so `short` and `long` both start at 1500."""
    out = tmp_path / "report.json"
    call_command("simulate", str(BACKFILL_GANG), output=str(out), policy="fifo")
    report = json.loads(out.read_text())
    assert _starts(report) == {"running": 0, "gang": 1000, "short": 1500, "long": 1500}
    assert {j["state"] for j in report["jobs"]} == {"finished"}
    summary = report["summary"]
    assert (summary["jobs"], summary["finished"], summary["never_started"]) == (4, 4, 0)
    assert summary["preemptions"] == 0
    assert summary["makespan"] == 3500  # `long` runs 2000 s from 1500
    assert not [e for e in report["events"] if e["type"] in ("reserve", "preempt")]


def test_default_policy_backfills_where_fifo_does_not(tmp_path: Path) -> None:
    """The same file under the default policy (README): `short` backfills at 2, `long` is held
    back to 1500 by the gang's reservation at 1000."""
    out = tmp_path / "report.json"
    call_command("simulate", str(BACKFILL_GANG), output=str(out))
    report = json.loads(out.read_text())
    assert report["policy"] == "default"
    assert _starts(report) == {"running": 0, "gang": 1000, "short": 2, "long": 1500}
    reserves = [e for e in report["events"] if e["type"] == "reserve"]
    assert reserves and reserves[0]["job"] == "gang" and reserves[0]["start"] == 1000


def test_django_command_without_output_prints_the_report_to_stdout() -> None:
    stdout = StringIO()
    call_command("simulate", str(BACKFILL_GANG), policy="fifo", stdout=stdout)
    report = json.loads(stdout.getvalue())
    assert _starts(report)["short"] == 1500


def test_django_command_runs_as_a_real_process_with_no_reachable_database(
    tmp_path: Path,
) -> None:
    """``manage.py simulate`` succeeds although the configured database refuses every
    connection: it never opens one."""
    out = tmp_path / "report.json"
    done = _module_cli(
        "manage.py",
        "simulate",
        str(BACKFILL_GANG),
        "--output",
        str(out),
        "--policy",
        "fifo",
        database_url=UNREACHABLE_DB,
    )
    assert done.returncode == 0, done.stderr
    assert _starts(json.loads(out.read_text()))["long"] == 1500


def test_unreachable_database_does_break_a_command_that_uses_it() -> None:
    """Control for the test above: the same settings make a querying command fail."""
    done = _module_cli(
        "manage.py",
        "shell",
        "-c",
        "from django.contrib.auth.models import User; User.objects.count()",
        database_url=UNREACHABLE_DB,
    )
    assert done.returncode != 0


def _assert_names_file_entry_and_field(message: str, path: Path) -> None:
    assert str(path) in message  # the file
    assert "jobs[1]" in message and "broken" in message  # the entry
    assert "'workers'" in message  # the field
    assert "-2" in message  # what was wrong


def test_bad_scenario_via_django_command_fails_naming_file_entry_and_field(
    bad_scenario: Path, tmp_path: Path
) -> None:
    out = tmp_path / "never.json"
    stderr = StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("simulate", str(bad_scenario), output=str(out), stderr=stderr)
    assert failure.value.returncode != 0
    _assert_names_file_entry_and_field(stderr.getvalue(), bad_scenario)
    assert not out.exists()  # nothing simulated, no report


def test_bad_scenario_via_module_cli_exits_non_zero_naming_file_entry_and_field(
    bad_scenario: Path, tmp_path: Path
) -> None:
    out = tmp_path / "never.json"
    done = _module_cli("-m", "gpusched.sim.simulate", str(bad_scenario), "--output", str(out))
    assert done.returncode != 0
    _assert_names_file_entry_and_field(done.stderr, bad_scenario)
    assert done.stdout == ""
    assert not out.exists()


def test_bad_scenario_via_manage_py_exits_non_zero(bad_scenario: Path) -> None:
    done = _module_cli("manage.py", "simulate", str(bad_scenario), database_url=UNREACHABLE_DB)
    assert done.returncode != 0
    _assert_names_file_entry_and_field(done.stderr, bad_scenario)
    assert done.stdout == ""


def test_unknown_policy_via_django_command_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    stderr = StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("simulate", str(BACKFILL_GANG), output=str(out), policy="sjf", stderr=stderr)
    assert failure.value.returncode != 0
    message = stderr.getvalue()
    assert "unknown policy 'sjf'" in message
    for known in ("default", "fifo", "greedy"):
        assert known in message  # says what would have worked
    assert not out.exists()


def test_unknown_policy_via_module_cli_exits_non_zero() -> None:
    done = _module_cli("-m", "gpusched.sim.simulate", str(BACKFILL_GANG), "--policy", "sjf")
    assert done.returncode != 0
    assert "unknown policy 'sjf'" in done.stderr
    assert "fifo" in done.stderr
    assert done.stdout == ""
