"""The report's job table and totals, checked against the events replayed by ``checker``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpusched.sim.scenario import JobSpec

EPS = 1e-6


def fmt(value: float) -> str:
    return f"{value:g}"


@dataclass
class JobHistory:
    """What the events did to one job."""

    first_admit: float | None = None
    last_admit: float | None = None
    finished: float | None = None
    cancelled: float | None = None
    failed: float | None = None
    preemptions: int = 0  # reclaim, fair-share and priority preemptions
    requeues: int = 0  # stops that put it back in the queue, for any reason
    admits: list[float] = field(default_factory=list)


def check_job_table(
    jobs: Mapping[str, JobSpec],
    history: Mapping[str, JobHistory],
    preemptions: int,
    report: Mapping[str, Any],
) -> list[str]:
    """The report's ``jobs`` rows and ``summary`` totals against what its events did."""
    rows = report.get("jobs")
    if not isinstance(rows, list):
        return ["report: 'jobs' must be a list"]
    violations: list[str] = []
    seen: set[str] = set()
    states: dict[str, int] = defaultdict(int)
    for row in rows:
        name = row.get("name") if isinstance(row, Mapping) else None
        if not isinstance(name, str) or name not in jobs or name in seen:
            violations.append(f"jobs: unknown or repeated job {name!r}")
            continue
        seen.add(name)
        states[str(row.get("state"))] += 1
        violations += _check_row(jobs[name], history.get(name, JobHistory()), row)
    for missing in sorted(set(jobs) - seen):
        violations.append(f"jobs: job {missing} is missing from the report")
    summary = report.get("summary")
    if isinstance(summary, Mapping):
        expected = {
            "jobs": len(jobs),
            "finished": states["finished"],
            "failed": states["failed"],
            "cancelled": states["cancelled"],
            "preemptions": preemptions,
        }
        for key, value in expected.items():
            if key in summary and summary[key] != value:
                violations.append(
                    f"summary: {key} is {summary[key]!r}, but the events give {value}"
                )
    return violations


def _same(row: Mapping[str, Any], key: str, value: float | None) -> bool:
    got = row.get(key)
    if value is None:
        return got is None
    return isinstance(got, int | float) and not isinstance(got, bool) and abs(got - value) <= EPS


def _check_row(job: JobSpec, history: JobHistory, row: Mapping[str, Any]) -> list[str]:
    where = f"jobs: {job.name}"
    expected: dict[str, float | None] = {
        "started_at": history.first_admit,
        "finished_at": history.finished,
        "submitted_at": job.submit_at,
    }
    # a cancelled or failed job may show the time it ended as its finished_at
    ended = history.cancelled if history.cancelled is not None else history.failed
    if history.finished is None and ended is not None and row.get("finished_at") is not None:
        expected["finished_at"] = ended
    violations = [
        f"{where}: {key} is {row.get(key)!r}, but the events give {value!r}"
        for key, value in expected.items()
        if not _same(row, key, value)
    ]
    if row.get("queue", job.queue) != job.queue:
        violations.append(f"{where}: queue is {row.get('queue')!r}, not {job.queue}")
    if row.get("preemptions", history.preemptions) != history.preemptions:
        violations.append(
            f"{where}: preemptions is {row.get('preemptions')!r}, "
            f"but the events hold {history.preemptions} (reclaim, fair-share, priority)"
        )
    state = row.get("state")
    endings = {"finished": history.finished, "cancelled": history.cancelled,
               "failed": history.failed}  # fmt: skip
    for name, at in endings.items():
        if (state == name) != (at is not None):
            violations.append(
                f"{where}: state is {state!r}, but the events "
                + (f"{name} it at t={fmt(at)}" if at is not None else f"never {name} it")
            )
    return violations
