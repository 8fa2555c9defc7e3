"""The log lines of a simulated worker: generated, deterministic, following the run's progress.

A worker's log is a pure function of its run (the job id, the run's launch time, the worker's
rank and node) and of how far the run has come in simulated seconds: a start line, one training
step line every `STEP_SECONDS` simulated seconds (step number, a decreasing loss with
deterministic noise, throughput), and an ending: "training finished" for a run that succeeded,
a traceback for worker 0 of a run that failed (the others lose it), a checkpoint on SIGTERM for
a run being stopped. Every line carries the wall-clock time it "appeared" at. Asking again later
gives the same lines plus the new ones; only the asked-for tail is generated.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

STEP_SECONDS = 60.0  # simulated seconds between two step lines
STEPS_PER_LINE = 100  # training steps one line reports
TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/workspace/train.py", line 214, in <module>',
    "    loss.backward()",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
)


def _draw(*parts: object) -> float:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class SimulatedRun:
    """One run of a job's workers on a simulated cluster, as its log needs it."""

    job_id: str
    launched_at: datetime
    speed: float  # simulated seconds per real second
    run_seconds: float  # simulated seconds until the run ends
    fails: bool
    world_size: int
    stopped_after: float | None = None  # simulated seconds from launch to the stop request

    def at(self, simulated_seconds: float) -> str:
        """The wall-clock time of a moment of the run, as a log line's prefix."""
        moment = self.launched_at + timedelta(seconds=simulated_seconds / self.speed)
        return moment.strftime("%Y-%m-%d %H:%M:%S")


def worker_log(run: SimulatedRun, index: int, node: str, elapsed: float, tail: int) -> list[str]:
    """The last `tail` lines of worker `index`'s log, `elapsed` simulated seconds after the
    run's launch."""
    if tail <= 0:
        return []
    ended = elapsed >= run.run_seconds and run.stopped_after is None
    until = min(elapsed, run.run_seconds)
    if run.stopped_after is not None:
        until = min(until, run.stopped_after)
    steps = int(until // STEP_SECONDS)
    ending = _ending(run, index, steps, until) if ended or run.stopped_after is not None else []
    total = 1 + steps + len(ending)
    throughput = 900 + 200 * _draw(run.job_id, run.launched_at.isoformat(), index, "speed")
    lines = []
    for position in range(max(0, total - tail), total):
        if position == 0:
            lines.append(
                f"{run.at(0)} rank {index} of {run.world_size}: job {run.job_id} starting on {node}"
            )
        elif position <= steps:
            lines.append(_step_line(run, index, position, throughput))
        else:
            lines.append(ending[position - steps - 1])
    return lines


def _loss(run: SimulatedRun, index: int, step_line: int) -> float:
    noise = _draw(run.job_id, run.launched_at.isoformat(), index, step_line) - 0.5
    return 0.3 + 2.2 * math.exp(-step_line / 40) + 0.08 * noise


def _step_line(run: SimulatedRun, index: int, step_line: int, throughput: float) -> str:
    return (
        f"{run.at(step_line * STEP_SECONDS)} step {step_line * STEPS_PER_LINE} "
        f"loss {_loss(run, index, step_line):.4f} samples/s {throughput:.0f}"
    )


def _ending(run: SimulatedRun, index: int, steps: int, until: float) -> list[str]:
    stamp = run.at(until)
    if run.stopped_after is not None and run.stopped_after <= run.run_seconds:
        return [f"{stamp} received SIGTERM: saving a checkpoint at step {steps * STEPS_PER_LINE}"]
    if not run.fails:
        loss = _loss(run, index, steps) if steps else _loss(run, index, 0)
        return [f"{stamp} training finished: {steps * STEPS_PER_LINE} steps, final loss {loss:.4f}"]
    if index == 0:
        return [f"{stamp} {line}" for line in TRACEBACK]
    return [f"{stamp} NCCL watchdog: rank 0 stopped answering; waiting to be stopped"]
