"""A simulated worker's log: the same run read twice gives the same lines, a later read the
same lines plus new ones, and the run's end shows (finished, a traceback, a checkpoint)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from queues.clusters.simulated_logs import STEP_SECONDS, TRACEBACK, SimulatedRun, worker_log

RUN = SimulatedRun(
    job_id="42",
    launched_at=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
    speed=60.0,
    run_seconds=3600.0,
    fails=False,
    world_size=2,
)


def test_the_same_moment_gives_the_same_lines() -> None:
    assert worker_log(RUN, 0, "n1", 600.0, 100) == worker_log(RUN, 0, "n1", 600.0, 100)


def test_lines_follow_the_runs_progress() -> None:
    early = worker_log(RUN, 0, "n1", 600.0, 5000)
    later = worker_log(RUN, 0, "n1", 1800.0, 5000)
    assert early[0] == "2026-03-02 09:00:00 rank 0 of 2: job 42 starting on n1"
    assert len(early) == 1 + 600 // STEP_SECONDS and len(later) == 1 + 1800 // STEP_SECONDS
    assert later[: len(early)] == early  # nothing written is ever rewritten
    assert early[-1].startswith("2026-03-02 09:00:10 step 1000 loss ")  # 600 s at 60x: 10 s
    first_loss = float(early[1].split("loss ")[1].split()[0])
    last_loss = float(later[-1].split("loss ")[1].split()[0])
    assert last_loss < first_loss  # training makes progress


def test_the_tail_is_the_end_of_the_whole_log() -> None:
    whole = worker_log(RUN, 1, "n2", 1800.0, 5000)
    assert worker_log(RUN, 1, "n2", 1800.0, 3) == whole[-3:]
    assert worker_log(RUN, 1, "n2", 1800.0, 0) == []


def test_workers_and_runs_differ() -> None:
    rank0 = worker_log(RUN, 0, "n1", 600.0, 5)
    rank1 = worker_log(RUN, 1, "n1", 600.0, 5)
    rerun = worker_log(
        replace(RUN, launched_at=datetime(2026, 3, 3, tzinfo=UTC)), 0, "n1", 600.0, 5
    )
    assert rank0 != rank1
    assert [line[20:] for line in rank0] != [line[20:] for line in rerun]


def test_a_finished_run_says_so_and_writes_no_more() -> None:
    done = worker_log(RUN, 0, "n1", 3600.0, 5000)
    assert "training finished: 6000 steps, final loss " in done[-1]
    assert worker_log(RUN, 0, "n1", 99_999.0, 5000) == done


def test_a_failed_run_ends_with_a_traceback_on_worker_0() -> None:
    failed = replace(RUN, fails=True, run_seconds=900.0)
    lines = worker_log(failed, 0, "n1", 5000.0, 5000)
    assert [line[20:] for line in lines[-len(TRACEBACK) :]] == list(TRACEBACK)
    assert "RuntimeError: CUDA error" in lines[-1]
    assert "rank 0 stopped answering" in worker_log(failed, 1, "n2", 5000.0, 1)[0]


def test_a_stopped_run_checkpoints_at_the_stop() -> None:
    stopped = replace(RUN, stopped_after=1230.0)
    lines = worker_log(stopped, 0, "n1", 2000.0, 5000)
    assert lines[-1] == ("2026-03-02 09:00:20 received SIGTERM: saving a checkpoint at step 2000")
    assert len(lines) == 1 + 20 + 1
