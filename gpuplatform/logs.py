"""Log lines as text (default) or one JSON object per line (``LOG_FORMAT=json``), each carrying
the scheduling context it was written in: ``cycle_id`` (set by ``queues.services.cycle.run_cycle``
for everything logged during one cycle, its side effects on the clusters included) and ``job_id``
(set around each job's side effect, or passed as ``extra={"job_id": ...}``). Both are ``null``
outside a cycle or a job, so every JSON line has the same keys and log pipelines can index them.

``settings.LOGGING`` installs ``ContextFilter`` on the console handler: it stamps every record,
whatever logger wrote it (the Kubernetes driver, Celery, Django), with the current context.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

_cycle_id: ContextVar[str | None] = ContextVar("log_cycle_id", default=None)
_job_id: ContextVar[str | None] = ContextVar("log_job_id", default=None)

FORMATS = ("text", "json")


@contextmanager
def cycle_context(cycle_id: str) -> Iterator[None]:
    """Everything logged inside carries ``cycle_id``."""
    token = _cycle_id.set(cycle_id)
    try:
        yield
    finally:
        _cycle_id.reset(token)


@contextmanager
def job_context(job_id: object) -> Iterator[None]:
    """Everything logged inside carries ``job_id`` (as text; the platform's job ids are ints)."""
    token = _job_id.set(str(job_id))
    try:
        yield
    finally:
        _job_id.reset(token)


def current_cycle_id() -> str | None:
    return _cycle_id.get()


class ContextFilter(logging.Filter):
    """Sets ``record.cycle_id`` and ``record.job_id`` from the context unless the call passed
    them in ``extra``; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "cycle_id", None) is None:
            record.cycle_id = _cycle_id.get()
        job_id = getattr(record, "job_id", None)
        record.job_id = _job_id.get() if job_id is None else str(job_id)
        return True


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", "cycle_id", "job_id"[, "exception"]}``, one line."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "cycle_id": getattr(record, "cycle_id", None),
            "job_id": getattr(record, "job_id", None),
        }
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return json.dumps(data, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message``, ``[cycle <id> job <id>]`` before the message when set."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(context)s%(message)s")

    def format(self, record: logging.LogRecord) -> str:
        parts = []
        if getattr(record, "cycle_id", None):
            parts.append(f"cycle {record.cycle_id}")
        if getattr(record, "job_id", None):
            parts.append(f"job {record.job_id}")
        record.context = f"[{' '.join(parts)}] " if parts else ""
        return super().format(record)


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """``settings.LOGGING``: everything at ``level`` and above to the console, in ``log_format``."""
    formatter = JsonFormatter if log_format == "json" else TextFormatter
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": ContextFilter}},
        "formatters": {"main": {"()": formatter}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "main",
                "filters": ["context"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
    }
