"""JSON logs (issue 20): with LOG_FORMAT=json each line is one JSON object, and every line a
scheduling cycle writes (its decisions, its side effects, the Kubernetes driver's calls) carries
the cycle's id; every line about a job carries the job's id."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuplatform.logs import ContextFilter, JsonFormatter, TextFormatter, job_context
from queues.models import Cluster, Node
from tests.queues.clusters.k8s_emulator import TOKEN, EmulatedCluster
from tests.queues.services.helpers import T0, later

REPO = Path(__file__).resolve().parents[3]
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "rack": "r1"}


@pytest.fixture
def json_lines() -> Iterator[Callable[[], list[dict]]]:
    """``read()``: the JSON lines the root logger wrote so far in the test (INFO and above)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@pytest.fixture
def api() -> Iterator[EmulatedCluster]:
    emulated = EmulatedCluster()
    try:
        emulated.add_node("gpu-a", {"nvidia.com/gpu": "8"}, H100)
        emulated.add_node("gpu-b", {"nvidia.com/gpu": "8"}, H100)
        yield emulated
    finally:
        emulated.close()


def test_every_line_of_a_cycle_has_its_cycle_id_and_job_lines_their_job_id(
    world, api, submit, cycle, request
) -> None:
    Node.objects.filter(cluster=world.cluster).delete()
    Cluster.objects.filter(pk=world.cluster.pk).update(
        driver=Cluster.Driver.KUBERNETES, api_url=api.url, token=TOKEN, verify_tls=False
    )
    cycle(T0)  # reads the nodes
    first = submit(gpus=8, name="one", at=later(1))
    second = submit(gpus=4, workers=2, name="two", at=later(1))
    read = request.getfixturevalue("json_lines")
    report = cycle(later(2))
    check(read(), report.cycle_id, {first.pk, second.pk})


def check(lines: list[dict], cycle_id: str, job_ids: set[int]) -> None:
    assert lines, "the cycle wrote no log line"
    assert {tuple(sorted(line)) for line in lines} == {
        ("cycle_id", "job_id", "level", "logger", "message", "time")
    }
    scheduling = [line for line in lines if line["logger"].startswith("queues.")]
    assert scheduling
    assert all(line["cycle_id"] == cycle_id for line in scheduling), scheduling
    decided = [line for line in scheduling if line["logger"] == "queues.services.events"]
    assert {int(line["job_id"]) for line in decided} == job_ids  # both admitted
    launched = [line for line in lines if line["message"].startswith("launched job")]
    assert launched and all(line["job_id"] is not None for line in launched)
    assert all(line["logger"] == "queues.clusters.kubernetes" for line in launched)
    for line in scheduling:  # a line that names a job carries its id
        for job_id in job_ids:
            if f"job {job_id}" in line["message"] or f"#{job_id}" in line["message"]:
                assert line["job_id"] == str(job_id), line
    summary = [line for line in scheduling if "cycle run" in line["message"]]
    assert len(summary) == 1 and summary[0]["job_id"] is None


def test_text_lines_show_the_context_too() -> None:
    record = logging.LogRecord("queues.x", logging.INFO, __file__, 1, "stopped", None, None)
    with job_context(42):
        ContextFilter().filter(record)
    assert TextFormatter().format(record).endswith("queues.x: [job 42] stopped")


def test_log_format_json_configures_the_console_and_a_bad_one_stops_start_up() -> None:
    script = (
        "import django, logging; django.setup()\n"
        "from gpuplatform.logs import cycle_context\n"
        "with cycle_context('c0ffee'):\n"
        "    logging.getLogger('queues.services.cycle').info('hello %s', 'there')\n"
    )
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "gpuplatform.settings", "LOG_FORMAT": "json"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello there" and line["cycle_id"] == "c0ffee"
    assert line["level"] == "INFO" and line["job_id"] is None

    bad = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env=env | {"LOG_FORMAT": "xml"},
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0
    assert "LOG_FORMAT='xml' is not a log format: use text or json." in bad.stderr
