"""The Celery wiring: beat schedules the cycle task every CYCLE_INTERVAL, and a real worker
process receives tasks through the configured broker (filesystem by default, Redis in CI)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from gpuplatform.celery import app
from queues.models import CycleRun
from queues.tasks import run_scheduling_cycle

REPO = Path(__file__).resolve().parents[2]
CYCLE_TASK = "queues.tasks.run_scheduling_cycle"


def test_beat_schedule_runs_the_cycle_task_every_cycle_interval() -> None:
    entries = [e for e in app.conf.beat_schedule.values() if e["task"] == CYCLE_TASK]
    assert len(entries) == 1
    assert entries[0]["schedule"] == timedelta(seconds=settings.CYCLE_INTERVAL)


def test_cycle_interval_comes_from_the_environment() -> None:
    env = {**os.environ, "CYCLE_INTERVAL": "25", "PYTHONPATH": str(REPO)}
    code = (
        "from gpuplatform.celery import app; "
        "entry = app.conf.beat_schedule['scheduling-cycle']; "
        "print(entry['task'], entry['schedule'].total_seconds())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [CYCLE_TASK, "25.0"]


def test_cycle_task_is_registered_with_the_app() -> None:
    app.loader.import_default_modules()
    assert CYCLE_TASK in app.tasks


@pytest.mark.django_db
def test_cycle_task_runs_a_cycle_records_its_run_and_logs_a_tick(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="queues.tasks"):
        run_id = run_scheduling_cycle.apply().get()
    run = CycleRun.objects.get(pk=run_id)
    assert run.outcome.startswith("cycle at ")
    assert run.finished_at is not None and run.finished_at >= run.started_at
    assert "scheduling cycle tick" in caplog.text


def database_url_of_test_database() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}{port}/{db['NAME']}"


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_real_worker_process_executes_a_task_sent_through_the_broker(tmp_path: Path) -> None:
    queue = f"test-{uuid.uuid4().hex[:12]}"  # a queue of its own: no other worker takes the task
    env = {**os.environ, "PYTHONPATH": str(REPO), "DATABASE_URL": database_url_of_test_database()}
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "gpuplatform", "worker",
                "--queues", queue, "--pool", "solo", "--loglevel", "INFO",
                "--without-gossip", "--without-mingle", "--without-heartbeat",
                "--hostname", f"{queue}@%h",
            ],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        run_scheduling_cycle.apply_async(queue=queue)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not CycleRun.objects.exists():
            assert worker.poll() is None, f"worker exited:\n{log_path.read_text()}"
            time.sleep(0.5)
        run = CycleRun.objects.first()
        assert run is not None, f"no task executed in 90 s; worker log:\n{log_path.read_text()}"
        assert run.worker.startswith(queue)  # executed by our worker process, not in-process
        assert run.outcome.startswith("cycle at ")
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    assert "scheduling cycle tick" in log_path.read_text()


def test_filesystem_broker_keeps_every_folder_under_var_dir() -> None:
    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("REDIS_URL is set: the filesystem broker is not in use")
    folders = {
        key: Path(value)
        for key, value in settings.CELERY_BROKER_TRANSPORT_OPTIONS.items()
        if key.endswith("_folder") or key.startswith("data_folder")
    }
    assert set(folders) == {
        "data_folder_in",
        "data_folder_out",
        "processed_folder",
        "control_folder",
    }
    for folder in folders.values():
        assert folder.is_relative_to(settings.VAR_DIR)
        assert folder.is_dir()


def _filesystem_queue(folder: Path) -> Any:
    from kombu import Connection
    from kombu.transport.virtual import BrokerState

    from gpuplatform import broker

    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(folder / "processed"),
        "store_processed": True,
        "control_folder": str(folder / "control"),
    }
    (folder / "processed").mkdir()
    (folder / "control").mkdir()
    # kombu keeps declared exchanges on the transport class: a class of its own per test
    transport = type("Transport", (broker.Transport,), {"global_state": BrokerState()})
    conn = Connection("filesystem://localhost/", transport=transport, transport_options=options)
    return conn, conn.SimpleQueue("work")


def test_filesystem_broker_writes_each_message_whole(tmp_path: Path) -> None:
    """The producer renames a finished file into the folder; no partial file is left behind."""
    conn, queue = _filesystem_queue(tmp_path)
    with conn:
        queue.put({"task": "cycle"})
        files = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
        assert len(files) == 1 and files[0].endswith(".work.msg")
        assert queue.get(timeout=5).payload == {"task": "cycle"}


def test_a_consumer_polling_while_a_message_is_written_does_not_take_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kombu's own transport creates the message file before writing it: a worker polling in
    between took the empty file and died on the JSON ("Unrecoverable error"). Here a consumer
    polls at exactly that moment, while the payload is being serialised."""
    from queue import Empty

    from gpuplatform import broker

    conn, queue = _filesystem_queue(tmp_path)
    real_dumps = broker.dumps
    polled: list[str] = []

    def dumps_while_a_consumer_polls(payload: Any) -> str:
        try:
            queue.get(block=False)
            polled.append("took a message")
        except Empty:
            polled.append("nothing yet")
        return str(real_dumps(payload))

    with conn:
        monkeypatch.setattr(broker, "dumps", dumps_while_a_consumer_polls)
        queue.put({"task": "cycle"})
        monkeypatch.setattr(broker, "dumps", real_dumps)
        assert polled == ["nothing yet"]
        assert queue.get(timeout=5).payload == {"task": "cycle"}


def test_the_filesystem_broker_uses_the_atomic_transport() -> None:
    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("REDIS_URL is set: the filesystem broker is not in use")
    with app.connection_for_write() as conn:
        assert type(conn.transport).__module__ == "gpuplatform.broker"
