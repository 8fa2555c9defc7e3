"""One function per command: each reads the API through ``Client`` and returns the text to
print. Failures are ``CliError``s (errors.py)."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any

import yaml

from gpuplatform_cli import output
from gpuplatform_cli.client import Client
from gpuplatform_cli.errors import CliError, Exit

JOB_FIELDS = (
    "queue",
    "service_class",
    "flavors",
    "name",
    "image",
    "command",
    "workers",
    "min_workers",
    "gpus_per_worker",
    "topology_level",
    "topology_mode",
    "estimated_runtime",
    "checkpoint_interval",
    "duration_hint",
    "args",
    "env",
    "volumes",
    "shm_size",
    "cpu",
    "memory",
    "cpu_limit",
    "memory_limit",
    "image_pull_secret",
    "working_dir",
    "tolerations",
    "labels",
    "annotations",
    "host_network",
    "pod_template",
)
"""The keys of a job file: the REST submission body's (POST /api/v1/jobs/), and ``array``
(a job array of that many jobs, as ``--array``). A key outside them is refused here, so a typo
(``gpus_per_workers``) is not silently dropped by the server."""
ARRAY = "array"

PAGE_SIZE = 100


def read_job_file(path: str) -> dict[str, Any]:
    """The job file ('-': standard input) as the REST body; refuses what is not one."""
    name = "standard input" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(Exit.USAGE, f"Cannot read {name}: {error}") from None
    try:
        body = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CliError(Exit.USAGE, f"{name} is not valid YAML: {error}") from None
    if not isinstance(body, dict):
        raise CliError(Exit.USAGE, f"{name} should be a mapping of the job's fields (queue: ...).")
    unknown = [str(key) for key in body if key not in (*JOB_FIELDS, ARRAY)]
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, JOB_FIELDS, n=1)
            hints.append(f"{key} (did you mean {close[0]}?)" if close else key)
        raise CliError(
            Exit.USAGE,
            f"{name}: unknown field {', '.join(hints)}. Fields: {', '.join(JOB_FIELDS)}.",
        )
    return body


def resolve_queue(client: Client, value: Any) -> Any:
    """A queue given as ``team/name`` becomes its id; an id is sent as it is (the server
    checks it)."""
    if not isinstance(value, str) or "/" not in value:
        return value
    team, _, name = value.partition("/")
    queues = client.get("queues/", what=f"queue {value}", team=team, page_size=500).data
    for queue in queues.get("results", []):
        if queue["name"] == name:
            return queue["id"]
    raise CliError(
        Exit.NOT_FOUND, f"No queue {value} among yours (gpuplatform quota lists your queues)."
    )


def submit(client: Client, path: str, estimate: bool = False, array: int | None = None) -> str:
    body = read_job_file(path)
    if array is not None:
        body[ARRAY] = array
    if estimate and ARRAY in body:
        raise CliError(Exit.USAGE, "--estimate says what one job would do: leave out the array.")
    if "queue" in body:
        body["queue"] = resolve_queue(client, body["queue"])
    if estimate:
        answer = client.post("jobs/estimate/", body)
        result = answer.data
        lines = [f"If submitted now: {result['outcome']}. {result['summary']}"]
        lines.append(output.cost(result))
        if result.get("estimated_start"):
            lines.append(
                f"Estimated start: {output.when(result['estimated_start'], answer.server_time)}"
            )
        return "\n".join(lines)
    job = client.post("jobs/", body).data
    if ARRAY in body:
        ids = job["ids"]
        return (
            f"Submitted job array {job['array_id']}: {job['count']} jobs, ids {ids[0]} to "
            f"{ids[-1]}.\nFollow them with: gpuplatform list"
        )
    return (
        f"Submitted job {job['id']} {job['name']} to {job['queue_name']}: {job['state']}.\n"
        f"Follow it with: gpuplatform status {job['id']}"
    )


def list_jobs(client: Client, states: list[str], everyone: bool = False, limit: int = 50) -> str:
    params: dict[str, Any] = {
        "state": states or None,
        "page_size": min(limit, 500),
        "ordering": "-submitted_at",
    }
    if not everyone:
        params["mine"] = "true"
    answer = client.get("jobs/", **params)
    jobs = answer.data["results"][:limit]
    if not jobs:
        return "No jobs."
    text = output.job_rows(jobs, answer.server_time)
    if answer.data["count"] > len(jobs):
        text += f"\n({len(jobs)} of {answer.data['count']}; --limit shows more)"
    return text


def _job(client: Client, job_id: int) -> tuple[dict[str, Any], Any]:
    answer = client.get(f"jobs/{job_id}/", what=f"job {job_id}")
    return answer.data, answer.server_time


def _position(client: Client, job: dict[str, Any]) -> str | None:
    """The job's place in its queue from the queue's status (the last cycle's ranking)."""
    status = client.get(
        f"queues/{job['queue']}/status/", what=f"queue {job['queue_name']}", pending_limit=1000
    ).data
    entry = next((p for p in status["pending"] if p["job_id"] == job["id"]), None)
    return output.position_text(
        entry, status["pending_count"], status["queue"], len(status["pending"])
    )


def status(client: Client, job_id: int) -> str:
    job, now = _job(client, job_id)
    position = _position(client, job) if job["state"] == "pending" else None
    return output.job_status(job, position, now)


def why(client: Client, job_id: int) -> str:
    """Status with the reason spelled out, and the job's latest events (why it was preempted,
    requeued or failed)."""
    job, now = _job(client, job_id)
    position = _position(client, job) if job["state"] == "pending" else None
    history = client.get(f"jobs/{job_id}/events/", what=f"job {job_id}").data
    text = output.job_status(job, position, now, why=True)
    if history:
        text += "\nLatest events:\n" + output.events(history[-5:])
    return text


def cancel(client: Client, job_id: int) -> str:
    job = client.post(f"jobs/{job_id}/cancel/", what=f"job {job_id}").data
    return f"Job {job['id']} {job['name']}: {job['state']}."


def logs(client: Client, job_id: int, worker: int | None, tail: int | None) -> str:
    # GET /api/v1/jobs/{id}/logs/ (built in parallel; see README "Command line")
    answer = client.get(f"jobs/{job_id}/logs/", what=f"job {job_id}", worker=worker, tail=tail)
    return output.logs(answer.data)


def quota(client: Client, team: str | None = None) -> str:
    queues = client.get("queues/", team=team, page_size=500).data["results"]
    if not queues:
        return "No queues" + (f" of team {team}." if team else " (you are in no team).")
    statuses = [
        client.get(
            f"queues/{queue['id']}/status/", what=f"queue {queue['id']}", pending_limit=0
        ).data
        for queue in queues
    ]
    return output.quota(statuses)
