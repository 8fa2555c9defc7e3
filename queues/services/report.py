"""What one live cycle did, in lines an operator can read (``manage.py run_cycle`` prints them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class CycleReport:
    now: datetime
    ran: bool = True  # False: another worker held the lease, nothing was done
    lines: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    pending: int = 0
    degraded: list[str] = field(default_factory=list)
    duration_seconds: float = 0.0
    cycle_run_id: int | None = None  # the CycleRun row that records it
    cycle_id: str = ""  # in every log line of the cycle (gpuplatform/logs.py)

    def add(self, kind: str, text: str) -> None:
        """Count one ``kind`` of decision or observation and keep its line."""
        self.counts[kind] += 1
        self.lines.append(f"{kind}: {text}")

    def summary(self) -> str:
        if not self.ran:
            return "skipped: another worker holds the scheduling lease"
        parts = [f"{kind} {n}" for kind, n in sorted(self.counts.items())]
        parts.append(f"pending {self.pending}")
        if self.degraded:
            parts.append(f"degraded clusters: {', '.join(self.degraded)}")
        return f"cycle at {self.now:%Y-%m-%d %H:%M:%S} UTC: " + ", ".join(parts)
