"""Job events have one home: ``JobEvent.Kind`` names the kinds, ``queues.services.events``
builds every event (kind, sentence, data); nothing else makes one up."""

from __future__ import annotations

import re
from pathlib import Path

from queues.models import JobEvent
from queues.services import events

ROOT = Path(__file__).resolve().parents[3]
APPS = ("queues", "demo", "accounting", "dashboards", "audit", "gpuplatform")
HOME = ROOT / "queues" / "services" / "events.py"

KIND_LITERAL = "|".join(re.escape(kind) for kind in JobEvent.Kind.values)
MADE_UP = [
    re.compile(r"(?<!class )\bJobEvent\("),  # an event built by hand
    re.compile(r"\bJobEvent\.objects\.(create|get_or_create|update_or_create)\("),
    re.compile(rf"""\bkind(__in)?\s*(=|==|!=)\s*["']({KIND_LITERAL})["']"""),  # a kind spelled out
    re.compile(rf"""\.kind\s+(==|!=)\s*["']({KIND_LITERAL})["']"""),
]


def test_every_kind_has_a_builder() -> None:
    assert set(events.BUILDERS) == set(JobEvent.Kind)
    for names in events.BUILDERS.values():
        assert all(callable(getattr(events, name)) for name in names)


def test_the_stored_kinds_are_unchanged() -> None:
    assert JobEvent.Kind.values == [
        "submitted",
        "pending",
        "admitted",
        "started",
        "scaled",
        "preempted",
        "requeued",
        "succeeded",
        "failed",
        "cancelled",
        "workload",  # a kubectl-applied object taken in, unsuspended, suspended, restored
    ]


def test_no_event_is_built_outside_the_events_module() -> None:
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if path == HOME or "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if any(pattern.search(line) for pattern in MADE_UP):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_an_event_row_is_what_was_said() -> None:
    said = events.scaled(before=4, workers=2, by="owner (#7)", reason="reclaim")
    row = said.row(12, JobEvent._meta.get_field("at").default())
    assert (row.job_id, row.kind, row.message, row.data) == (
        12,
        "scaled",
        "Shrunk from 4 to 2 workers for owner (#7) (reclaim).",
        {"workers": 2},
    )
