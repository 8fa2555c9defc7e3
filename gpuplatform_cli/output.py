"""What the commands print: plain text, one fact a line, times in UTC (as on the site), each
estimated start also "in N min" from the server's clock (the answer's Date header)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


def when(value: str | None, now: datetime | None = None) -> str:
    """``2026-05-04 12:10 UTC (in 25 min)``; '-' for none."""
    if not value:
        return "-"
    moment = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    text = moment.strftime("%Y-%m-%d %H:%M UTC")
    if now is not None:
        minutes = round((moment - now).total_seconds() / 60)
        if minutes > 0:
            text += f" (in {_duration(minutes)})"
        elif minutes < 0:
            text += f" ({_duration(-minutes)} ago)"
    return text


def _duration(minutes: int) -> str:
    if minutes < 120:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    return f"{hours // 24} d {hours % 24} h"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [
        ["-" if c in (None, "") else str(c) for c in row] for row in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def size(job: dict[str, Any]) -> str:
    flavors = ",".join(job.get("flavors") or [])
    return f"{job['workers']}x{job['gpus_per_worker']} {flavors}".strip()


def job_rows(jobs: Sequence[dict[str, Any]], now: datetime | None) -> str:
    return table(
        ["ID", "NAME", "QUEUE", "STATE", "GPUS", "SUBMITTED", "ESTIMATED START"],
        [
            [
                job["id"],
                job["name"],
                job["queue_name"],
                job["state"],
                size(job),
                when(job["submitted_at"]),
                when(job.get("estimated_start"), now) if job.get("estimated_start") else "",
            ]
            for job in jobs
        ],
    )


def position_text(entry: dict[str, Any] | None, pending_count: int, queue: str, listed: int) -> str:
    if entry is None and listed < pending_count:
        return f"beyond the first {listed} of {pending_count} pending in {queue}"
    if entry is None or entry.get("position") is None:
        return f"not ranked yet (the next cycle ranks it); {pending_count} pending in {queue}"
    return f"{entry['position']} of {pending_count} pending in {queue}"


def job_status(
    job: dict[str, Any], position: str | None, now: datetime | None, *, why: bool = False
) -> str:
    lines = [
        f"Job {job['id']} {job['name']}  queue {job['queue_name']}  owner {job['owner']}  "
        f"class {job['service_class']}",
        f"State:            {job['state']}",
        f"Size:             {size(job)}",
        f"Submitted:        {when(job['submitted_at'], now)}",
    ]
    if job["state"] == "pending":
        if position is not None:
            lines.append(f"Position:         {position}")
        reason = job.get("pending_reason") or ""
        message = job.get("pending_message") or "no cycle has looked at it yet"
        lines.append(f"Why pending:      {message}" + (f" [{reason}]" if reason else ""))
        lines.append(f"Estimated start:  {when(job.get('estimated_start'), now)}")
        if why and not job.get("estimated_start"):
            lines.append(
                "                  (no estimate: nothing that runs now ends in time to make room, "
                "the runtimes are not known, or the running jobs it waits for have run past "
                "their estimated runtimes: see why pending)"
            )
    else:
        if job.get("started_at"):
            lines.append(f"Started:          {when(job['started_at'], now)}")
        if job.get("finished_at"):
            lines.append(f"Finished:         {when(job['finished_at'], now)}")
        if job.get("cluster"):
            nodes = ", ".join(
                f"{node} ({count})" for node, count in (job.get("placement") or {}).items()
            )
            lines.append(
                f"Cluster:          {job['cluster']}" + (f"  nodes {nodes}" if nodes else "")
            )
        if job.get("preemption_count"):
            lines.append(f"Preempted:        {job['preemption_count']} time(s)")
    return "\n".join(lines)


def events(items: Sequence[dict[str, Any]]) -> str:
    return "\n".join(
        f"  {when(event['at'])}  {event['kind']:<12} {event['message']}" for event in items
    )


def quota(statuses: Sequence[dict[str, Any]]) -> str:
    rows = []
    for status in statuses:
        for flavor in status["flavors"]:
            rows.append(
                [
                    status["queue"],
                    flavor["flavor"],
                    flavor["nominal"],
                    flavor["used"],
                    flavor["borrowed"],
                    flavor["lent"],
                    f"{status.get('share', 0.0):.2f}",
                    status["pending_count"],
                ]
            )
    text = table(
        ["QUEUE", "GPU TYPE", "NOMINAL", "USED", "BORROWED", "LENT", "SHARE", "PENDING"], rows
    )
    return (
        text
        + "\n\nSHARE is the scheduler's: GPUs used above nominal over the cohort's pool and the "
        "queue's weight (0: within quota; the highest share is preempted first)."
    )


def logs(answer: dict[str, Any]) -> str:
    """The logs endpoint's answer: a header per worker (pod, node, phase, restarts, why), then
    its lines."""
    out = [f"Job {answer.get('job')} on cluster {answer.get('cluster') or '-'}"]
    if answer.get("detail"):
        out.append(str(answer["detail"]))
    for worker in answer.get("workers") or []:
        header = (
            f"== worker {worker.get('index')}  pod {worker.get('pod') or '-'}  "
            f"node {worker.get('node') or '-'}  {worker.get('phase') or 'unknown'}"
        )
        if worker.get("restarts"):
            header += f"  restarts {worker['restarts']}"
        out.append(header + " ==")
        why = " ".join(part for part in (worker.get("reason"), worker.get("message")) if part)
        if why:
            out.append(f"({why})")
        lines = worker.get("lines") or []
        out.extend(lines if lines else ["(no output)"])
    if not answer.get("workers"):
        out.append("(no workers: the job is not running on a cluster)")
    return "\n".join(out)


def cost(estimate: dict[str, Any]) -> str:
    """The estimate's price: the rate and the projected cost of the estimated runtime."""
    if estimate.get("rate_per_hour") is None:
        return "Cost: no price is set for this GPU type."
    text = f"Cost: {estimate['rate_per_hour']} {estimate['currency']} an hour"
    if estimate.get("projected_cost") is None:
        return text + " (give estimated_runtime for the projected cost)."
    return (
        text + f"; {estimate['projected_cost']} {estimate['currency']} for the estimated runtime."
    )
