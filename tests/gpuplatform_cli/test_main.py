"""The CLI against a live server (pytest-django's live_server, a real API token): submit from a
YAML file (one job or an array), list, status, why, logs, cancel and quota, and what it says for
each HTTP error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from accounting.models import FlavorPrice
from gpuplatform_cli.errors import Exit
from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from queues.services import run_cycle, submit_job
from queues.services.queue_status import queue_status

pytestmark = pytest.mark.django_db(transaction=True)

Run = Callable[..., tuple[int, str, str]]

JOB_YAML = """\
queue: team-a/main
service_class: standard
flavors: [h100]
name: {name}
image: pytorch/pytorch:2.4.0
command: [python, train.py, --epochs, "3"]
workers: 1
gpus_per_worker: {gpus}
estimated_runtime: 1800
"""


def job_file(tmp_path: Path, name: str = "cli-train", gpus: int = 4, text: str = "") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text or JOB_YAML.format(name=name, gpus=gpus))
    return str(path)


@pytest.fixture
def busy_queue(
    team_admin_a: User, queue_a: Queue, queue_b: Queue, sim_cluster: Cluster,
    flavor_h100: Flavor, service_class_std: ServiceClass,
) -> Job:  # fmt: skip
    """A teammate's 2 x 8 job runs on all 16 GPUs (team A's 8 and 8 borrowed from team B)."""
    job = submit_job(
        owner=team_admin_a, queue=queue_a, service_class=service_class_std, name="big",
        image="pytorch/pytorch:2.4.0", flavors=[flavor_h100], workers=2, gpus_per_worker=8,
        estimated_runtime=3600,
    )  # fmt: skip
    now = timezone.now()
    run_cycle(now=now)
    run_cycle(now=now + timedelta(seconds=1))
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING
    return job


def test_submit_list_status_why_and_cancel_a_waiting_job(
    cli: Run, tmp_path: Path, busy_queue: Job, researcher_a: User
) -> None:
    code, out, err = cli("submit", job_file(tmp_path))
    assert (code, err) == (0, "")
    job = Job.objects.get(name="cli-train")
    assert out.startswith(f"Submitted job {job.pk} cli-train to team-a/main: pending.")
    assert job.owner == researcher_a and job.gpus_per_worker == 4
    assert job.command == ["python", "train.py", "--epochs", "3"]
    assert job.estimated_runtime == 1800

    code, out, _ = cli("list")  # own jobs only: the teammate's running job is not listed
    assert code == 0
    assert "cli-train" in out and "big" not in out
    _, out, _ = cli("list", "--all", "--state", "running")
    assert "big" in out and "cli-train" not in out

    code, out, _ = cli("status", str(job.pk))
    assert code == 0
    assert "State:            pending" in out
    assert "not ranked yet" in out  # no cycle has seen it

    run_cycle(now=timezone.now())
    job.runtime.refresh_from_db()
    code, out, _ = cli("status", str(job.pk))
    assert "Position:         1 of 1 pending in team-a/main" in out
    assert job.runtime.pending_message and job.runtime.pending_message in out
    assert job.runtime.estimated_start is not None
    assert job.runtime.estimated_start.strftime("%Y-%m-%d %H:%M UTC") in out

    code, out, _ = cli("why", str(job.pk))
    assert code == 0
    assert f"Why pending:      {job.runtime.pending_message} [{job.runtime.pending_reason}]" in out
    assert "Latest events:" in out and "submitted" in out

    code, out, _ = cli("cancel", str(job.pk))
    assert (code, out) == (0, f"Job {job.pk} cli-train: cancelled.\n")
    job.refresh_from_db()
    assert job.state == Job.State.CANCELLED
    code, _, err = cli("cancel", str(job.pk))
    assert code == Exit.REFUSED and "Conflict (409)" in err


def test_quota_shows_nominal_used_borrowed_and_the_engines_share(
    cli: Run, busy_queue: Job, queue_a: Queue
) -> None:
    code, out, _ = cli("quota")
    assert code == 0
    row = next(line.split() for line in out.splitlines() if line.startswith("team-a/main"))
    share = queue_status(queue_a, pending_limit=0).share
    assert share > 0
    assert row == ["team-a/main", "h100", "8", "16", "8", "0", f"{share:.2f}", "0"]
    assert "team-b/main" not in out  # another team's queue


def test_estimate_submits_nothing_and_says_the_cost(
    cli: Run, tmp_path: Path, busy_queue: Job, flavor_h100: Flavor
) -> None:
    code, out, _ = cli("submit", "--estimate", job_file(tmp_path))
    assert code == 0 and out.startswith("If submitted now: wait.")
    assert "Cost: no price is set for this GPU type." in out
    assert not Job.objects.filter(name="cli-train").exists()
    FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("4.00"),
        effective_from=datetime(2020, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    _, out, _ = cli("submit", "--estimate", job_file(tmp_path))
    # 4 GPUs x 4.00; 1800 s on the simulated cluster at 60x: 30 wall seconds
    assert "Cost: 16.00 USD an hour; 0.13 USD for the estimated runtime." in out


def test_refused_fields_are_listed_and_nothing_is_submitted(
    cli: Run, tmp_path: Path, queue_a: Queue, sim_cluster: Cluster, service_class_std: Any
) -> None:
    text = JOB_YAML.format(name="Bad_Name", gpus=4).replace("[h100]", "[h100, nosuch]")
    code, out, err = cli("submit", job_file(tmp_path, text=text))
    assert code == Exit.REFUSED and out == ""
    assert err.startswith("gpuplatform: The server refused the request:\n")
    assert "  flavors: " in err and "nosuch" in err
    assert not Job.objects.exists()
    code, _, err = cli("submit", job_file(tmp_path, text=JOB_YAML.format(name="ok", gpus=0)))
    assert code == Exit.REFUSED and "  gpus_per_worker: " in err


def test_a_typo_in_the_job_file_is_refused_before_sending(
    cli: Run, tmp_path: Path, queue_a: Queue
) -> None:
    text = JOB_YAML.format(name="typo", gpus=4).replace("gpus_per_worker", "gpus_per_workers")
    code, _, err = cli("submit", job_file(tmp_path, text=text))
    assert code == Exit.USAGE
    assert "unknown field gpus_per_workers (did you mean gpus_per_worker?)" in err
    code, _, err = cli("submit", job_file(tmp_path, text="- just\n- a list\n"))
    assert code == Exit.USAGE and "should be a mapping" in err
    code, _, err = cli("submit", job_file(tmp_path, text="queue: [unclosed\n"))
    assert code == Exit.USAGE and "is not valid YAML" in err


def test_another_teams_job_is_not_found_and_a_bad_token_is_refused(
    cli: Run, cli_env: dict[str, str], make_job: Callable[..., Job], queue_b: Queue,
    researcher_b: User,
) -> None:  # fmt: skip
    theirs = make_job(queue=queue_b, owner=researcher_b)
    code, _, err = cli("status", str(theirs.pk))
    assert code == Exit.NOT_FOUND
    assert f"job {theirs.pk} does not exist or belongs to a team you are not in" in err
    code, _, err = cli("cancel", str(theirs.pk))
    assert code == Exit.NOT_FOUND
    theirs.refresh_from_db()
    assert theirs.state == Job.State.PENDING

    code, _, err = cli("list", env={**cli_env, "GPUPLATFORM_TOKEN": "gpp_000000000000_nope"})
    assert code == Exit.DENIED and "refused the token (401" in err


def test_finance_may_not_submit(
    cli: Run, cli_env: dict[str, str], tmp_path: Path, finance_user: User, queue_a: Queue
) -> None:
    from tests.gpuplatform_cli.conftest import token_for

    env = {**cli_env, "GPUPLATFORM_TOKEN": token_for(finance_user)}
    code, _, err = cli("submit", job_file(tmp_path), env=env)
    assert code == Exit.DENIED and err.startswith("gpuplatform: Not allowed (403): ")


def test_too_many_submissions_say_when_to_retry(
    cli: Run, tmp_path: Path, settings: Any, queue_a: Queue, sim_cluster: Cluster,
    service_class_std: ServiceClass,
) -> None:  # fmt: skip
    settings.JOB_SUBMIT_RATE = "1/hour"
    assert cli("submit", job_file(tmp_path, name="one"))[0] == 0
    code, _, err = cli("submit", job_file(tmp_path, name="two"))
    assert code == Exit.RATE_LIMITED
    assert "Too many requests (429)" in err and "Try again in" in err
    assert not Job.objects.filter(name="two").exists()


def test_the_console_script_in_a_subprocess(
    cli_env: dict[str, str], tmp_path: Path, queue_a: Queue, sim_cluster: Cluster,
    service_class_std: ServiceClass,
) -> None:  # fmt: skip
    """``gpuplatform`` as pip installs it: pyproject's [project.scripts] entry, run the way the
    generated script runs it (import the function, exit with its result), in a fresh process."""
    command = console_script_command()
    env = {**os.environ, **cli_env, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*command, "submit", job_file(tmp_path, name="from-shell")],
        env=env, capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    job = Job.objects.get(name="from-shell")
    assert done.stdout.startswith(f"Submitted job {job.pk} from-shell")
    done = subprocess.run(
        [*command, "status", "999999"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == Exit.NOT_FOUND and "job 999999 does not exist" in done.stderr


ROOT = Path(__file__).resolve().parents[2]


def console_script_command() -> list[str]:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["gpuplatform"].partition(":")
    installed = shutil.which("gpuplatform", path=str(Path(sys.executable).parent))
    if installed and _installed_entry_point() == scripts["gpuplatform"]:
        return [installed]  # the package is installed with this entry point: its script
    return [
        sys.executable,
        "-c",
        f"import sys; from {module} import {function}; sys.exit({function}())",
    ]


def _installed_entry_point() -> str | None:
    from importlib.metadata import entry_points

    found = [ep.value for ep in entry_points(group="console_scripts") if ep.name == "gpuplatform"]
    return found[0] if found else None


def test_the_job_file_fields_are_the_rest_bodys() -> None:
    from gpuplatform_cli.commands import JOB_FIELDS
    from queues.api.job_serializers import JobSubmitSerializer

    assert set(JOB_FIELDS) == set(JobSubmitSerializer().fields)


@pytest.mark.usefixtures("queue_a", "sim_cluster", "flavor_h100", "service_class_std")
def test_submit_an_array_creates_its_jobs_all_at_once(cli: Run, tmp_path: Path) -> None:
    code, out, err = cli("submit", "--array", "3", job_file(tmp_path, name="sweep", gpus=1))

    assert (code, err) == (0, "")
    jobs = list(Job.objects.filter(name="sweep").order_by("array_index"))
    assert [(job.array_id, job.array_index) for job in jobs] == [
        (jobs[0].pk, 0), (jobs[0].pk, 1), (jobs[0].pk, 2)
    ]  # fmt: skip
    assert out.startswith(
        f"Submitted job array {jobs[0].pk}: 3 jobs, ids {jobs[0].pk} to {jobs[2].pk}."
    )


def test_logs_of_a_running_job_show_each_worker_and_its_last_lines(
    cli: Run, busy_queue: Job
) -> None:
    code, out, err = cli("logs", str(busy_queue.pk), "--tail", "3")

    assert (code, err) == (0, "")
    assert out.startswith(f"Job {busy_queue.pk} on cluster ")
    headers = [line for line in out.splitlines() if line.startswith("== worker")]
    assert [h.split()[2] for h in headers] == ["0", "1"]
    assert all("running" in header for header in headers)
    body = out.split(headers[0])[1].split(headers[1])[0].strip().splitlines()
    assert 1 <= len(body) <= 3  # the last 3 lines of worker 0's log

    code, out, _ = cli("logs", str(busy_queue.pk), "--worker", "1", "--tail", "2")
    assert code == 0
    assert [line.split()[2] for line in out.splitlines() if line.startswith("== worker")] == ["1"]
