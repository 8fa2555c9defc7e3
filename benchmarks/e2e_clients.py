"""The client threads of ``live_e2e.py``: they share one list of job bodies and take the next
one until none is left, each timing its own submissions.

- ``rest_clients``: one thread per API token, ``POST /api/v1/jobs/`` over one persistent
  ``http.client`` connection (HTTP/1.1 keep-alive, as gunicorn.conf.py's threaded workers keep
  it; when the server answers ``Connection: close``, as gunicorn's sync workers do, http.client
  opens a new connection for the next one).
- ``service_clients``: ``queues.services.submit_job`` from threads of this process (each with
  its own database connection, closed at the end).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit


class Submissions:
    """The bodies still to submit, and what became of those submitted (thread-safe)."""

    def __init__(self, bodies: list[dict[str, Any]], threads: int) -> None:
        self.bodies = bodies
        self.threads = threads
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.closed_by_server = 0
        self.last_end = 0.0
        self._next = 0
        self._lock = threading.Lock()

    def take(self) -> int | None:
        with self._lock:
            if self._next >= len(self.bodies):
                return None
            self._next += 1
            return self._next - 1

    def done(self, started: float, ended: float, *, closed: bool = False) -> None:
        """A submission answered 201; ``closed``: the server closed the connection after it."""
        with self._lock:
            self.latencies.append(ended - started)
            self.closed_by_server += closed
            self.last_end = max(self.last_end, ended)

    def failed(self, reason: str) -> None:
        with self._lock:
            self.errors.append(reason)


def _post_loop(base: str, token: str, submissions: Submissions) -> None:
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=120)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    try:
        while (index := submissions.take()) is not None:
            payload = json.dumps(submissions.bodies[index]).encode()
            started = time.perf_counter()
            try:
                connection.request("POST", "/api/v1/jobs/", body=payload, headers=headers)
                response = connection.getresponse()
                answer = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                submissions.failed(f"{type(error).__name__}: {error}")
                continue
            ended = time.perf_counter()
            if response.status == 201:
                submissions.done(started, ended, closed=response.will_close)
            else:
                submissions.failed(f"HTTP {response.status}: {answer[:300]!r}")
    finally:
        connection.close()


def rest_clients(base: str, tokens: list[str], submissions: Submissions) -> list[threading.Thread]:
    return [
        threading.Thread(target=_post_loop, args=(base, token, submissions), daemon=True)
        for token in tokens
    ]


def _submit_loop(submissions: Submissions, submit: Any) -> None:
    from django.db import connection

    try:
        while (index := submissions.take()) is not None:
            started = time.perf_counter()
            try:
                submit(submissions.bodies[index])
            except Exception as error:  # counted and shown, the others go on
                submissions.failed(f"{type(error).__name__}: {error}")
            else:
                submissions.done(started, time.perf_counter())
    finally:
        connection.close()


def service_clients(
    user: Any, queues: dict[int, Any], service_class: Any, flavor: Any, submissions: Submissions
) -> list[threading.Thread]:
    from queues.services import submit_job

    def submit(body: dict[str, Any]) -> None:
        submit_job(
            owner=user,
            queue=queues[body["queue"]],
            service_class=service_class,
            name=body["name"],
            image=body["image"],
            flavors=[flavor],
            workers=body["workers"],
            gpus_per_worker=body["gpus_per_worker"],
            duration_hint=body["duration_hint"],
        )

    return [
        threading.Thread(target=_submit_loop, args=(submissions, submit), daemon=True)
        for _ in range(submissions.threads)
    ]
