"""How good is "estimated start"? The demo's simulated cluster run forward, every job's start
estimated at its submission and compared with when it really started.

    .venv/bin/python benchmarks/estimate_accuracy.py --days 3

Seeds the demo platform (``seed_demo --history 0``: the four teams, their queues and quotas, the
service classes and the simulated cluster ``sim-east``) in a SQLite file of its own
(``var/estimate-bench.sqlite3``, replaced), draws ``--days`` of the demo researchers' work
(``demo.history.draw_history``, seeded) and replays it through the engine's simulator
(``demo.replay.HistorySimulator``: the replay ``seed_demo --history`` runs). At each submission,
before the job joins the queue, it asks the engine what the submit form and ``jobs/estimate/``
ask (``gpusched.engine.estimate.estimate`` on the simulator's snapshot of that instant) and
keeps the answer: start now, borrow, preempt (start after the victims' grace) or wait (with an
estimated start, or none). Researchers' runtime estimates are the demo's (``estimated_runtime``
of each request: not the true runtime), as on the live platform.

Printed, for the jobs that started before the end: the absolute error |estimated - actual start|
(median and p90) in minutes and as a ratio of the job's actual wait, for the jobs that waited
(more than two cycles) and had an estimate; how many waiting jobs had no estimate; how many were
told "start now" (start, borrow) but waited more than two cycles. Beside it, the same numbers
read as Slurm's ``squeue --start`` would show them: an expected start only for pending jobs the
backfill plan reached (else N/A), and none for a job that starts at once.

Goal: median |error| <= 25 % of the actual wait for jobs that waited, and no job shown "start
now" that waited more than two cycles. Nothing here is a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATABASE = ROOT / "var" / "estimate-bench.sqlite3"
GOAL_RATIO = 0.25


def setup_django() -> None:
    DATABASE.parent.mkdir(exist_ok=True)
    DATABASE.unlink(missing_ok=True)
    os.environ["DATABASE_URL"] = f"sqlite:///{DATABASE}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("seed_demo", "--history", "0", verbosity=0)


@dataclass
class Guess:
    """What the engine said at the job's submission."""

    submitted: float
    outcome: str  # start | borrow | preempt | wait
    start: float | None  # the estimated start (None: wait without an estimate)
    reason: str = ""  # the engine's reason code when it said wait


def estimating_simulator(scenario: Any, failure_rate: float) -> Any:
    from demo.replay import HistorySimulator
    from gpusched.engine.estimate import estimate
    from gpusched.engine.state import EngineState

    class EstimatingSimulator(HistorySimulator):  # type: ignore[misc]
        """The demo's replay, asking for an estimate at each submission (reads only)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.guesses: dict[str, Guess] = {}
            self.estimate_seconds = 0.0

        def submit(self, job: Any) -> None:
            t = self.last_t  # advance(t) ran before the submission's event is handled
            began = time.perf_counter()
            said = estimate(self.snapshot(t), job.pending, state=EngineState())
            self.estimate_seconds += time.perf_counter() - began
            self.guesses[job.spec.name] = Guess(t, said.outcome, said.estimated_start, said.reason)
            super().submit(job)

    return EstimatingSimulator(scenario, failure_rate)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=float, default=3.0, help="simulated days of demo work")
    parser.add_argument("--seed", type=int, default=None, help="the draws' seed (demo's)")
    parser.add_argument(
        "--exact-runtimes",
        action="store_true",
        help="give every job its true runtime as its estimate (what the users' estimates cost)",
    )
    args = parser.parse_args(argv)
    setup_django()
    from django.conf import settings

    from demo.history import draw_history, history_start
    from demo.replay import scenario_of, world_of
    from demo.workload import DEMO_SEED
    from queues.services import clock
    from queues.services.snapshot import build_snapshot

    now = datetime(2026, 3, 9, 12, 0, tzinfo=UTC)  # fixed: the same draws every run
    start = history_start(int(args.days) or 1, now)
    start = max(start, now - timedelta(days=args.days))
    requests = draw_history(start, now, DEMO_SEED if args.seed is None else args.seed)
    # the demo's workload on the jobs' own clock, as demo/history.py replays it
    world = world_of(build_snapshot(now).snapshot, clock.class_scale())
    cycle = float(settings.CYCLE_INTERVAL)
    scenario = scenario_of(
        world,
        [(at.timestamp(), request) for at, request in requests],
        start.timestamp(),
        now.timestamp(),
        cycle_interval=cycle,
    )
    if args.exact_runtimes:
        jobs = tuple(dataclasses.replace(j, estimated_runtime=j.duration) for j in scenario.jobs)
        scenario = dataclasses.replace(scenario, jobs=jobs)
    sim = estimating_simulator(scenario, float(settings.SIMULATION_FAILURE_RATE))
    began = time.perf_counter()
    sim.run()
    seconds = time.perf_counter() - began
    print(
        "runtime estimates: "
        + ("exact (--exact-runtimes)" if args.exact_runtimes else "the users'")
    )
    report(sim, cycle, args.days, len(requests), seconds)
    return 0


def report(sim: Any, cycle: float, days: float, submitted: int, seconds: float) -> None:
    slack = 2 * cycle
    started = {n: j.first_start for n, j in sim.jobs.items() if j.first_start is not None}
    waited, told_now_but_waited, no_estimate, errors_min, ratios = [], [], 0, [], []
    early = late = 0
    squeue_errors: list[float] = []
    squeue_na = 0
    for name, guess in sim.guesses.items():
        actual = started.get(name)
        if actual is None:
            continue
        wait = actual - guess.submitted
        if guess.outcome in ("start", "borrow") and wait > slack:
            told_now_but_waited.append(wait)
        if wait <= slack:
            continue
        waited.append(wait)
        if guess.start is None:
            no_estimate += 1
        else:
            error = guess.start - actual
            early += error < 0
            late += error > 0
            errors_min.append(abs(error) / 60)
            ratios.append(abs(error) / wait)
        # squeue --start: pending jobs only, from the backfill plan; a job told to start now
        # would show no pending line at all
        if guess.outcome == "wait":
            if guess.start is None:
                squeue_na += 1
            else:
                squeue_errors.append(abs(guess.start - actual) / 60)
    by_outcome = breakdown(sim.guesses, started, slack)
    missing = Counter(
        g.reason
        for n, g in sim.guesses.items()
        if g.start is None and n in started and started[n] - g.submitted > slack
    )
    never = len(sim.guesses) - len(started)
    estimated = len(errors_min)
    print(f"estimate accuracy: the demo's workload, {days:g} simulated days")
    print(
        f"  {submitted} jobs submitted, {len(started)} started before the end, {never} not "
        f"(left out); replay {seconds:.1f} s, of it estimates {sim.estimate_seconds:.1f} s"
    )
    print(f"  cycle interval {cycle:g} s: 'waited' means more than two cycles ({slack:g} s)")
    print(f"  jobs that waited: {len(waited)}; with an estimate {estimated}, without {no_estimate}")
    if waited:
        print(
            f"  their waits: median {statistics.median(waited) / 60:.1f} min, "
            f"p90 {percentile(waited, 0.9) / 60:.1f} min"
        )
    if estimated:
        median_ratio = statistics.median(ratios)
        print(
            f"  |estimated - actual start|: median {statistics.median(errors_min):.1f} min, "
            f"p90 {percentile(errors_min, 0.9):.1f} min"
        )
        print(
            f"  as a ratio of the actual wait: median {median_ratio:.2f}, "
            f"p90 {percentile(ratios, 0.9):.2f}; too early {early}, too late {late}"
        )
        verdict = (
            "met" if median_ratio <= GOAL_RATIO else f"MISSED by {median_ratio - GOAL_RATIO:.2f}"
        )
        print(f"  goal median ratio <= {GOAL_RATIO:.2f}: {verdict}")
    for outcome, line in by_outcome.items():
        print(f"    said {outcome}: {line}")
    if missing:
        reasons = ", ".join(f"{reason or '?'} {count}" for reason, count in missing.most_common())
        print(f"    no estimate, by the engine's reason: {reasons}")
    print(
        f"  told 'start now' (start or borrow) but waited more than two cycles: "
        f"{len(told_now_but_waited)}"
        + (
            f" (waits: median {statistics.median(told_now_but_waited) / 60:.1f} min, "
            f"max {max(told_now_but_waited) / 60:.1f} min)"
            if told_now_but_waited
            else ""
        )
    )
    print(
        "  as squeue --start would read (pending at submission only): "
        f"{len(squeue_errors)} with an expected start"
        + (
            f" (median |error| {statistics.median(squeue_errors):.1f} min, "
            f"p90 {percentile(squeue_errors, 0.9):.1f} min)"
            if squeue_errors
            else ""
        )
        + f", {squeue_na} N/A"
    )


def breakdown(guesses: dict[str, Guess], started: dict[str, float], slack: float) -> dict[str, str]:
    """Per outcome said at submission: the jobs that waited, and their errors."""
    out = {}
    for outcome in ("start", "borrow", "preempt", "wait"):
        errors, ratios, missing, count = [], [], 0, 0
        for name, guess in guesses.items():
            actual = started.get(name)
            if guess.outcome != outcome or actual is None or actual - guess.submitted <= slack:
                continue
            count += 1
            if guess.start is None:
                missing += 1
                continue
            errors.append(abs(guess.start - actual) / 60)
            ratios.append(abs(guess.start - actual) / (actual - guess.submitted))
        if not count:
            continue
        line = f"{count} waited, {missing} without an estimate"
        if errors:
            line += (
                f"; |error| median {statistics.median(errors):.1f} min, p90 "
                f"{percentile(errors, 0.9):.1f} min; ratio median {statistics.median(ratios):.2f}, "
                f"p90 {percentile(ratios, 0.9):.2f}"
            )
        out[outcome] = line
    return out


if __name__ == "__main__":
    sys.exit(main())
